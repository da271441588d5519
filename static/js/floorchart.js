// The factory floor: one row per seat on the bus, a mark for every seat that
// rode in each of your steps (server clock, ms since Enter); your own seat in
// colour. Other requests stay anonymous: a seat is just a number, freed when
// its request ends.

import { LiveChart, axis, Plotly } from "./livechart.js";

const OTHERS = 0, YOU = 1;

class FloorChart extends LiveChart {
  reset() {
    this.pending = [];
    this.draw();
  }

  traces(t) {
    const marks = (name, color) => ({ type: "scatter", mode: "markers", name, x: [], y: [],
      hovertemplate: "seat %{y} at %{x:.0f} ms<extra></extra>", marker: { symbol: "line-ns-open", size: 10, color } });
    return [marks("other requests", t.muted), marks("you", t.type)];
  }

  layout(t) {
    return { height: 190, xaxis: this.timeAxis(t), yaxis: axis(t, "seat", { dtick: 1 }) };
  }

  colours(t) {
    return { "marker.color": [t.muted, t.type] };
  }

  // One of your steps at `ms`, shared by the requests in `seats`; yours is `seat`.
  step(ms, seats, seat) {
    this.pending.push([ms, seats, seat]);
    this.schedule();
  }

  flush() {
    if (!this.pending.length) return;
    const others = { x: [], y: [] }, you = { x: [], y: [] };
    for (const [ms, seats, seat] of this.pending) {
      for (const s of seats) {
        const lane = s === seat ? you : others;
        lane.x.push(ms);
        lane.y.push(s);
      }
    }
    this.pending = [];
    Plotly.extendTraces(this.el, { x: [others.x, you.x], y: [others.y, you.y] }, [OTHERS, YOU]);
  }
}

export { FloorChart };

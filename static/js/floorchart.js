// The factory floor: one row per seat on the bus, a mark for every seat that
// rode in each of your steps (server clock, ms since Enter); your own seat in
// colour. Other requests stay anonymous: a seat is just a number, freed when
// its request ends.

import { throttledToFrames } from "./frame.js";
import { theme, baseLayout, PLOT_CONFIG, onSchemeChange } from "./theme.js";

const { Plotly } = window;
const OTHERS = 0, YOU = 1;

class FloorChart {
  constructor(el) {
    this.el = el;
    this.schedule = throttledToFrames(() => this.flush());
    this.reset();
    onSchemeChange(() => this.applyTheme());
  }

  reset() {
    this.pending = [];
    const t = theme();
    const marks = (name, color) => ({ type: "scatter", mode: "markers", name, x: [], y: [],
      hovertemplate: "seat %{y} at %{x:.0f} ms<extra></extra>", marker: { symbol: "line-ns-open", size: 10, color } });
    Plotly.react(this.el, [marks("other requests", t.muted), marks("you", t.type)], {
      ...baseLayout(t),
      height: 190,
      xaxis: { title: { text: "ms since Enter" }, rangemode: "tozero", gridcolor: t.grid, zeroline: false },
      yaxis: { title: { text: "seat" }, rangemode: "tozero", dtick: 1, gridcolor: t.grid, zeroline: false },
    }, PLOT_CONFIG);
  }

  applyTheme() {
    const t = theme();
    Plotly.update(this.el, { "marker.color": [t.muted, t.type] },
      { "font.color": t.fg, "xaxis.gridcolor": t.grid, "yaxis.gridcolor": t.grid });
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

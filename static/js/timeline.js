// The animated timeline: x in ms since Enter. Row "server": waiting in line,
// the chop mark, the prefill bar (growing as the Reader works) and one tick
// per decode step on the server's clock. Row "browser": one tick per token
// as it arrived here. The distance between the two rows is the network.
// A line on the right axis counts the requests that shared each step: the bus.

import { onNextFrame } from "./frame.js";
import { LiveChart, Plotly } from "./livechart.js";

const WAIT = 0, READ = 1, CHOP = 2, SERVER = 3, BROWSER = 4, BUS = 5;

class Timeline extends LiveChart {
  reset() {
    this.pending = { server: [], browser: [] };
    this.draw();
  }

  traces(t) {
    const ticks = (name, color) => ({ type: "scatter", mode: "markers", name, x: [], y: [], hovertext: [],
      hoverinfo: "text", marker: { symbol: "line-ns-open", size: 16, color, line: { width: 2 } } });
    return [
      { type: "bar", orientation: "h", name: "waiting in line", x: [], y: [], base: [], marker: { color: t.wait },
        hovertemplate: "waited %{x:.1f} ms<extra></extra>" },
      { type: "bar", orientation: "h", name: "read (prefill)", x: [], y: [], base: [], hovertext: [],
        hoverinfo: "text", marker: { color: t.read } },
      { type: "scatter", mode: "markers", name: "chop", x: [], y: [], hovertext: [], hoverinfo: "text",
        marker: { symbol: "diamond", size: 11, color: t.chop } },
      ticks("type (decode), server clock", t.type),
      ticks("delivered, browser clock", t.deliver),
      { type: "scatter", mode: "lines", name: "requests sharing the step (the bus)", x: [], y: [], hovertext: [],
        yaxis: "y2", line: { shape: "hv", color: t.muted, width: 1.5 },
        hovertemplate: "%{y} on the bus<extra></extra>" },
    ];
  }

  layout(t) {
    return {
      height: 230,
      barmode: "overlay",
      xaxis: this.timeAxis(t),
      yaxis: { type: "category", categoryorder: "array", categoryarray: ["browser", "server"],
               range: [-0.5, 1.5], fixedrange: true, gridcolor: t.grid },
      yaxis2: { overlaying: "y", side: "right", rangemode: "tozero", fixedrange: true, showgrid: false,
                title: { text: "on the bus" }, dtick: 1 },
    };
  }

  colours(t) {
    return { "marker.color": [t.wait, t.read, t.chop, t.type, t.deliver, t.muted] };
  }

  restyle(index, update) {
    Plotly.restyle(this.el, update, [index]);
  }

  waited(ms) {
    this.restyle(WAIT, { y: [["server"]], x: [[ms]], base: [[0]] });
  }

  chopped(ms, tokens) {
    this.restyle(CHOP, { y: [["server"]], x: [[ms]], hovertext: [[`chop: ${tokens} tokens, done at ${ms.toFixed(2)} ms`]] });
  }

  // The prefill bar from `start` to `now` (ms), `fraction` of the prompt read.
  reading(start, now, fraction, done = false) {
    const label = done ? `read: ${(now - start).toFixed(1)} ms` : `reading… ${Math.round(fraction * 100)} % of the prompt`;
    onNextFrame(() => this.restyle(READ, { y: [["server"]], base: [[start]], x: [[now - start]], hovertext: [[label]] }));
  }

  // One token: its decode tick (server ms), its arrival tick (browser ms,
  // null when unknown: a replay without the sharer's times) and how many
  // requests shared its step.
  token(serverMs, browserMs, serverLabel, browserLabel, batch) {
    this.pending.server.push([serverMs, serverLabel, batch]);
    if (browserMs !== null) this.pending.browser.push([browserMs, browserLabel]);
    this.schedule();
  }

  flush() {
    const { server, browser } = this.pending;
    if (!server.length) return;
    const col = (rows, k) => rows.map((r) => r[k]);
    Plotly.extendTraces(this.el, {
      x: [col(server, 0), col(browser, 0), col(server, 0)],
      y: [server.map(() => "server"), browser.map(() => "browser"), col(server, 2)],
      hovertext: [col(server, 1), col(browser, 1), col(server, 1)],
    }, [SERVER, BROWSER, BUS]);
    this.pending = { server: [], browser: [] };
  }
}

export { Timeline };

// The animated timeline: x in ms since Enter. Row "server": waiting in line,
// the chop mark, the prefill bar (growing as the Reader works) and one tick
// per decode step on the server's clock. Row "browser": one tick per token
// as it arrived here. The distance between the two rows is the network.

import { onNextFrame, throttledToFrames } from "./frame.js";
import { theme, baseLayout, PLOT_CONFIG, onSchemeChange } from "./theme.js";

const { Plotly } = window;
const WAIT = 0, READ = 1, CHOP = 2, SERVER = 3, BROWSER = 4;

class Timeline {
  constructor(el) {
    this.el = el;
    this.scheduleTokens = throttledToFrames(() => this.flushTokens());
    this.reset();
    onSchemeChange(() => this.applyTheme());
  }

  reset() {
    this.pending = { server: [], browser: [] };
    const t = theme();
    const ticks = (name, color) => ({ type: "scatter", mode: "markers", name, x: [], y: [], hovertext: [],
      hoverinfo: "text", marker: { symbol: "line-ns-open", size: 16, color, line: { width: 2 } } });
    const traces = [
      { type: "bar", orientation: "h", name: "waiting in line", x: [], y: [], base: [], marker: { color: t.wait },
        hovertemplate: "waited %{x:.1f} ms<extra></extra>" },
      { type: "bar", orientation: "h", name: "read (prefill)", x: [], y: [], base: [], hovertext: [],
        hoverinfo: "text", marker: { color: t.read } },
      { type: "scatter", mode: "markers", name: "chop", x: [], y: [], hovertext: [], hoverinfo: "text",
        marker: { symbol: "diamond", size: 11, color: t.chop } },
      ticks("type (decode), server clock", t.type),
      ticks("delivered, browser clock", t.deliver),
    ];
    const layout = {
      ...baseLayout(t),
      height: 230,
      barmode: "overlay",
      xaxis: { title: { text: "ms since Enter" }, rangemode: "tozero", gridcolor: t.grid, zeroline: false },
      yaxis: { type: "category", categoryorder: "array", categoryarray: ["browser", "server"],
               range: [-0.5, 1.5], fixedrange: true, gridcolor: t.grid },
    };
    Plotly.react(this.el, traces, layout, PLOT_CONFIG);
  }

  applyTheme() {
    const t = theme();
    Plotly.update(this.el, { "marker.color": [t.wait, t.read, t.chop, t.type, t.deliver] },
      { "font.color": t.fg, "xaxis.gridcolor": t.grid, "yaxis.gridcolor": t.grid });
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

  // The prefill bar from `start` to `now` (ms), `fraction` of the layers done.
  reading(start, now, fraction, done = false) {
    const label = done ? `read: ${(now - start).toFixed(1)} ms` : `reading… ${Math.round(fraction * 100)} % of layers`;
    onNextFrame(() => this.restyle(READ, { y: [["server"]], base: [[start]], x: [[now - start]], hovertext: [[label]] }));
  }

  // One token: its decode tick (server ms) and its arrival tick (browser ms).
  token(serverMs, browserMs, serverLabel, browserLabel) {
    this.pending.server.push([serverMs, serverLabel]);
    this.pending.browser.push([browserMs, browserLabel]);
    this.scheduleTokens();
  }

  flushTokens() {
    const { server, browser } = this.pending;
    if (!server.length) return;
    const col = (rows, k) => rows.map((r) => r[k]);
    Plotly.extendTraces(this.el, {
      x: [col(server, 0), col(browser, 0)],
      y: [server.map(() => "server"), browser.map(() => "browser")],
      hovertext: [col(server, 1), col(browser, 1)],
    }, [SERVER, BROWSER]);
    this.pending = { server: [], browser: [] };
  }
}

export { Timeline };

// The KV cache live: bytes held against tokens held, one point per step,
// beside the 72 KiB-per-token slope, with the context's capacity written out.

import { onNextFrame, throttledToFrames } from "./frame.js";
import { theme, baseLayout, PLOT_CONFIG, onSchemeChange } from "./theme.js";

const { Plotly } = window;
const MIB = 1024 * 1024;
const HELD = 0, SLOPE = 1, FREED = 2;

function mib(bytes) {
  return bytes / MIB;
}

class KvChart {
  constructor(el, { nCtx, bytesPerToken }) {
    this.el = el;
    this.nCtx = nCtx;
    this.perToken = bytesPerToken;
    this.schedule = throttledToFrames(() => this.flush());
    this.reset();
    onSchemeChange(() => this.applyTheme());
  }

  reset() {
    this.pending = [];
    this.held = { x: [], y: [], text: [] };
    this.maxTokens = 0;
    const t = theme();
    const traces = [
      { type: "scatter", mode: "lines+markers", name: "bytes held", x: [], y: [], hovertext: [], hoverinfo: "text",
        line: { color: t.type, width: 2 }, marker: { size: 4, color: t.type } },
      { type: "scatter", mode: "lines", name: `slope: ${(this.perToken / 1024).toFixed(0)} KiB per token`,
        x: [], y: [], hoverinfo: "skip", line: { color: t.muted, dash: "dash", width: 1 } },
      { type: "scatter", mode: "markers+text", name: "freed when the request ended", x: [], y: [], text: [],
        textposition: "top left", hoverinfo: "skip", marker: { symbol: "x", size: 10, color: t.deliver } },
    ];
    const layout = {
      ...baseLayout(t),
      height: 260,
      xaxis: { title: { text: "tokens held" }, rangemode: "tozero", gridcolor: t.grid, zeroline: false },
      yaxis: { title: { text: "MiB" }, rangemode: "tozero", gridcolor: t.grid, zeroline: false },
      annotations: [this.capacityNote(t)],
    };
    Plotly.react(this.el, traces, layout, PLOT_CONFIG);
  }

  capacityNote(t) {
    const capacity = mib(this.nCtx * this.perToken);
    const used = this.maxTokens ? ` · this request: ${this.maxTokens} tokens = ${(100 * this.maxTokens / this.nCtx).toFixed(1)} % of it` : "";
    return { xref: "paper", yref: "paper", x: 0, y: 0.98, xanchor: "left", yanchor: "top", showarrow: false,
             align: "left", font: { size: 11, color: t.muted },
             text: `context capacity: ${this.nCtx.toLocaleString("en")} tokens = ${capacity.toFixed(capacity < 10 ? 2 : 0)} MiB${used}` };
  }

  applyTheme() {
    const t = theme();
    Plotly.update(this.el, { "line.color": [t.type, t.muted, t.deliver], "marker.color": [t.type, t.muted, t.deliver] },
      { "font.color": t.fg, "xaxis.gridcolor": t.grid, "yaxis.gridcolor": t.grid, annotations: [this.capacityNote(t)] });
  }

  // The cache holds `bytes` with `tokens` positions filled.
  point(tokens, bytes) {
    this.pending.push([tokens, bytes]);
    this.schedule();
  }

  // One Plotly call per flush: each call redraws the whole chart (~15 ms in a
  // software-rendered browser), so the points, the slope and the note go together.
  flush() {
    if (!this.pending.length) return;
    for (const [n, b] of this.pending) {
      this.held.x.push(n);
      this.held.y.push(mib(b));
      this.held.text.push(`${n} tokens: ${mib(b).toFixed(2)} MiB (${b.toLocaleString("en")} bytes)`);
      this.maxTokens = Math.max(this.maxTokens, n);
    }
    this.pending = [];
    Plotly.update(this.el,
      { x: [this.held.x, [0, this.maxTokens]], y: [this.held.y, [0, mib(this.maxTokens * this.perToken)]],
        hovertext: [this.held.text, []] },
      { annotations: [this.capacityNote(theme())] }, [HELD, SLOPE]);
  }

  // The request ended and its cache went back to the allocator.
  freed() {
    onNextFrame(() => {
      this.flush();
      Plotly.restyle(this.el, { x: [[this.maxTokens]], y: [[0]], text: [["freed"]] }, [FREED]);
    });
  }
}

export { KvChart };

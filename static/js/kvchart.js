// The KV cache live: bytes held against tokens held, one point per step,
// beside the 72 KiB-per-token slope, with the context's capacity written out;
// and what the whole factory holds at each of those steps, against its budget.

import { onNextFrame } from "./frame.js";
import { LiveChart, axis, Plotly } from "./livechart.js";
import { theme } from "./theme.js";

const MIB = 1024 * 1024;
const HELD = 0, SLOPE = 1, FREED = 2, FACTORY = 3;

function mib(bytes) {
  return bytes / MIB;
}

class KvChart extends LiveChart {
  reset() {
    this.pending = [];
    this.held = { x: [], y: [], text: [] };
    this.factory = { x: [], y: [] };
    this.maxTokens = 0;
    this.draw();
  }

  traces(t) {
    return [
      { type: "scatter", mode: "lines+markers", name: "bytes held", x: [], y: [], hovertext: [], hoverinfo: "text",
        line: { color: t.type, width: 2 }, marker: { size: 4, color: t.type } },
      { type: "scatter", mode: "lines", name: `slope: ${(this.perToken / 1024).toFixed(0)} KiB per token`,
        x: [], y: [], hoverinfo: "skip", line: { color: t.muted, dash: "dash", width: 1 } },
      { type: "scatter", mode: "markers+text", name: "freed when the request ended", x: [], y: [], text: [],
        textposition: "top left", hoverinfo: "skip", marker: { symbol: "x", size: 10, color: t.deliver } },
      { type: "scatter", mode: "lines", name: "the whole factory holds", x: [], y: [],
        hovertemplate: "factory: %{y:.2f} MiB<extra></extra>", line: { color: t.read, width: 1.5, dash: "dot" } },
    ];
  }

  layout(t) {
    return { height: 260, xaxis: axis(t, "tokens held"), yaxis: axis(t, "MiB"), annotations: [this.capacityNote(t)] };
  }

  colours(t) {
    const colours = [t.type, t.muted, t.deliver, t.read];
    return { "line.color": colours, "marker.color": colours };
  }

  layoutColours(t) {
    return { annotations: [this.capacityNote(t)] };
  }

  capacityNote(t) {
    const capacity = mib(this.nCtx * this.perToken);
    const used = this.maxTokens ? ` · this request: ${this.maxTokens} tokens = ${(100 * this.maxTokens / this.nCtx).toFixed(1)} % of it` : "";
    const budget = `<br>factory budget: ${mib(this.budget).toFixed(0)} MiB for everyone's notebooks`;
    return { xref: "paper", yref: "paper", x: 0, y: 0.98, xanchor: "left", yanchor: "top", showarrow: false,
             align: "left", font: { size: 11, color: t.muted },
             text: `context capacity: ${this.nCtx.toLocaleString("en")} tokens = ${capacity.toFixed(capacity < 10 ? 2 : 0)} MiB${used}${budget}` };
  }

  // The cache holds `bytes` with `tokens` positions filled; the factory's
  // caches hold `factoryBytes` (undefined when the server did not say).
  point(tokens, bytes, factoryBytes) {
    this.pending.push([tokens, bytes, factoryBytes]);
    this.schedule();
  }

  // One Plotly call per flush: each call redraws the whole chart (~15 ms in a
  // software-rendered browser), so the points, the slope and the note go together.
  flush() {
    if (!this.pending.length) return;
    for (const [n, b, f] of this.pending) {
      this.held.x.push(n);
      this.held.y.push(mib(b));
      this.held.text.push(`${n} tokens: ${mib(b).toFixed(2)} MiB (${b.toLocaleString("en")} bytes)`);
      if (f !== undefined) {
        this.factory.x.push(n);
        this.factory.y.push(mib(f));
      }
      this.maxTokens = Math.max(this.maxTokens, n);
    }
    this.pending = [];
    Plotly.update(this.el,
      { x: [this.held.x, [0, this.maxTokens], this.factory.x],
        y: [this.held.y, [0, mib(this.maxTokens * this.perToken)], this.factory.y],
        hovertext: [this.held.text, [], []] },
      { annotations: [this.capacityNote(theme())] }, [HELD, SLOPE, FACTORY]);
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

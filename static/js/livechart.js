// What the live charts share: drawn afresh with Plotly.react on reset, fed
// through a throttled `flush`, and recoloured when the visitor's colour
// scheme changes. A chart defines reset() (which draws), traces(t),
// layout(t), colours(t) (the per-trace colour update) and flush(); the
// fields it needs come in the constructor's `fields` (`since`: what a time
// axis counts from). An element's data-height makes the chart compact.

import { throttledToFrames } from "./frame.js";
import { DARK, theme, baseLayout, PLOT_CONFIG } from "./theme.js";

const { Plotly } = window;

class LiveChart {
  constructor(el, fields = {}) {
    this.el = el;
    this.since = "Enter"; // the live page's clock starts when the visitor pressed Enter
    Object.assign(this, fields);
    this.schedule = throttledToFrames(() => this.flush());
    DARK.addEventListener("change", () => this.recolour());
    this.reset();
  }

  timeAxis(t) {
    return axis(t, `ms since ${this.since}`);
  }

  draw() {
    const t = theme();
    const layout = { ...baseLayout(t), ...this.layout(t) };
    if (this.el.dataset.height) {
      // a compact page (the embed): its own size, no room for a legend or notes (hovering names each trace)
      Object.assign(layout, { height: Number(this.el.dataset.height), showlegend: false, annotations: [],
                              margin: { l: 52, r: 40, t: 10, b: 40 } });
    }
    Plotly.react(this.el, this.traces(t), layout, PLOT_CONFIG);
  }

  recolour() {
    const t = theme();
    Plotly.update(this.el, this.colours(t),
      { "font.color": t.fg, "xaxis.gridcolor": t.grid, "yaxis.gridcolor": t.grid, ...this.layoutColours(t) });
  }

  // Layout parts that carry colours besides font and grid (none by default).
  layoutColours() {
    return {};
  }
}

// A value axis starting at zero, in the page's grid colour.
function axis(t, title, extra = {}) {
  return { title: { text: title }, rangemode: "tozero", gridcolor: t.grid, zeroline: false, ...extra };
}

export { LiveChart, axis, Plotly };

// Chart colours from the page's CSS variables, so charts follow light and dark.
// The stylesheet writes each colour as light-dark(light, dark); Plotly needs
// the one in force: the page's data-theme if set, else the visitor's setting.

const DARK = matchMedia("(prefers-color-scheme: dark)");

function isDark() {
  const forced = document.documentElement.dataset.theme;
  return forced ? forced === "dark" : DARK.matches;
}

function cssVar(name) {
  const value = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  const pair = /^light-dark\(\s*([^,]+),\s*([^)]+)\)$/.exec(value);
  return pair ? pair[isDark() ? 2 : 1].trim() : value;
}

function theme() {
  return {
    fg: cssVar("--fg"),
    muted: cssVar("--muted"),
    grid: cssVar("--grid"),
    wait: cssVar("--wait"),
    chop: cssVar("--chop"),
    read: cssVar("--read"),
    type: cssVar("--type"),
    deliver: cssVar("--deliver"),
  };
}

function baseLayout(t) {
  return {
    paper_bgcolor: "rgba(0,0,0,0)",
    plot_bgcolor: "rgba(0,0,0,0)",
    font: { color: t.fg, size: 12 },
    margin: { l: 64, r: 16, t: 40, b: 44 },
    legend: { orientation: "h", x: 0, y: 1.02, yanchor: "bottom", font: { size: 11 } },
    hoverlabel: { namelength: -1 },
  };
}

const PLOT_CONFIG = { displaylogo: false, responsive: true, modeBarButtonsToRemove: ["select2d", "lasso2d"] };

export { DARK, theme, baseLayout, PLOT_CONFIG };

// The stopwatches panel: server figures (from the engine's "done") beside the
// browser's own (from arrival times), same definitions, labelled apart. The
// whole factory's tokens/s (everyone's tokens while yours were typed) sits
// beside this person's: the two throughputs, never mixed.

const ROWS = [
  ["TTFT", "ttft_ms", "ms"],
  ["gap p50 (ITL)", "itl_p50_ms", "ms"],
  ["gap p99 (ITL)", "itl_p99_ms", "ms"],
  ["slowest gap", "itl_max_ms", "ms"],
  ["total", "total_ms", "ms"],
  ["tokens/s for you", "person_tokens_per_s", "/s"],
  ["typing speed (n−1)/(last−first)", "decode_tokens_per_s", "/s"],
  ["check: TTFT + (n−1)·gap p50", "predicted_total_ms", "ms"],
  ["tokens/s for the whole factory", "factory_tokens_per_s", "/s"],
];

function format(value, unit) {
  if (value === null || value === undefined) return "–";
  return unit === "/s" ? `${value.toFixed(1)} tok/s` : `${value.toFixed(value < 10 ? 2 : 1)} ms`;
}

class Stopwatches {
  constructor(table) {
    this.cells = ROWS.map(([label]) => {
      const tr = table.tBodies[0].insertRow();
      const th = document.createElement("th");
      th.textContent = label;
      tr.append(th);
      return [tr.insertCell(), tr.insertCell()];
    });
  }

  show(server, browser) {
    ROWS.forEach(([, key, unit], i) => {
      const [s, b] = this.cells[i];
      s.textContent = server ? format(server[key], unit) : "–";
      b.textContent = browser ? format(browser[key], unit) : "–";
    });
  }
}

export { Stopwatches };

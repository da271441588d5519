// The results table: one row per finished run, in the seed's columns.

// [key of the server's stats, format]; the seed's columns, in the seed's order.
const COLUMNS = [
  ["prompt_tokens", (v) => String(v)],
  ["chop_ms", (v) => v.toFixed(2)],
  ["prefill_ms", (v) => v.toFixed(1)],
  ["ttft_ms", (v) => v.toFixed(1)],
  ["itl_p50_ms", (v) => v.toFixed(1)],
  ["itl_p99_ms", (v) => v.toFixed(1)],
  ["total_ms", (v) => (v / 1000).toFixed(2)],
  ["decode_tokens_per_s", (v) => v.toFixed(1)],
  ["prefill_ms_per_token", (v) => v.toFixed(2)],
  ["decode_ms_per_token", (v) => v.toFixed(1)],
  ["decode_vs_prefill", (v) => `${v.toFixed(0)}×`],
];

function addResultRow(table, stats) {
  const ratio = stats.decode_ms_per_token === null ? null : stats.decode_ms_per_token / stats.prefill_ms_per_token;
  stats = { ...stats, decode_vs_prefill: ratio };
  const tr = table.tBodies[0].insertRow();
  for (const [key, fmt] of COLUMNS) {
    const value = stats[key];
    tr.insertCell().textContent = value === null || value === undefined ? "–" : fmt(value);
  }
}

export { addResultRow };

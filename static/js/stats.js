// The stopwatches' arithmetic, with the server's definitions (engine/stopwatch.py):
// p99 is the gap at index int(0.99 * (n - 1)) of the sorted gaps.

function gaps(times) {
  const out = [];
  for (let i = 1; i < times.length; i++) out.push(times[i] - times[i - 1]);
  return out;
}

function percentile(values, q) {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(q * (sorted.length - 1))];
}

// Figures from token arrival times (ms since Enter); null where undefined.
function summarize(times) {
  const n = times.length;
  if (n === 0) return null;
  const g = gaps(times);
  const total = times[n - 1];
  const p50 = percentile(g, 0.5);
  return {
    ttft_ms: times[0],
    itl_p50_ms: p50,
    itl_p99_ms: percentile(g, 0.99),
    itl_max_ms: g.length ? Math.max(...g) : null,
    total_ms: total,
    person_tokens_per_s: total > 0 ? n / (total / 1000) : null,
    decode_tokens_per_s: n > 1 && times[n - 1] > times[0] ? (n - 1) / ((times[n - 1] - times[0]) / 1000) : null,
    predicted_total_ms: times[0] + (n - 1) * (p50 ?? 0),
    output_tokens: n,
  };
}

export { gaps, percentile, summarize };

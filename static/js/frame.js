// Coalesce view updates: at most one per animation frame, and for the charts
// at most one per CHART_MS (5 a second). A 1,024-token answer arrives faster than the
// screen refreshes, and every Plotly update redraws the whole chart -- on a
// small machine that drawing would compete with the engine for the CPU.

const CHART_MS = 200;
const pending = new Set();
let scheduled = false;

function flush() {
  scheduled = false;
  const jobs = [...pending];
  pending.clear();
  for (const job of jobs) job();
}

// Run `job` once on the next frame, however often it is requested before then.
function onNextFrame(job) {
  pending.add(job);
  if (!scheduled) {
    scheduled = true;
    requestAnimationFrame(flush);
  }
}

// A function that runs `job` on a frame at most once per CHART_MS, however
// often it is called; the last call is never lost.
function throttledToFrames(job) {
  let last = -Infinity;
  let timer = null;
  const run = () => {
    timer = null;
    last = performance.now();
    job();
  };
  return () => {
    if (timer !== null) return;
    const wait = Math.max(0, last + CHART_MS - performance.now());
    timer = setTimeout(() => onNextFrame(run), wait);
  };
}

export { onNextFrame, throttledToFrames };

// Coalesce view updates to at most one per animation frame: a 1,024-token
// answer arrives faster than the screen refreshes, and Plotly redraws are costly.

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

export { onNextFrame };

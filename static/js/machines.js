// The strip of four machines: which one works now, which are done.

const STAGES = ["chop", "read", "type", "deliver"];

class Machines {
  constructor(el) {
    this.items = Object.fromEntries(STAGES.map((s) => [s, el.querySelector(`[data-stage="${s}"]`)]));
  }

  reset() {
    for (const stage of STAGES) this.set(stage, "", "");
  }

  // state: "" (idle), "active" or "done"; note: a few words under the machine.
  set(stage, state, note) {
    const item = this.items[stage];
    item.classList.toggle("active", state === "active");
    item.classList.toggle("done", state === "done");
    if (note !== undefined) item.querySelector(".state").textContent = note;
  }
}

export { Machines };

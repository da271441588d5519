// Replays a recorded run into a RunView at its recorded speed (or 0.25x-4x):
// each message is handed over when its time comes -- the sharer's browser
// clock when they shared it, else the server's -- with pause and jump to end.

class Player {
  // run: { messages, client_ms }; onChange(): the playing state changed.
  constructor(run, view, onChange = () => {}) {
    this.messages = run.messages;
    this.clientMs = run.client_ms; // null when the run was never shared from its page
    this.view = view;
    this.onChange = onChange;
    this.speed = 1;
    this.timer = null;
    this.next = this.messages.length; // nothing played yet: play() starts from the top
  }

  get playing() {
    return this.timer !== null;
  }

  get finished() {
    return this.next >= this.messages.length;
  }

  at(i) {
    return this.clientMs ? this.clientMs[i] : this.messages[i].t_ms;
  }

  // Recorded ms reached now.
  position() {
    return this.offset + (performance.now() - this.startedAt) * this.speed;
  }

  play() {
    if (this.playing) return;
    if (this.finished) {
      this.view.begin();
      this.next = 0;
      this.offset = 0;
    }
    this.startedAt = performance.now();
    this.tick();
    this.onChange();
  }

  pause() {
    if (!this.playing) return;
    this.offset = this.position();
    clearTimeout(this.timer);
    this.timer = null;
    this.onChange();
  }

  setSpeed(speed) {
    if (this.playing) {
      this.offset = this.position();
      this.startedAt = performance.now();
    }
    this.speed = speed;
    if (this.playing) {
      clearTimeout(this.timer);
      this.tick();
    }
  }

  jumpToEnd() {
    if (this.finished) {
      this.view.begin();
      this.next = 0;
    }
    clearTimeout(this.timer);
    this.timer = null;
    this.deliverUntil(Infinity);
    this.onChange();
  }

  tick() {
    this.deliverUntil(this.position());
    if (this.finished) {
      this.timer = null;
      this.onChange();
      return;
    }
    const wait = (this.at(this.next) - this.position()) / this.speed;
    this.timer = setTimeout(() => this.tick(), Math.max(0, wait));
  }

  deliverUntil(ms) {
    while (!this.finished && this.at(this.next) <= ms) {
      const i = this.next++;
      this.view.handle(this.messages[i], this.clientMs ? this.clientMs[i] : null);
    }
  }
}

export { Player };

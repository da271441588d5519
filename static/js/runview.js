// One run on screen: the machines, chips, answer, timeline, floor and KV
// charts and the stopwatches, fed one server message at a time. The live page
// feeds it from the socket, a replay from a recorded run: the same views
// either way. Elements a page leaves out (the embed has no chips) are skipped.

import { renderChips } from "./chips.js";
import { Timeline } from "./timeline.js";
import { KvChart } from "./kvchart.js";
import { FloorChart } from "./floorchart.js";
import { Machines } from "./machines.js";
import { Stopwatches } from "./stopwatches.js";
import { addResultRow } from "./results.js";
import { summarize } from "./stats.js";
import { onNextFrame } from "./frame.js";
import { $ } from "./page.js";


// The whole factory's tokens/s while this answer was typed, from the
// factory's token count at each of this request's steps (server clock).
function factoryFigures(current) {
  const f = current.factory;
  if (f.length < 2 || f.at(-1)[0] <= f[0][0]) return { factory_tokens_per_s: null };
  return { factory_tokens_per_s: (f.at(-1)[1] - f[0][1]) / ((f.at(-1)[0] - f[0][0]) / 1000) };
}

function gapLabel(times) {
  const n = times.length;
  return n > 1 ? ` · gap ${(times[n - 1] - times[n - 2]).toFixed(1)} ms` : " · first token";
}

class RunView {
  // onStatus(text, isError): a line for the status bar; onEnd(msg): the run ended (done, error or busy).
  constructor(config, { onStatus, onEnd }) {
    this.config = config;
    this.onStatus = onStatus;
    this.onEnd = onEnd;
    this.machines = $("machines") && new Machines($("machines"));
    // On the live page the clock starts at Enter; a replay or an embed starts it when the question went out.
    const since = config.run || config.prompt ? "the question was sent" : "Enter";
    this.timeline = new Timeline($("timeline"), { since });
    // A remote engine's KV cache and floor cannot be seen: no charts then (the page says so).
    this.kv = $("kvchart") && new KvChart($("kvchart"),
      { nCtx: config.n_ctx, perToken: config.kv_bytes_per_token, budget: config.kv_budget_bytes });
    this.floor = $("floorchart") && new FloorChart($("floorchart"), { since });
    this.watches = new Stopwatches($("stopwatches"));
    this.watches.show(null, null);
    this.run = null;
  }

  get running() {
    return this.run !== null;
  }

  // Clear the views for a new run; `chopping`: the question was just sent.
  begin() {
    this.run = { times: [], serverTimes: [], pendingText: "", tokenizedMs: 0, tokens: 0, factory: [], notice: "" };
    $("answer").replaceChildren();
    $("chips")?.replaceChildren();
    for (const id of ["chip-count", "answer-count"]) if ($(id)) $(id).textContent = "";
    this.machines?.reset();
    this.stage("chop", "active", "chopping…");
    this.timeline.reset();
    this.kv?.reset();
    this.floor?.reset();
    this.watches.show(null, null);
  }

  // The run stopped without a done (connection lost): later messages are ignored.
  abandon() {
    this.run = null;
  }

  stage(name, state, note) {
    this.machines?.set(name, state, note);
  }

  // One server message; `browserMs`: when it arrived, ms since Enter (null when unknown).
  handle(msg, browserMs) {
    if (!this.run) return; // late events of a run that already ended
    const handler = this[`on_${msg.type}`];
    if (handler) handler.call(this, msg, browserMs);
  }

  on_queued(msg) {
    this.stage("chop", "", "");
    this.onStatus(`waiting in line: position ${msg.position}`);
  }

  on_tokenized(msg) {
    const remote = this.config.remote;
    this.run.tokenizedMs = msg.t_ms;
    if ($("chips")) renderChips($("chips"), msg.ids, msg.pieces);
    if ($("chip-count")) $("chip-count").textContent = remote ? "chopped inside the remote engine, unseen" : `${msg.ids.length} tokens`;
    this.stage("chop", "done", remote ? "inside the engine" : `${msg.ids.length} tokens`);
    this.stage("read", "active", "reading…");
    this.timeline.waited(msg.t_ms);
    this.timeline.chopped(msg.t_ms, msg.ids.length);
    this.onStatus("reading the prompt");
  }

  on_prefill_progress(msg) {
    this.timeline.reading(this.run.tokenizedMs, msg.t_ms, msg.fraction);
    this.stage("read", "active", `${Math.round(msg.fraction * 100)} % read`);
  }

  on_prefilled(msg) {
    this.timeline.reading(this.run.tokenizedMs, msg.t_ms, 1, true);
    this.kv?.point(msg.kv_bytes / this.config.kv_bytes_per_token, msg.kv_bytes);
    this.stage("read", "done", `${(msg.t_ms - this.run.tokenizedMs).toFixed(0)} ms`);
    this.stage("type", "active", "typing…");
    this.onStatus("typing");
  }

  on_token(msg, browserMs) {
    const run = this.run;
    if (browserMs !== null) run.times.push(browserMs);
    run.serverTimes.push(msg.t_ms);
    run.tokens += 1;
    run.pendingText += msg.text;
    if (msg.factory_tokens !== undefined) run.factory.push([msg.t_ms, msg.factory_tokens]);
    if (msg.index === 0 && this.config.remote) this.stage("read", "done", "inside the engine");
    const id = msg.id === null ? "" : ` (id ${msg.id})`;
    const kvNote = msg.kv_bytes === null ? "" : ` · KV ${(msg.kv_bytes / 1048576).toFixed(2)} MiB`;
    const bus = msg.batch > 1 ? ` · shared with ${msg.batch - 1} other request${msg.batch > 2 ? "s" : ""}` : "";
    const what = `#${msg.index} ${JSON.stringify(msg.text)}${id}${kvNote}${bus}`;
    this.timeline.token(msg.t_ms, browserMs, what + gapLabel(run.serverTimes),
      browserMs === null ? null : what + gapLabel(run.times), msg.batch ?? 1);
    this.kv?.point(msg.kv_bytes / this.config.kv_bytes_per_token, msg.kv_bytes, msg.factory_kv_bytes);
    if (msg.seats) this.floor?.step(msg.t_ms, msg.seats, msg.seat);
    onNextFrame(() => {
      $("answer").append(run.pendingText); // a text node: model output never becomes markup
      run.pendingText = "";
      if ($("answer-count")) $("answer-count").textContent = `${run.tokens} tokens`;
      const state = run === this.run ? "active" : "done";
      this.stage("type", state, `${run.tokens} typed`);
      this.stage("deliver", state, `${run.tokens} delivered`);
      this.watches.show(factoryFigures(run), summarize(run.times));
    });
  }

  on_done(msg) {
    const run = this.run;
    this.kv?.freed();
    onNextFrame(() => {
      this.timeline.flush(); // the last ticks now, not at the next chart slot
      this.floor?.flush();
      this.stage("type", "done");
      this.stage("deliver", "done");
      this.watches.show(msg.stats && { ...msg.stats, ...factoryFigures(run) }, summarize(run.times));
    });
    if (msg.stats && $("results")) addResultRow($("results"), msg.stats);
    const notice = run.notice ? ` — ${run.notice}` : "";
    this.end(msg, msg.finish_reason === "cancelled" ? "cancelled"
      : `done: ${msg.stats.output_tokens} tokens in ${(msg.stats.total_ms / 1000).toFixed(2)} s${notice}`);
  }

  on_notice(msg) {
    this.run.notice = msg.message;
  }

  on_error(msg) {
    this.end(msg, msg.message, true);
  }

  on_busy(msg) {
    this.end(msg, msg.message, true);
  }

  end(msg, text, isError = false) {
    this.run = null;
    this.onStatus(text, isError);
    this.onEnd(msg);
  }
}

export { RunView };

// The page's entry: wires the form, the socket and the views together.
// Each server message updates the views; drawing happens once per frame.

import { FactorySocket } from "./socket.js";
import { renderChips } from "./chips.js";
import { Timeline } from "./timeline.js";
import { KvChart } from "./kvchart.js";
import { FloorChart } from "./floorchart.js";
import { Machines } from "./machines.js";
import { Stopwatches } from "./stopwatches.js";
import { addResultRow } from "./results.js";
import { summarize } from "./stats.js";
import { onNextFrame } from "./frame.js";

const config = JSON.parse(document.getElementById("page-config").textContent);
const $ = (id) => document.getElementById(id);
const form = $("ask"), promptBox = $("prompt"), answer = $("answer"), status = $("status");

const machines = new Machines($("machines"));
const timeline = new Timeline($("timeline"));
// A remote engine's KV cache and floor cannot be seen: no charts then (the page says so).
const kv = config.remote ? null : new KvChart($("kvchart"),
  { nCtx: config.n_ctx, bytesPerToken: config.kv_bytes_per_token, budgetBytes: config.kv_budget_bytes });
const floor = config.remote ? null : new FloorChart($("floorchart"));
const watches = new Stopwatches($("stopwatches"));
watches.show(null, null);

let run = null; // the request in flight: { enter, times, serverTimes, text, tokenizedMs, tokens, factory }

const socket = new FactorySocket({
  onOpen: () => { setStatus("ready"); updateButtons(); },
  onClose: (e) => {
    if (run) finish("the connection dropped, so this request was lost", true);
    // 1013: the server said it was too busy (its "busy" message came first)
    if (e.code === 1013) setStatus("the factory is busy — try again in a moment", true);
    else setStatus("disconnected — reconnecting…", true);
    updateButtons();
  },
  onMessage,
});

function setStatus(text, isError = false) {
  status.textContent = text;
  status.classList.toggle("error", isError);
}

function updateButtons() {
  $("send").disabled = !socket.open || run !== null;
  $("cancel").disabled = run === null;
}

function numberOrNull(input) {
  return input.value === "" ? null : Number(input.value);
}

function start(event) {
  event.preventDefault();
  if (run || !socket.open) return;
  // Stamp Enter and send first: redrawing the views takes the page a while,
  // and that is the page's time, not the factory's.
  run = { enter: performance.now(), times: [], serverTimes: [], pendingText: "", tokenizedMs: 0, tokens: 0,
          factory: [] };
  socket.send({
    type: "generate",
    prompt: promptBox.value,
    max_tokens: numberOrNull($("max-tokens")),
    temperature: numberOrNull($("temperature")) ?? 0,
    top_k: numberOrNull($("top-k")),
    seed: numberOrNull($("seed")),
  });
  answer.replaceChildren();
  $("chips").replaceChildren();
  $("chip-count").textContent = $("answer-count").textContent = "";
  machines.reset();
  machines.set("chop", "active", "chopping…");
  timeline.reset();
  kv?.reset();
  floor?.reset();
  watches.show(null, null);
  setStatus("sent");
  updateButtons();
}

function finish(message, isError = false) {
  run = null;
  setStatus(message, isError);
  updateButtons();
}

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

const HANDLERS = {
  queued(msg) {
    machines.set("chop", "", "");
    setStatus(`waiting in line: position ${msg.position}`);
  },
  tokenized(msg) {
    run.tokenizedMs = msg.t_ms;
    renderChips($("chips"), msg.ids, msg.pieces);
    $("chip-count").textContent = config.remote ? "chopped inside the remote engine, unseen" : `${msg.ids.length} tokens`;
    machines.set("chop", "done", config.remote ? "inside the engine" : `${msg.ids.length} tokens`);
    machines.set("read", "active", "reading…");
    timeline.waited(msg.t_ms);
    timeline.chopped(msg.t_ms, msg.ids.length);
    setStatus("reading the prompt");
  },
  prefill_progress(msg) {
    timeline.reading(run.tokenizedMs, msg.t_ms, msg.fraction);
    machines.set("read", "active", `${Math.round(msg.fraction * 100)} % read`);
  },
  prefilled(msg) {
    timeline.reading(run.tokenizedMs, msg.t_ms, 1, true);
    kv?.point(msg.kv_bytes / config.kv_bytes_per_token, msg.kv_bytes);
    machines.set("read", "done", `${(msg.t_ms - run.tokenizedMs).toFixed(0)} ms`);
    machines.set("type", "active", "typing…");
    setStatus("typing");
  },
  token(msg, browserMs) {
    run.times.push(browserMs);
    run.serverTimes.push(msg.t_ms);
    run.tokens += 1;
    run.pendingText += msg.text;
    if (msg.factory_tokens !== undefined) run.factory.push([msg.t_ms, msg.factory_tokens]);
    if (msg.index === 0 && config.remote) machines.set("read", "done", "inside the engine");
    const id = msg.id === null ? "" : ` (id ${msg.id})`;
    const kvNote = msg.kv_bytes === null ? "" : ` · KV ${(msg.kv_bytes / 1048576).toFixed(2)} MiB`;
    const bus = msg.batch > 1 ? ` · shared with ${msg.batch - 1} other request${msg.batch > 2 ? "s" : ""}` : "";
    const what = `#${msg.index} ${JSON.stringify(msg.text)}${id}${kvNote}${bus}`;
    timeline.token(msg.t_ms, browserMs, what + gapLabel(run.serverTimes), what + gapLabel(run.times), msg.batch ?? 1);
    kv?.point(msg.kv_bytes / config.kv_bytes_per_token, msg.kv_bytes, msg.factory_kv_bytes);
    if (msg.seats) floor?.step(msg.t_ms, msg.seats, msg.seat);
    const current = run;
    onNextFrame(() => {
      answer.append(current.pendingText); // a text node: model output never becomes markup
      current.pendingText = "";
      $("answer-count").textContent = `${current.tokens} tokens`;
      machines.set("type", current === run ? "active" : "done", `${current.tokens} typed`);
      machines.set("deliver", current === run ? "active" : "done", `${current.tokens} delivered`);
      watches.show(factoryFigures(current), summarize(current.times));
    });
  },
  done(msg) {
    const current = run;
    kv?.freed();
    onNextFrame(() => {
      timeline.flush(); // the last ticks now, not at the next chart slot
      floor?.flush();
      machines.set("type", "done");
      machines.set("deliver", "done");
      watches.show(msg.stats && { ...msg.stats, ...factoryFigures(current) }, summarize(current.times));
    });
    if (msg.stats) addResultRow($("results"), msg.stats);
    const notice = current.notice ? ` — ${current.notice}` : "";
    finish(msg.finish_reason === "cancelled" ? "cancelled"
      : `done: ${msg.stats.output_tokens} tokens in ${(msg.stats.total_ms / 1000).toFixed(2)} s${notice}`);
  },
  notice(msg) {
    run.notice = msg.message;
  },
  error(msg) {
    finish(msg.message, true);
  },
  busy(msg) {
    finish(msg.message, true);
  },
};

function onMessage(msg, arrivedAt) {
  if (!run) {
    if (msg.type === "error") setStatus(msg.message, true);
    return; // late events of a run that already ended
  }
  const handler = HANDLERS[msg.type];
  if (handler) handler(msg, arrivedAt - run.enter);
}

form.addEventListener("submit", start);
$("cancel").addEventListener("click", () => {
  if (run && socket.open) socket.send({ type: "cancel" });
});
promptBox.addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    form.requestSubmit();
  }
});
for (const button of document.querySelectorAll("[data-preset]")) {
  button.addEventListener("click", () => {
    promptBox.value = config.presets[button.dataset.preset];
    promptBox.focus();
  });
}

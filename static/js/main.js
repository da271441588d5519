// The live page's entry: the form and the socket feed one RunView; after a
// run, the Share button stores the browser's arrival times with the run and
// copies its link.

import { FactorySocket } from "./socket.js";
import { RunView } from "./runview.js";
import { copy, showShare } from "./share.js";
import { config, $, setStatus } from "./page.js";

const form = $("ask"), promptBox = $("prompt"), sharePanel = $("share");

let sent = null; // the request in flight: { enter, clientMs } -- when Enter was pressed, each message's arrival
let shared = null; // the last recorded run: { url, key, clientMs }

const view = new RunView(config, {
  onStatus: setStatus,
  onEnd: (msg) => {
    if (msg.type === "done" && msg.run_id) {
      shared = { url: showShare(sharePanel, msg.share_url), key: msg.share_key, clientMs: sent.clientMs };
      setStatus(`${$("status").textContent} · share or download it below`);
    }
    sent = null;
    updateButtons();
  },
});

const socket = new FactorySocket({
  onOpen: () => { setStatus("ready"); updateButtons(); },
  onClose: (e) => {
    if (view.running) {
      view.abandon();
      sent = null;
      setStatus("the connection dropped, so this request was lost", true);
    }
    // 1013: the server said it was too busy (its "busy" message came first)
    if (e.code === 1013) setStatus("the factory is busy — try again in a moment", true);
    else setStatus("disconnected — reconnecting…", true);
    updateButtons();
  },
  onMessage: (msg, arrivedAt) => {
    if (!view.running) {
      if (msg.type === "error") setStatus(msg.message, true);
      return; // late events of a run that already ended
    }
    const browserMs = arrivedAt - sent.enter;
    sent.clientMs.push(browserMs);
    view.handle(msg, browserMs);
  },
});

function updateButtons() {
  $("send").disabled = !socket.open || view.running;
  $("cancel").disabled = !view.running;
}

function numberOrNull(input) {
  return input.value === "" ? null : Number(input.value);
}

function start(event) {
  event.preventDefault();
  if (view.running || !socket.open) return;
  // Stamp Enter and send first: redrawing the views takes the page a while,
  // and that is the page's time, not the factory's.
  sent = { enter: performance.now(), clientMs: [] };
  socket.send({
    type: "generate",
    prompt: promptBox.value,
    max_tokens: numberOrNull($("max-tokens")),
    temperature: numberOrNull($("temperature")) ?? 0,
    top_k: numberOrNull($("top-k")),
    seed: numberOrNull($("seed")),
  });
  view.begin();
  sharePanel.hidden = true;
  shared = null;
  setStatus("sent");
  updateButtons();
}

async function share() {
  if (!shared) return;
  const { url, key, clientMs } = shared;
  let problem = null;
  try {
    const response = await fetch(`${url}/client-times`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ key, client_ms: clientMs }),
    });
    if (!response.ok) problem = (await response.json().catch(() => null))?.error?.message ?? `HTTP ${response.status}`;
  } catch {
    problem = "the server could not be reached";
  }
  if (problem) {
    setStatus(`your browser's times could not be added to the run (${problem}); the link still replays it`, true);
    return;
  }
  const copied = await copy(url, sharePanel.querySelector("[data-share-link]"));
  setStatus(copied ? "link copied: it replays this run, your browser's times included"
    : "the link is selected: copy it to share this run");
}

form.addEventListener("submit", start);
$("cancel").addEventListener("click", () => {
  if (view.running && socket.open) socket.send({ type: "cancel" });
});
$("share-button").addEventListener("click", share);
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

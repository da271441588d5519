// The replay page /r/<id> and the embed view /embed: a recorded run played
// back (run in the page's JSON), or -- in the embed, given a prompt -- a live
// run over the socket. An embed posts its height to the page that frames it.

import { RunView } from "./runview.js";
import { Player } from "./player.js";
import { FactorySocket } from "./socket.js";
import { RESIZE, copy, showShare } from "./share.js";
import { config, $, setStatus } from "./page.js";

const view = new RunView(config, { onStatus: setStatus, onEnd: () => updateButtons() });
let updateButtons = () => {};

if (config.run) {
  const player = new Player(config.run, view, () => updateButtons());
  updateButtons = () => {
    $("play").textContent = player.playing ? "Pause" : player.finished && player.next > 0 ? "Replay" : "Play";
  };
  $("play").addEventListener("click", () => (player.playing ? player.pause() : player.play()));
  $("to-end").addEventListener("click", () => player.jumpToEnd());
  $("speed").addEventListener("change", (e) => player.setSpeed(Number(e.target.value)));
  if ($("share")) {
    const link = showShare($("share"), config.share_url);
    $("copy-link").addEventListener("click", () => copy(link, $("share").querySelector("[data-share-link]")));
  }
  setStatus(config.run.client_ms ? "recorded run: replayed on the sharer's browser clock"
    : "recorded run: replayed on the server's clock");
  if (config.autoplay) player.play();
} else {
  // A live embed: one question, asked when the visitor presses Run (or at once with autoplay).
  let enter = 0, asked = false;
  const socket = new FactorySocket({
    onOpen: () => {
      updateButtons();
      if (config.autoplay && !asked) ask(); // once: a reconnect does not ask again
    },
    onClose: () => {
      if (view.running) view.abandon();
      updateButtons();
    },
    onMessage: (msg, arrivedAt) => view.handle(msg, arrivedAt - enter),
  });
  const ask = () => {
    if (view.running || !socket.open) return;
    asked = true;
    enter = performance.now();
    socket.send({ type: "generate", prompt: config.prompt, max_tokens: config.max_tokens });
    view.begin();
    setStatus("sent");
    updateButtons();
  };
  updateButtons = () => { $("play").disabled = view.running || !socket.open; };
  $("play").addEventListener("click", ask);
}
updateButtons();

// In a frame, tell the parent our height whenever it changes, so its iframe can fit us.
if (window.parent !== window) {
  let last = 0;
  new ResizeObserver(() => {
    const height = Math.ceil(document.documentElement.getBoundingClientRect().height);
    if (height !== last) {
      last = height;
      window.parent.postMessage({ type: RESIZE, height }, "*"); // a height is no secret: any parent may read it
    }
  }).observe(document.documentElement);
}

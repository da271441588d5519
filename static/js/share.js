// The share panel of a recorded run: its link (copied on request), the
// downloads, and a snippet that embeds the run in another site with an
// iframe that resizes itself to its content.

import { config } from "./page.js";

const RESIZE = "word-factory:resize"; // the message an embed (replay.js) posts to its parent

function embedSnippet(shareUrl) {
  const url = new URL(shareUrl);
  const runId = url.pathname.split("/").pop();
  const src = `${url.origin}/embed?run=${encodeURIComponent(runId)}`;
  const [width, height] = config.embed_size; // the size oEmbed gives too
  return `<iframe src="${src}" title="Word Factory run" width="${width}" height="${height}" loading="lazy"
  style="border:0;width:100%;max-width:${width}px"></iframe>
<script>
addEventListener("message", (e) => {
  if (e.origin !== "${url.origin}" || !e.data || e.data.type !== "${RESIZE}") return;
  for (const f of document.getElementsByTagName("iframe"))
    if (f.contentWindow === e.source) f.style.height = e.data.height + "px";
});
</script>`;
}

async function copy(text, input) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    input.select(); // no clipboard (plain http, or denied): leave it selected to copy by hand
    return false;
  }
}

// Fill the panel `el` (see templates/_views.html) for the run at `sharePath`
// (the server gives a path: the link is this page's origin and that path).
function showShare(el, sharePath) {
  const shareUrl = new URL(sharePath, location.href).href;
  el.hidden = false;
  const link = el.querySelector("[data-share-link]");
  link.value = shareUrl;
  const snippet = el.querySelector("[data-embed-snippet]");
  snippet.value = embedSnippet(shareUrl);
  el.querySelector("[data-copy-snippet]").onclick = () => copy(snippet.value, snippet); // once, however often shown
  for (const a of el.querySelectorAll("[data-export]")) a.href = `${shareUrl}/${a.dataset.export}`;
  return shareUrl;
}

export { RESIZE, copy, showShare };

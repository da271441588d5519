// The prompt as token chips: each byte with its id; the bytes of one
// multi-byte character grouped under the character they make together.

const decoder = new TextDecoder("utf-8", { fatal: true });

// Length of the UTF-8 sequence a lead byte starts, or 1 for a stray byte.
function sequenceLength(byte) {
  if (byte >= 0xf0 && byte <= 0xf4) return 4;
  if (byte >= 0xe0) return byte <= 0xef ? 3 : 1;
  if (byte >= 0xc2) return 2;
  return 1;
}

// Split ids into [start, length] runs that each form one character.
function characterRuns(ids) {
  const runs = [];
  for (let i = 0; i < ids.length; ) {
    let len = sequenceLength(ids[i]);
    const slice = ids.slice(i, i + len);
    if (len > 1) {
      try {
        decoder.decode(new Uint8Array(slice));
      } catch {
        len = 1; // not a whole character: show the byte on its own
      }
    }
    runs.push([i, Math.min(len, ids.length - i)]);
    i += len;
  }
  return runs;
}

function chip(label, id) {
  const el = document.createElement("span");
  el.className = "chip";
  const piece = document.createElement("span");
  piece.className = "piece";
  piece.textContent = label === " " ? "␣" : label;
  const num = document.createElement("span");
  num.className = "id";
  num.textContent = id;
  el.append(piece, num);
  el.title = `token ${id}`;
  return el;
}

function renderChips(container, ids, pieces) {
  const frag = document.createDocumentFragment();
  for (const [start, len] of characterRuns(ids)) {
    if (len === 1) {
      frag.append(chip(pieces[start], ids[start]));
      continue;
    }
    const group = document.createElement("span");
    group.className = "char-group";
    const caption = document.createElement("span");
    caption.className = "char";
    caption.textContent = `${decoder.decode(new Uint8Array(ids.slice(start, start + len)))} = ${len} tokens`;
    group.append(caption);
    for (let k = start; k < start + len; k++) group.append(chip(pieces[k], ids[k]));
    frag.append(group);
  }
  container.replaceChildren(frag);
}

export { renderChips, characterRuns };

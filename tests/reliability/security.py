"""Security: nothing a visitor sends is fetched, framed or run."""

import json
import socket
import time
import urllib.parse

from .phase import Phase, address, get, last_message
from .rawws import RawSocket
from .server import Server

NASTY = "<img src=/pwned onerror=\"fetch('/pwned')\"><script>fetch('/pwned')</script>\u202eevil\u202c \x1b[31m\x00 ]]> {{7*7}}"


def security(server: Server, p, browser_check) -> Phase:
    phase = Phase("security")
    # 1. No visitor input reaches a URL the server fetches: a canary listens for any connection.
    canary = socket.socket()
    canary.bind(("127.0.0.1", 0))
    canary.listen()
    canary.settimeout(0.1)
    target = f"http://127.0.0.1:{canary.getsockname()[1]}"
    ws = RawSocket("127.0.0.1", server.port, {"X-Forwarded-For": address(7, 1)})
    for message in ({"type": "generate", "prompt": target, "base_url": target},
                    {"type": "generate", "prompt": f"fetch {target}/v1", "max_tokens": 2}):
        ws.send_json(message)
        last_message(ws)
    ws.vanish()
    for path, body in (("/v1/completions", {"model": target, "prompt": "x"}),
                       ("/v1/completions", {"model": "tiny", "prompt": target, "max_tokens": 2,
                                            "base_url": target, "api_base": target})):
        get(server, path, {"X-Forwarded-For": address(7, 2), "Content-Type": "application/json",
                           "X-Forwarded-Host": target, "Referer": target}, "POST", json.dumps(body).encode())
    for path in (f"/oembed?url={urllib.parse.quote(target)}/r/AAAAAAAAAAAAAAAA", f"/embed?run={target}",
                 f"/embed?prompt={urllib.parse.quote(target)}"):
        get(server, path, {"X-Forwarded-Host": target[7:]})
    time.sleep(1.0)
    try:
        canary.accept()
        fetched = True
    except TimeoutError:
        fetched = False
    canary.close()
    phase.check("no visitor-supplied URL is ever fetched by the server", not fetched)

    # 2. Only /embed and /r/<id> may be framed; every page carries the CSP.
    run_id = store_nasty_run(server)
    frameable = {"/embed?prompt=x", f"/r/{run_id}"}
    for path in sorted(frameable | {"/", f"/r/{run_id}/run.json", "/health", "/v1/models", "/nothing"}):
        headers = get(server, path)[1]
        csp = headers.get("Content-Security-Policy", "")
        if path in frameable:
            ok = "frame-ancestors *" in csp and "X-Frame-Options" not in headers
        else:
            ok = "frame-ancestors 'self'" in csp and headers.get("X-Frame-Options") == "SAMEORIGIN"
        phase.check(f"framing rule and CSP on {path.split('?')[0]}", ok and "script-src 'self'" in csp, csp[-40:])

    # 3. A foreign page's WebSocket is refused before the upgrade.
    foreign = RawSocket("127.0.0.1", server.port, {"Origin": "https://evil.example"})
    phase.check("a foreign Origin's WebSocket gets 403", foreign.status == 403, str(foreign.status))
    foreign.vanish()

    # 4. Markup, control characters and bidi overrides render inertly, in a real browser.
    browser_check(server, phase, run_id, NASTY)
    return phase


def store_nasty_run(server: Server) -> str:
    """A recorded run whose prompt and answer are all markup and control characters."""
    from app.runs import RunStore, new_id

    run_id = new_id()
    messages = [{"type": "queued", "t_ms": 0.1, "position": 1},
                {"type": "tokenized", "t_ms": 0.2, "ids": [60, 98], "pieces": ["<", "b"]},
                {"type": "prefilled", "t_ms": 5.0, "prompt_tokens": 2, "kv_bytes": 147456}]
    for i, piece in enumerate([NASTY[j:j + 9] for j in range(0, len(NASTY), 9)]):
        messages.append({"type": "token", "t_ms": 6.0 + i, "index": i, "id": 60, "text": piece,
                         "kv_bytes": 147456 + 73728 * (i + 1)})
    n = len(messages) - 3
    messages.append({"type": "done", "t_ms": 7.0 + n, "finish_reason": "length",
                     "stats": {"prompt_tokens": 2, "output_tokens": n, "total_ms": 7.0 + n}})
    RunStore(str(server.db), 10_000, 1 << 30).save("gpt2-small", NASTY, {"max_tokens": n, "remote": False},
                                                    messages, run_id, "key")
    return run_id

"""Bad input: every malformed thing a visitor can send, each with its documented answer."""

import json

from .phase import Phase, address, get, last_message
from .rawws import BINARY, TEXT, RawSocket
from .server import Server

BAD_WS = [  # (what, frame opcode, payload, the error's words or a close code)
    ("not JSON", TEXT, b"hello", "not valid JSON"),
    ("binary frame", BINARY, b"\x00\x01", "binary messages are not accepted"),
    ("invalid UTF-8 in a text frame", TEXT, b'{"type": "generate", "prompt": "\xff\xfe"}', 1007),
    ("lone surrogate in the prompt", TEXT, b'{"type": "generate", "prompt": "a\\ud800b"}', "not valid Unicode"),
    ("NaN", TEXT, b'{"type": "generate", "prompt": "x", "temperature": NaN}', "NaN is not a number"),
    ("a 5,000-digit number", TEXT, b'{"type": "generate", "prompt": "x", "max_tokens": 1' + b"0" * 5000 + b"}",
     "number too long"),
    ("1e999", TEXT, b'{"type": "generate", "prompt": "x", "temperature": 1e999}', "finite number"),
    ("nested 100,000 deep", TEXT, b"[" * 30000 + b"]" * 30000, "nested too deeply"),
    ("unknown type", TEXT, b'{"type": "shutdown"}', "unknown message type"),
    ("unknown field", TEXT, b'{"type": "generate", "prompt": "x", "base_url": "http://x"}', "unknown field"),
    ("empty prompt", TEXT, b'{"type": "generate", "prompt": ""}', "prompt is empty"),
    ("prompt beyond the context", TEXT, json.dumps({"type": "generate", "prompt": "x" * 5000}).encode(),
     "the context holds"),
    ("max_tokens as a string", TEXT, b'{"type": "generate", "prompt": "x", "max_tokens": "5"}', "max_tokens must"),
    ("oversized frame", TEXT, b'{"type": "generate", "prompt": "' + b"x" * 70000 + b'"}', 1009),
]

BAD_API = [  # (what, method, path, body, headers, status)
    ("not JSON", "POST", "/v1/completions", b"{nope", {}, 400),
    ("NaN", "POST", "/v1/completions", b'{"model": "tiny", "prompt": "x", "temperature": NaN}', {}, 400),
    ("invalid UTF-8", "POST", "/v1/completions", b'{"model": "tiny", "prompt": "\xff"}', {}, 400),
    ("lone surrogate", "POST", "/v1/completions", b'{"model": "tiny", "prompt": "\\udc00"}', {}, 400),
    ("5,000-digit number", "POST", "/v1/completions",
     b'{"model": "tiny", "prompt": "x", "max_tokens": 1' + b"0" * 5000 + b"}", {}, 400),
    ("nested deep", "POST", "/v1/completions", b"[" * 30000 + b"]" * 30000, {}, 400),
    ("body over 1 MiB", "POST", "/v1/completions", b" " * (1024 * 1024 + 1), {}, 413),
    ("unknown model", "POST", "/v1/completions", b'{"model": "gpt-5", "prompt": "x"}', {}, 404),
    ("wrong method", "GET", "/v1/completions", None, {}, 405),
    ("unknown API path", "GET", "/v1/nothing", None, {}, 404),
    ("unknown run", "GET", "/r/AAAAAAAAAAAAAAAA", None, {}, 404),
    ("malformed run id", "GET", "/r/%00%ff<script>", None, {}, 404),
    ("traversal in a run URL", "GET", "/r/..%2F..%2Fapp%2Fconfig.py", None, {}, 404),
    ("traversal in a static URL", "GET", "/static/..%2F..%2Fapp%2Fconfig.py", None, {}, 404),
    ("traversal, raw dots", "GET", "/static/../../app/config.py", None, {}, 404),
    ("embed: invalid percent-encoding", "GET", "/embed?prompt=%ff%fe%zz", None, {}, 200),
    ("embed: NUL in the prompt", "GET", "/embed?prompt=a%00b", None, {}, 200),
    ("embed: a 3,000-character prompt", "GET", "/embed?prompt=" + "x" * 3000, None, {}, 400),
    ("embed: a 100 KB query string", "GET", "/embed?prompt=" + "x" * 100_000, None, {}, 414),  # gunicorn's limit
    ("embed: max_tokens 1e309", "GET", "/embed?prompt=x&max_tokens=1e309", None, {}, 400),
    ("embed: theme markup", "GET", "/embed?prompt=x&theme=%3Cscript%3E", None, {}, 400),
    ("embed: run traversal", "GET", "/embed?run=../../etc/passwd", None, {}, 404),
    ("embed: run and prompt repeated", "GET", "/embed?run=a&run=b&prompt=x", None, {}, 400),
    ("oembed: foreign URL", "GET", "/oembed?url=http%3A%2F%2Fevil.example%2Fr%2FAAAAAAAAAAAAAAAA", None, {}, 404),
    ("client times: no key", "POST", "/r/AAAAAAAAAAAAAAAA/client-times", b"{}", {}, 404),
    ("client times: not JSON", "POST", "/r/AAAAAAAAAAAAAAAA/client-times", b"{nope", {}, 400),
    ("oembed: format=xml", "GET", "/oembed?url=x&format=xml", None, {}, 501),
    ("run: query-string abuse", "GET", "/r/AAAAAAAAAAAAAAAA?%00=%ff&speed=%3Cscript%3E", None, {}, 404),
    ("header abuse: 10 KB cookie", "GET", "/embed?prompt=x", None, {"Cookie": "a=" + "x" * 10_000}, 431),
    ("header abuse: garbage X-Forwarded-For", "GET", "/health", None, {"X-Forwarded-For": "<script>, ::::, 999.1"}, 200),
    ("header abuse: odd Host", "GET", "/embed?prompt=x", None, {"Host": "evil.example:99999"}, 200),
]


def bad_input(server: Server, p) -> Phase:
    phase = Phase("bad input")
    for what, opcode, payload, expected in BAD_WS:
        ws = RawSocket("127.0.0.1", server.port, {"X-Forwarded-For": address(6, 1)})
        ws.send_frame(opcode, payload)
        message = ws.read_message()
        if isinstance(expected, int):  # the socket closes with this code
            passed, got = message is None and ws.close_code == expected, f"close {getattr(ws, 'close_code', None)}"
        else:
            passed = message is not None and message["type"] == "error" and expected in message["message"]
            ws.send_json({"type": "generate", "prompt": "still usable?", "max_tokens": 2})  # and it carries on
            passed = passed and last_message(ws)["type"] == "done"
            got = (message or {}).get("message", "closed")
        ws.vanish()
        phase.check(f"page: {what}", passed, got[:120])
    for what, method, path, body, headers, expected in BAD_API:
        status, _, text = get(server, path, {"X-Forwarded-For": address(6, 2), **headers},
                                             method, body)
        clean = (status < 500 or status == 501) and b"Traceback" not in text  # 501: oEmbed's "format not served"
        if path.startswith("/v1/") and status >= 400:
            clean = clean and "error" in json.loads(text)
        phase.check(f"{method} {what}", clean and status == expected, f"{status}")
    phase.figures["cases"] = len(BAD_WS) + len(BAD_API)
    phase.figures["answered as documented"] = sum(ok for _, ok, _ in phase.checks)
    engine = server.metrics()
    phase.check("no request left running after all of it", engine["running"] == engine["waiting"] == 0, str(engine))
    return phase

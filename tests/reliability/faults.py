"""Faults: clients that vanish mid-answer, stop reading, never send, never answer a ping."""

import json
import socket
import time
from concurrent.futures import ThreadPoolExecutor

from .phase import Phase, address, wait_until_idle, warm_pool
from .rawws import RawSocket, drop
from .server import Server


def vanish(server: Server, n: int, max_tokens: int) -> bool:
    """A client that leaves after two tokens of a longer answer, four ways in
    turn; False if it never got that far (refused, or the answer was short)."""
    way = n % 4
    if way < 2:  # a page: closed socket, or reset connection
        ws = RawSocket("127.0.0.1", server.port, {"X-Forwarded-For": address(3, n)})
        ws.send_json({"type": "generate", "prompt": "leaving soon", "max_tokens": max_tokens})
        tokens = 0
        while tokens < 2:
            message = ws.read_message()
            if message is None or message["type"] in ("done", "error", "busy"):
                break
            tokens += message["type"] == "token"
        ws.vanish(reset=way == 1)
        return tokens == 2
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=30)  # an API stream, half read
    body = json.dumps({"model": "tiny", "prompt": "leaving soon", "max_tokens": max_tokens, "stream": True}).encode()
    sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"X-Forwarded-For: " + address(3, n).encode() + b"\r\nContent-Length: " + str(len(body)).encode() +
                 b"\r\n\r\n" + body)
    received = b""
    while received.count(b"data: ") < 2:
        chunk = sock.recv(4096)
        if not chunk:
            break
        received += chunk
    drop(sock, reset=way == 3)
    return received.count(b"data: ") >= 2


def faults(server: Server, p) -> Phase:
    phase = Phase("faults")
    warm_pool(server, p.fault_pool)
    baseline = server.sample()
    with ThreadPoolExecutor(p.fault_concurrency) as pool:
        left = list(pool.map(vanish, [server] * p.vanish, range(p.vanish), [p.vanish_tokens] * p.vanish))
    # Clients that stay: some stop reading mid-answer, some never send anything at all.
    stalled = []
    for n in range(p.stall):
        ws = RawSocket("127.0.0.1", server.port, {"X-Forwarded-For": address(4, n)})
        ws.send_json({"type": "generate", "prompt": "then I stop reading", "max_tokens": p.vanish_tokens})
        stalled.append(ws.sock)  # never read again, never closed: its pings go unanswered too
    silent_ws, silent_tcp = [], []
    for n in range(p.silent):
        if n % 2:
            silent_tcp.append(socket.create_connection(("127.0.0.1", server.port)))  # not even an HTTP request
        else:
            silent_ws.append(RawSocket("127.0.0.1", server.port, {"X-Forwarded-For": address(5, n)}).sock)
    held = time.monotonic()
    time.sleep(p.hold_s / 2)
    during = server.metrics()
    time.sleep(p.hold_s / 2)  # by now every WebSocket has missed at least one pong
    dropped = sum(closed_by_server(sock) for sock in stalled + silent_ws)
    for sock in stalled + silent_ws + silent_tcp:
        sock.close()
    phase.figures.update({
        "vanished mid-answer (closed / reset / half-read SSE / reset SSE)": p.vanish,
        "stopped reading / never sent": f"{p.stall} / {p.silent}, held {time.monotonic() - held:.0f} s",
        "engine while they were held": f"running {during['running']:.0f}, waiting {during['waiting']:.0f}",
        "WebSockets the server dropped for unanswered pings": f"{dropped} of {len(stalled) + len(silent_ws)}",
    })
    phase.check("every WebSocket that never answered a ping was dropped by the server",
                dropped == len(stalled) + len(silent_ws), f"{dropped}")
    phase.check("every vanishing client left mid-answer (after 2 of its tokens)", all(left),
                f"{sum(left)} of {len(left)}")
    wait_until_idle(server, phase, baseline)
    return phase


def closed_by_server(sock: socket.socket) -> bool:
    """Whether the server has closed this connection (whatever it sent before is read and dropped)."""
    sock.settimeout(2)
    try:
        while sock.recv(1 << 16):
            pass
        return True
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False

"""A WebSocket client written down to the bytes, for clients no library
would play: ones that never answer a ping, never read, send invalid UTF-8 or
a frame of any size, or vanish with a TCP reset."""

import base64
import json
import os
import socket
import struct

TEXT, BINARY, CLOSE = 0x1, 0x2, 0x8  # opcodes; this client never answers a ping


class RawSocket:
    def __init__(self, host: str, port: int, headers: dict | None = None, timeout: float = 10):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        lines = ["GET /ws HTTP/1.1", f"Host: {host}:{port}", "Upgrade: websocket", "Connection: Upgrade",
                 f"Sec-WebSocket-Key: {key}", "Sec-WebSocket-Version: 13"]
        lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
        self.buffer = b""
        try:
            self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
            head = self._read_until(b"\r\n\r\n")
        except OSError:
            self.sock.close()
            raise
        self.status = int(head.split(b" ", 2)[1])

    def _read_until(self, marker: bytes) -> bytes:
        while marker not in self.buffer:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed during the handshake")
            self.buffer += chunk
        head, self.buffer = self.buffer.split(marker, 1)
        return head

    def _read_exactly(self, n: int) -> bytes:
        while len(self.buffer) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed")
            self.buffer += chunk
        data, self.buffer = self.buffer[:n], self.buffer[n:]
        return data

    def send_frame(self, opcode: int, payload: bytes):
        """One final, masked frame (clients must mask)."""
        n = len(payload)
        header = bytes([0x80 | opcode])
        if n < 126:
            header += bytes([0x80 | n])
        elif n < 1 << 16:
            header += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            header += bytes([0x80 | 127]) + struct.pack(">Q", n)
        mask = os.urandom(4)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload)) if n < 1 << 16 else \
            (int.from_bytes(payload, "big") ^ int.from_bytes((mask * (n // 4 + 1))[:n], "big")).to_bytes(n, "big")
        self.sock.sendall(header + mask + masked)

    def send_json(self, message: dict):
        self.send_frame(TEXT, json.dumps(message).encode())

    def read_frame(self) -> tuple[int, bytes]:
        """The next frame, pings included (never answered: that is the point)."""
        first, second = self._read_exactly(2)
        n = second & 0x7F
        if n == 126:
            n = struct.unpack(">H", self._read_exactly(2))[0]
        elif n == 127:
            n = struct.unpack(">Q", self._read_exactly(8))[0]
        return first & 0x0F, self._read_exactly(n)

    def read_message(self) -> dict | None:
        """The next JSON message, skipping pings; None when the server closes."""
        while True:
            opcode, payload = self.read_frame()
            if opcode == TEXT:
                return json.loads(payload)
            if opcode == CLOSE:
                self.close_code = struct.unpack(">H", payload[:2])[0] if len(payload) >= 2 else None
                return None

    def vanish(self, reset: bool = False):
        """Drop the connection without a closing handshake."""
        drop(self.sock, reset)


def drop(sock: socket.socket, reset: bool = False):
    """Close a connection as a client that vanishes does; with `reset`, as a TCP RST."""
    if reset:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()

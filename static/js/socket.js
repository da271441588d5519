// The page's WebSocket to /ws: JSON in and out, reconnecting after a drop.

const RETRY_MS = [500, 1000, 2000, 5000];

class FactorySocket {
  constructor({ onMessage, onOpen, onClose }) {
    this.handlers = { onMessage, onOpen, onClose };
    this.attempt = 0;
    this.connect();
  }

  get url() {
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    return `${scheme}//${location.host}/ws`;
  }

  connect() {
    const ws = new WebSocket(this.url);
    this.ws = ws;
    ws.addEventListener("open", () => {
      this.attempt = 0;
      this.handlers.onOpen();
    });
    ws.addEventListener("message", (e) => {
      let message;
      try {
        message = JSON.parse(e.data);
      } catch {
        return; // the server only sends JSON; anything else is not ours to show
      }
      this.handlers.onMessage(message, performance.now());
    });
    ws.addEventListener("close", (e) => {
      this.handlers.onClose(e);
      const wait = RETRY_MS[Math.min(this.attempt++, RETRY_MS.length - 1)];
      setTimeout(() => this.connect(), wait);
    });
  }

  get open() {
    return this.ws.readyState === WebSocket.OPEN;
  }

  send(message) {
    this.ws.send(JSON.stringify(message));
  }
}

export { FactorySocket };

"""Stop strings: the answer ends where one of them first appears.

Text is streamed as it is typed, so a piece that might be the start of a stop
string is held back until the next tokens show whether it is one; the stop
string itself is never shown (as in the OpenAI API).
"""


class StopStrings:
    def __init__(self, stops: tuple[str, ...] = ()):
        self.stops = stops
        self.held = ""

    def feed(self, text: str) -> tuple[str, bool]:
        """Take the newly decoded `text`; return what may be shown now and
        whether a stop string has appeared (everything from it on is dropped)."""
        if not self.stops:
            return text, False
        buffer = self.held + text
        hits = [buffer.find(s) for s in self.stops if s in buffer]
        if hits:
            self.held = ""
            return buffer[: min(hits)], True
        keep = max((n for s in self.stops for n in range(1, len(s)) if buffer.endswith(s[:n])), default=0)
        self.held = buffer[len(buffer) - keep :]
        return buffer[: len(buffer) - keep], False

    def flush(self) -> str:
        """The held-back text, once the answer has ended without a stop."""
        held, self.held = self.held, ""
        return held

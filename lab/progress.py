"""One status line per variant: what step it is in and for how long.

On a terminal the line is redrawn in place; elsewhere (CI logs) each step
change prints once, so logs stay short.
"""
from __future__ import annotations

import sys
import threading
import time


class Progress:
    def __init__(self, name: str, stream=sys.stderr) -> None:
        self.name = name
        self.stream = stream
        self.tty = stream.isatty()
        self.start = time.monotonic()
        self.step = ""
        self.detail = ""
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        if self.tty:
            self._ticker = threading.Thread(target=self._tick, daemon=True)
            self._ticker.start()

    def elapsed(self) -> str:
        secs = int(time.monotonic() - self.start)
        return f"{secs // 60}m{secs % 60:02d}s"

    def set(self, step: str, detail: str = "") -> None:
        with self._lock:
            changed = step != self.step
            self.step, self.detail = step, detail
        if self.tty:
            self._draw()
        elif changed:
            print(f"{self.name}: {step} ({self.elapsed()})", file=self.stream,
                  flush=True)

    def note(self, detail: str) -> None:
        """Update the detail (e.g. the file being compiled) quietly."""
        with self._lock:
            self.detail = detail

    def _draw(self) -> None:
        with self._lock:
            text = f"{self.name}: {self.step} {self.elapsed()} {self.detail}"
        self.stream.write("\r\033[K" + text[:120])
        self.stream.flush()

    def _tick(self) -> None:
        while not self._stop.wait(1.0):
            self._draw()

    def finish(self, outcome: str) -> None:
        self._stop.set()
        if self._ticker:
            self._ticker.join()
            self.stream.write("\r\033[K")
        print(f"{self.name}: {outcome} ({self.elapsed()})", file=self.stream,
              flush=True)

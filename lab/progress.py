"""One status line per variant: what step it is in and for how long.

On a terminal the line is redrawn in place; elsewhere (CI logs) each step
change prints once, so logs stay short.
"""
from __future__ import annotations

import sys
import threading
import time
from typing import TextIO


# Off a terminal, a long step still says how far it is this often.
LOG_EVERY_S = 30.0


class Progress:
    def __init__(self, name: str, stream: TextIO = sys.stderr) -> None:
        self.name = name
        self.stream = stream
        self.tty = stream.isatty()
        self.start = time.monotonic()
        self.step = ""
        self.step_start = self.start
        self.detail = ""
        self.done = 0
        self.expected: int | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker = threading.Thread(target=self._tick, daemon=True)
        self._ticker.start()

    def elapsed(self) -> str:
        secs = int(time.monotonic() - self.start)
        return f"{secs // 60}m{secs % 60:02d}s"

    def set(self, step: str, detail: str = "") -> None:
        with self._lock:
            changed = step != self.step
            self.step, self.detail = step, detail
            if changed:
                self.step_start = time.monotonic()
                self.done, self.expected = 0, None
        if self.tty:
            self._draw()
        elif changed:
            print(f"{self.name}: {step} ({self.elapsed()})", file=self.stream,
                  flush=True)

    def note(self, detail: str) -> None:
        """Update the detail (e.g. the file being compiled) quietly."""
        with self._lock:
            self.detail = detail

    def count(self, done: int, expected: int | None) -> None:
        """Units of the step done (objects compiled), against what a
        comparable earlier run of it did (None: unknown)."""
        with self._lock:
            self.done, self.expected = done, expected

    def counted(self) -> str:
        """'412/1043 objects, ETA 2m10s' (or '412 objects')."""
        with self._lock:
            done, expected = self.done, self.expected
            spent = time.monotonic() - self.step_start
        if not done:
            return ""
        if not expected or done >= expected:
            return f"{done} objects"
        eta = int(spent / done * (expected - done))
        return f"{done}/{expected} objects, ETA {eta // 60}m{eta % 60:02d}s"

    def _draw(self) -> None:
        with self._lock:
            step, detail = self.step, self.detail
        text = f"{self.name}: {step} {self.elapsed()} {self.counted()} " \
            f"{detail}"
        self.stream.write("\r\033[K" + text[:120])
        self.stream.flush()

    def _tick(self) -> None:
        every = 1.0 if self.tty else LOG_EVERY_S
        while not self._stop.wait(every):
            if self.tty:
                self._draw()
            elif self.counted():
                print(f"{self.name}: {self.step} ({self.elapsed()}), "
                      f"{self.counted()}", file=self.stream, flush=True)

    def finish(self, outcome: str) -> None:
        self._stop.set()
        self._ticker.join()
        if self.tty:
            self.stream.write("\r\033[K")
        print(f"{self.name}: {outcome} ({self.elapsed()})", file=self.stream,
              flush=True)

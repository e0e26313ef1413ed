"""Stage messages of a certification on stderr, and the time each stage took."""

from __future__ import annotations

import sys
import time


class Progress:
    """Stage messages on stderr (``progress=False`` silences them)."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.t0 = time.monotonic()
        self.timings: dict[str, float] = {}
        self._stage: str | None = None
        self._stage_t0 = 0.0

    def stage(self, name: str, message: str) -> None:
        self._close()
        self._stage, self._stage_t0 = name, time.monotonic()
        self.say(message)

    def say(self, message: str) -> None:
        if self.enabled:
            print(f"certify [{time.monotonic() - self.t0:6.1f}s] {message}", file=sys.stderr, flush=True)

    def steps(self, i: int, n: int) -> None:
        if self.enabled and n >= 50 and (i == n or i % max(1, n // 10) == 0):
            self.say(f"  {i}/{n} steps")

    def _close(self) -> None:
        if self._stage is not None:
            self.timings[self._stage] = round(time.monotonic() - self._stage_t0, 3)
            self._stage = None

    def finish(self) -> dict[str, float]:
        self._close()
        self.timings["total"] = round(time.monotonic() - self.t0, 3)
        return self.timings


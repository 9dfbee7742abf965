"""`Progbar`: Keras's progress bar. On a terminal it redraws one line per step:

     12/40 ━━━━━━────────────── 3s elapsed, ETA 7s, 251ms/step - accuracy: 0.4531 - loss: 1.0612

and ends the epoch with `40/40 ━━━━━━━━━━━━━━━━━━━━ 10s 250ms/step - ...`. When the output is
not a terminal (a log file, a pipe, CI) it writes only that last line, without the bar:
`40/40 - 10s - 250ms/step - accuracy: 0.4531 - loss: 1.0612` (Keras's verbose=2).
"""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO


def format_duration(seconds: float) -> str:
    """3s, 1:05, 1:02:03."""
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds}s"
    minutes, secs = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}:{secs:02d}"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}"


def format_per_step(seconds: float, unit: str) -> str:
    if seconds >= 1:
        return f"{seconds:.0f}s/{unit}"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.0f}ms/{unit}"
    return f"{seconds * 1e6:.0f}us/{unit}"


def format_logs(values: Any) -> str:
    parts = []
    for name, value in values.items() if isinstance(values, dict) else values or []:
        try:
            v = float(value)
        except (TypeError, ValueError):
            continue
        parts.append(f" - {name}: {v:.4f}" if abs(v) > 1e-3 or v == 0 else f" - {name}: {v:.4e}")
    return "".join(parts)


class Progbar:
    """A progress bar over `target` steps.

    Args:
      target: the number of steps (None: unknown).
      width: the bar's width in characters.
      verbose: 1 (the bar) or 2 (one line at the end only).
      interval: the least time between two redraws, in seconds.
      unit_name: "step" or "sample".
      stream: where to write (default sys.stdout).
      dynamic: redraw in place (default: whether `stream` is a terminal).
    """

    def __init__(
        self,
        target: int | None,
        width: int = 20,
        verbose: int = 1,
        interval: float = 0.05,
        unit_name: str = "step",
        stream: TextIO | None = None,
        dynamic: bool | None = None,
        initial: int = 0,
    ):
        self.target = target
        self.width = width
        self.verbose = verbose
        self.interval = interval
        self.unit_name = unit_name
        self.stream = stream or sys.stdout
        if dynamic is None:
            isatty = getattr(self.stream, "isatty", None)
            dynamic = bool(isatty and isatty())
        self.dynamic = dynamic and verbose == 1
        self._start = time.time()
        self._last_draw = 0.0
        self._initial = initial  # steps done before this bar started (a resumed epoch)
        self._first_step_end: float | None = None
        self._previous_width = 0

    def _per_step(self, current: int, now: float) -> float:
        done = current - self._initial
        if done <= 0:
            return 0.0
        # The first step of a run often includes compilation; leave it out when we can.
        if self._first_step_end is not None and done > 1:
            return (now - self._first_step_end) / (done - 1)
        return (now - self._start) / done

    def update(self, current: int, values: Any = None, finalize: bool | None = None) -> None:
        """Shows step `current` with the logs `values` (a dict or (name, value) pairs)."""
        now = time.time()
        if self._first_step_end is None and current > self._initial:
            self._first_step_end = now
        if finalize is None:
            finalize = self.target is not None and current >= self.target
        if self.verbose == 0:
            return
        if not finalize and (not self.dynamic or now - self._last_draw < self.interval):
            return
        self._last_draw = now
        elapsed = now - self._start
        per_step = self._per_step(current, now)
        logs = format_logs(values)
        count = (
            f"{current}"
            if self.target is None
            else f"{current:>{len(str(self.target))}}/{self.target}"
        )
        if not self.dynamic:
            self.stream.write(
                f"{count} - {format_duration(elapsed)}"
                f" - {format_per_step(per_step, self.unit_name)}{logs}\n"
            )
            self.stream.flush()
            return
        bar = self._bar(current)
        if finalize:
            info = f"{format_duration(elapsed)} {format_per_step(per_step, self.unit_name)}"
        else:
            eta = per_step * (self.target - current) if self.target else 0.0
            info = (
                f"{format_duration(elapsed)} elapsed, ETA {format_duration(eta)},"
                f" {format_per_step(per_step, self.unit_name)}"
            )
        line = f"{count} {bar} {info}{logs}"
        padding = " " * max(0, self._previous_width - len(line))
        self._previous_width = len(line)
        self.stream.write(f"\r{line}{padding}" + ("\n" if finalize else ""))
        self.stream.flush()

    def _bar(self, current: int) -> str:
        if not self.target:
            return ""
        done = int(self.width * min(current, self.target) / self.target)
        return "━" * done + "─" * (self.width - done)

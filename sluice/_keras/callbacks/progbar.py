"""`Progbar`: Keras 3's progress bar. On a terminal it redraws one line per step:

     12/40 ━━━━━━━━━━━━━━━━━━━━ 7s 251ms/step - accuracy: 0.4531 - loss: 1.0612

the count in bold, the bar's done part green and the rest grey (ANSI colours), then the ETA in
bold and the time per step; the epoch ends with the elapsed time in place of the ETA:
`40/40 ━━━━━━━━━━━━━━━━━━━━ 10s 250ms/step - ...`. As in Keras, the values shown during the epoch
are averages over the steps seen so far (names in `stateful_metrics` are shown as given), and
the last line shows the values given at the end.

When the output is not a terminal (a log file, a pipe, CI) it writes only that last line,
without the bar: `40/40 - 10s - 250ms/step - accuracy: 0.4531 - loss: 1.0612` (Keras's
verbose=2). So does a bar on stdout after `sl.config.disable_interactive_logging()`, to the
"sluice" logger at INFO level instead of stdout (Keras logs to absl).
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Iterable
from typing import Any, TextIO

from sluice._export import export
from sluice._keras import config
from sluice._keras.utils import io_utils

BOLD, GREEN, GREY, RESET = "\x1b[1m", "\x1b[32m", "\x1b[37m", "\x1b[0m"


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


def format_eta(seconds: float) -> str:
    """Keras's ETA: whole seconds up to a minute ("7s"), then "1:05", then "1:02:03"."""
    seconds = int(seconds)
    if seconds > 3600:
        return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"
    if seconds > 60:
        return f"{seconds // 60}:{seconds % 60:02d}"
    return f"{seconds}s"


def format_per_step(seconds: float, unit: str) -> str:
    if seconds >= 1:
        return f"{seconds:.0f}s/{unit}"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.0f}ms/{unit}"
    return f"{seconds * 1e6:.0f}us/{unit}"


def _numbers(values: Any) -> list[tuple[str, float]]:
    """(name, float) pairs of a dict or pairs, skipping what is not a number."""
    pairs = values.items() if isinstance(values, dict) else values or []
    out = []
    for name, value in pairs:
        try:
            out.append((name, float(value)))
        except (TypeError, ValueError):
            continue
    return out


def format_logs(values: Any) -> str:
    parts = []
    for name, v in _numbers(values):
        parts.append(f" - {name}: {v:.4f}" if abs(v) > 1e-3 or v == 0 else f" - {name}: {v:.4e}")
    return "".join(parts)


@export("utils.Progbar")
class Progbar:
    """A progress bar over `target` steps (`keras.utils.Progbar`).

    Args:
      target: the number of steps (None: unknown).
      width: the bar's width in characters.
      verbose: 1 (the bar) or 2 (one line at the end only).
      interval: the least time between two redraws, in seconds.
      unit_name: "step" or "sample".
      stream: where to write (default sys.stdout, or the "sluice" logger while interactive
        logging is disabled).
      dynamic: redraw in place (default: whether `stream` is a terminal).
      initial: steps done before this bar started (a resumed epoch).
      stateful_metrics: names whose values are shown as given during the epoch, not averaged.

    >>> import io
    >>> out = io.StringIO()
    >>> bar = Progbar(2, stream=out, dynamic=False)
    >>> bar.update(1, {"loss": 0.5}); bar.update(2, {"loss": 0.25})
    >>> out.getvalue().startswith("2/2 - 0s - ")
    True
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
        stateful_metrics: Iterable[str] | None = None,
    ):
        self.target = target
        self.width = width
        self.verbose = verbose
        self.interval = interval
        self.unit_name = unit_name
        # a bar for stdout follows `sl.config.disable_interactive_logging()`: lines to the log
        self._logged = stream is None and not config.is_interactive_logging_enabled()
        self.stream = stream or sys.stdout
        if self._logged:
            dynamic = False
        if dynamic is None:
            isatty = getattr(self.stream, "isatty", None)
            dynamic = bool(isatty and isatty())
        self.dynamic = dynamic and verbose == 1
        self.stateful_metrics = set(stateful_metrics or ())
        self._start = time.time()
        self._last_draw = 0.0
        self._initial = initial
        self._seen = initial
        self._current = initial  # the last step given to update (for `add`)
        self._first_step_end: float | None = None
        self._previous_width = 0
        self._sums: dict[str, list[float]] = {}  # name -> [weighted sum, steps]

    def _per_step(self, current: int, now: float) -> float:
        done = current - self._initial
        if done <= 0:
            return 0.0
        # The first step of a run often includes compilation; leave it out when we can.
        if self._first_step_end is not None and done > 1:
            return (now - self._first_step_end) / (done - 1)
        return (now - self._start) / done

    def _averaged(self, current: int, values: Any, finalize: bool) -> list[tuple[str, float]]:
        """Keras's running display: each value weighted by the steps since the last update."""
        steps = max(current - self._seen, 1)
        for name, v in _numbers(values):
            if finalize or name in self.stateful_metrics:
                self._sums[name] = [v, 1]
            elif name not in self._sums:
                self._sums[name] = [v * steps, steps]
            else:
                self._sums[name][0] += v * steps
                self._sums[name][1] += steps
        self._seen = current
        return [(name, total / max(count, 1)) for name, (total, count) in self._sums.items()]

    def _write(self, text: str) -> None:
        if self._logged:
            io_utils.print_msg(text, line_break=False)
            return
        self.stream.write(text)
        self.stream.flush()

    def add(self, n: int, values: Any = None) -> None:
        """Advances the bar by `n` steps (`update(seen + n, values)`)."""
        self.update(self._current + n, values)

    def update(self, current: int, values: Any = None, finalize: bool | None = None) -> None:
        """Shows step `current` with the logs `values` (a dict or (name, value) pairs)."""
        now = time.time()
        self._current = current
        if self._first_step_end is None and current == self._initial + 1:
            self._first_step_end = now  # only a lone first step can be left out (Keras's rule)
        if finalize is None:
            finalize = self.target is not None and current >= self.target
        if self.verbose == 0:
            return
        shown = self._averaged(current, values, finalize) if self.dynamic else values
        if not finalize and (not self.dynamic or now - self._last_draw < self.interval):
            return
        self._last_draw = now
        per_step = self._per_step(current, now)
        if self.dynamic:
            self._draw(current, now, per_step, shown, finalize)
            return
        count = (
            f"{current}"
            if self.target is None
            else f"{current:>{len(str(self.target))}}/{self.target}"
        )
        self._write(
            f"{count} - {format_duration(now - self._start)}"
            f" - {format_per_step(per_step, self.unit_name)}{format_logs(shown)}\n"
        )

    def _draw(self, current: int, now: float, per_step: float, shown: list, finalize: bool):
        """One terminal line, as Keras 3 draws it; `visible` counts what is not an escape."""
        if self.target:
            digits = int(math.log10(self.target)) + 1
            count = f"{current:>{digits}}/{self.target}"
            done = int(self.width * min(current, self.target) / self.target)
            bar = f"{BOLD}{count}{RESET} " + (f"{GREEN}{'━' * done}{RESET}" if done else "")
            bar += f"{GREY}{'━' * (self.width - done)}{RESET}"
            visible = len(count) + 1 + self.width
        else:
            bar = f"{current:7d}/Unknown"
            visible = len(bar)
        if self.target and not finalize:
            clock = format_eta(per_step * (self.target - current))
        else:
            clock = f"{now - self._start:.0f}s"
        per = (
            f"{per_step:.0f}s/{self.unit_name}"
            if per_step == 0
            else format_per_step(per_step, self.unit_name)
        )
        logs = "".join(
            f" - {k}: {v:.4f}" if abs(v) > 1e-3 else f" - {k}: {v:.4e}" for k, v in shown
        )
        info = f" {BOLD}{clock}{RESET} {per}{logs}"
        visible += len(info) - len(BOLD) - len(RESET)
        padding = " " * max(0, self._previous_width - visible)
        back = "\b" * self._previous_width  # as Keras writes it (the "\r" alone would do)
        self._previous_width = visible
        self._write(f"{back}\r{bar}{info}{padding}" + ("\n" if finalize else ""))

"""When a periodic hook fires: every N seconds or every N global steps (TF1's
`SecondOrStepTimer`), counted from the step it last fired at."""

from __future__ import annotations

import time

from sluice._export import export


@export("train.SecondOrStepTimer")
class SecondOrStepTimer:
    """Fires every `every_secs` seconds or every `every_steps` steps (exactly one of them).

    It always fires the first time it is asked, never twice for the same step.

    Raises:
      ValueError: neither or both of every_secs and every_steps are given.
    """

    def __init__(self, every_secs: float | None = None, every_steps: int | None = None):
        if every_secs is None and every_steps is None:
            raise ValueError("Either every_secs or every_steps should be provided.")
        if every_secs is not None and every_steps is not None:
            raise ValueError("Can not provide both every_secs and every_steps.")
        self._every_secs = every_secs
        self._every_steps = every_steps
        self.reset()

    def reset(self) -> None:
        self._last_triggered_step: int | None = None
        self._last_triggered_time: float | None = None

    def should_trigger_for_step(self, step: int) -> bool:
        if self._last_triggered_step is None:
            return True
        if self._last_triggered_step == step:
            return False
        if self._every_secs is not None:
            return time.time() >= self._last_triggered_time + self._every_secs
        return step >= self._last_triggered_step + self._every_steps

    def update_last_triggered_step(self, step: int) -> tuple[float | None, int | None]:
        """Records a firing at `step`; returns (seconds, steps) since the previous one, or
        (None, None) for the first."""
        now = time.time()
        if self._last_triggered_time is None:
            elapsed = (None, None)
        else:
            elapsed = (now - self._last_triggered_time, step - self._last_triggered_step)
        self._last_triggered_time = now
        self._last_triggered_step = step
        return elapsed

    def last_triggered_step(self) -> int | None:
        return self._last_triggered_step


class NeverTriggerTimer(SecondOrStepTimer):
    """A timer that never fires (for hooks that act only at the end)."""

    def __init__(self):
        self.reset()

    def should_trigger_for_step(self, step: int) -> bool:
        return False

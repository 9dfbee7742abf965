"""The Supervisor's standard services, each a `LooperThread` on the Supervisor's coordinator
(TF1's SVSummaryThread, SVStepCounterThread, SVTimerCheckpointThread), and the session they
share with the training loop.

The services run the session from their own threads while the training loop runs it too. A
step is not safe to run beside another that touches the same variables (the compiled step
donates the variables' buffers to XLA, so a concurrent read may find them deleted): the
Supervisor hands out a `SerializedSession`, whose runs take turns. A sluice `Session` already
runs one step at a time and waits on queues outside its step lock, so its runs go straight
through: a user's thread blocked feeding a full queue must not stop the training loop's
dequeue (TF1's Supervisor hands out a plain session). Queue runners get the raw session.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from sluice._keras.optimizers.training_util import global_step as read_global_step
from sluice._tf1.training import summary_writers
from sluice._tf1.training.coordinator import LooperThread
from sluice.framework.ir.default_session import default_session
from sluice.framework.session import Session

_logger = logging.getLogger("sluice")


class SerializedSession:
    """A `Session` whose `run` calls take turns on `lock`; everything else is the session's.

    `raw_session` is the session itself, for threads whose runs may block (queue runners).
    """

    def __init__(self, session: Any, lock: threading.RLock):
        self._session = session
        self._lock = lock
        self._context_managers: list[Any] = []

    @property
    def raw_session(self) -> Any:
        return self._session

    @property
    def graph(self) -> Any:
        return self._session.graph

    def run(
        self,
        fetches: Any,
        feed_dict: dict | None = None,
        options: Any = None,
        run_metadata: Any = None,
    ) -> Any:
        if isinstance(self._session, Session):  # takes turns itself, host ops outside its lock
            return self._session.run(
                fetches, feed_dict=feed_dict, options=options, run_metadata=run_metadata
            )
        with self._lock:
            return self._session.run(
                fetches, feed_dict=feed_dict, options=options, run_metadata=run_metadata
            )

    def as_default(self) -> Any:
        """Makes this (serialized) session the default, so `Tensor.eval()` takes turns too."""
        return default_session(self)

    def close(self) -> None:
        self._session.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)

    def __enter__(self) -> "SerializedSession":
        graph_cm, session_cm = self.graph.as_default(), self.as_default()
        graph_cm.__enter__()
        session_cm.__enter__()
        self._context_managers.append((graph_cm, session_cm))
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        graph_cm, session_cm = self._context_managers.pop()
        session_cm.__exit__(exc_type, exc, tb)
        graph_cm.__exit__(exc_type, exc, tb)
        self.close()


class SVSummaryThread(LooperThread):
    """Every save_summaries_secs: runs the summary op (with the global step) and writes it."""

    def __init__(self, sv: Any, sess: Any):
        super().__init__(sv.coord, sv.save_summaries_secs)
        self._sv = sv
        self._sess = sess

    def run_loop(self) -> None:
        if self._sv.global_step is not None:
            summary, step = self._sess.run([self._sv.summary_op, self._sv.global_step])
        else:
            summary, step = self._sess.run(self._sv.summary_op), None
        if self._sv.summary_writer:
            _logger.info("Recording summary at step %s.", step)
            self._sv.summary_writer.add_summary(summary, step)


class SVStepCounterThread(LooperThread):
    """Every save_summaries_secs: writes global steps per second as `<step name>/sec`."""

    def __init__(self, sv: Any, sess: Any, step_counter: Any = None):
        super().__init__(sv.coord, sv.save_summaries_secs)
        self._sv = sv
        self._sess = sess
        self._step_counter = sv.global_step if step_counter is None else step_counter
        self._summary_tag = f"{self._step_counter.op.name}/sec"
        self._last_time = 0.0
        self._last_step = 0
        self._logged = 0

    def start_loop(self) -> None:
        self._last_time = time.time()
        self._last_step = read_global_step(self._sess, self._step_counter)

    def run_loop(self) -> None:
        step = read_global_step(self._sess, self._step_counter)
        added_steps, self._last_step = step - self._last_step, step
        now = time.time()
        elapsed, self._last_time = now - self._last_time, now
        steps_per_sec = added_steps / elapsed if elapsed > 0 else float("inf")
        if self._sv.summary_writer:
            summary_writers.add_scalar(
                self._sv.summary_writer, self._summary_tag, steps_per_sec, step
            )
        if self._logged < 10:
            self._logged += 1
            _logger.info("%s: %g", self._summary_tag, steps_per_sec)


class SVTimerCheckpointThread(LooperThread):
    """Every save_model_secs (the first time at once): saves a checkpoint at save_path."""

    def __init__(self, sv: Any, sess: Any):
        super().__init__(sv.coord, sv.save_model_secs)
        self._sv = sv
        self._sess = sess

    def run_loop(self) -> None:
        _logger.info("Saving checkpoint to path %s", self._sv.save_path)
        self._sv.saver.save(self._sess, self._sv.save_path, global_step=self._sv.global_step)
        if self._sv.summary_writer and self._sv.global_step is not None:
            step = read_global_step(self._sess, self._sv.global_step)
            summary_writers.add_checkpoint_log(self._sv.summary_writer, self._sv.save_path, step)

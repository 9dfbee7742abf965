"""The layers of a monitored session, innermost first (TF1's `_HookedSession`,
`_CoordinatedSession`, `_RecoverableSession`):

    _HookedSession        one run = hooks' before_run, ONE Session.run, hooks' after_run
    _CoordinatedSession   errors reported by the coordinator's threads are re-raised here;
                          close() stops and joins those threads
    _RecoverableSession   a new session (restored from the latest checkpoint) after an
                          AbortedError or UnavailableError (MonitoredSession only)
"""

from __future__ import annotations

import logging
from typing import Any

from sluice._tf1.training.session_run_hook import (
    SessionRunArgs,
    SessionRunContext,
    SessionRunValues,
)
from sluice.framework.config_protos import RunOptions
from sluice.framework.ir import errors

_logger = logging.getLogger("sluice")
PREEMPTION_ERRORS = (errors.AbortedError, errors.UnavailableError)


class StepContext:
    """What `MonitoredSession.run_step_fn` hands its step_fn: the raw `session` (runs without
    hooks), `run_with_hooks(...)` (a monitored run), and `request_stop()`."""

    def __init__(self, session: Any, run_with_hooks_fn: Any):
        self._session = session
        self._run_with_hooks_fn = run_with_hooks_fn

    @property
    def session(self) -> Any:
        return self._session

    def run_with_hooks(self, *args: Any, **kwargs: Any) -> Any:
        """Same as `MonitoredSession.run`."""
        return self._run_with_hooks_fn(*args, **kwargs)

    def request_stop(self) -> None:
        """Ends the step_fn with StopIteration, which a `with MonitoredSession()` block takes
        as the end of training.

        Raises:
          StopIteration: always.
        """
        raise StopIteration("step_fn has requested the iterations to stop.")


class WrappedSession:
    """Forwards to the session it wraps; `should_stop` asks every layer."""

    def __init__(self, sess: Any):
        self._sess = sess
        self._wrapped_is_stoppable = isinstance(sess, WrappedSession)

    @property
    def graph(self) -> Any:
        return self._sess.graph

    def should_stop(self) -> bool:
        """True once a layer wants to stop, or once closed."""
        if self._check_stop():
            return True
        if self._sess:
            return self._wrapped_is_stoppable and self._sess.should_stop()
        return True

    def _check_stop(self) -> bool:
        return False

    def close(self) -> None:
        if self._sess:
            try:
                self._sess.close()
            except PREEMPTION_ERRORS as err:
                _logger.warning("An error occurred when attempting to close the session: %s", err)
            finally:
                self._sess = None

    def run(self, *args: Any, **kwargs: Any) -> Any:
        return self._sess.run(*args, **kwargs)

    def run_step_fn(self, step_fn: Any, raw_session: Any, run_with_hooks: Any) -> Any:
        return step_fn(StepContext(raw_session, run_with_hooks or self.run))


class HookedSession(WrappedSession):
    """Calls the hooks around each run (see the module docstring)."""

    def __init__(self, sess: Any, hooks: list):
        super().__init__(sess)
        self._hooks = hooks
        self._should_stop = False

    def _check_stop(self) -> bool:
        return self._should_stop

    def run(
        self,
        fetches: Any,
        feed_dict: dict | None = None,
        options: Any = None,
        run_metadata: Any = None,
    ) -> Any:
        if self.should_stop():
            raise RuntimeError("Run called even after should_stop requested.")
        run_context = SessionRunContext(SessionRunArgs(fetches, feed_dict), self._sess)
        options = options or RunOptions()
        hook_fetches: dict[int, Any] = {}  # hooks are not sortable: fetch a list, by position
        feed_dict = self._call_hooks_before_run(run_context, hook_fetches, feed_dict, options)
        order = list(hook_fetches)
        outputs = self._sess.run(
            [fetches] + [hook_fetches[i] for i in order],
            feed_dict=feed_dict,
            options=options,
            run_metadata=run_metadata,
        )
        results = dict(zip(order, outputs[1:]))
        for i, hook in enumerate(self._hooks):
            hook.after_run(
                run_context,
                SessionRunValues(
                    results=results.get(i), options=options, run_metadata=run_metadata
                ),
            )
        self._should_stop = self._should_stop or run_context.stop_requested
        return outputs[0]

    def _call_hooks_before_run(
        self,
        run_context: SessionRunContext,
        hook_fetches: dict,
        user_feed_dict: dict | None,
        options: Any,
    ) -> dict | None:
        hook_feeds: dict = {}
        for i, hook in enumerate(self._hooks):
            request = hook.before_run(run_context)
            if request is None:
                continue
            if request.fetches is not None:
                hook_fetches[i] = request.fetches
            if request.feed_dict:
                _raise_if_feeds_intersect(
                    hook_feeds, request.feed_dict, "Same tensor is fed by two hooks."
                )
                hook_feeds.update(request.feed_dict)
            if request.options:
                _merge_run_options(options, request.options)
        if not hook_feeds:
            return user_feed_dict
        if not user_feed_dict:
            return hook_feeds
        _raise_if_feeds_intersect(
            user_feed_dict, hook_feeds, "Same tensor is fed by a SessionRunHook and user."
        )
        hook_feeds.update(user_feed_dict)
        return hook_feeds


def _raise_if_feeds_intersect(feeds1: dict, feeds2: dict, message: str) -> None:
    both = [k for k in feeds1 if k in feeds2]
    if both:
        raise RuntimeError(f"{message} Conflict(s): {both}")


def _merge_run_options(options: Any, incoming: Any) -> None:
    """Numbers take the larger value, flags the OR of the two (TF1's merge)."""
    for field in ("trace_level", "timeout_in_ms", "inter_op_thread_pool"):
        setattr(options, field, max(getattr(options, field), getattr(incoming, field)))
    for field in ("output_partition_graphs", "report_tensor_allocations_upon_oom"):
        setattr(options, field, getattr(options, field) or getattr(incoming, field))


class CoordinatedSession(WrappedSession):
    """Re-raises the errors the coordinator's threads reported; `close` stops and joins them
    (threads still alive after `stop_grace_period_secs` are left, with a log line)."""

    def __init__(self, sess: Any, coord: Any, stop_grace_period_secs: float = 120):
        super().__init__(sess)
        self._coord = coord
        self._stop_grace_period_secs = stop_grace_period_secs

    def _check_stop(self) -> bool:
        self._coord.raise_requested_exception()
        return self._coord.should_stop()

    def close(self) -> None:
        self._coord.request_stop()
        try:
            self._coord.join(
                stop_grace_period_secs=self._stop_grace_period_secs, ignore_live_threads=True
            )
        finally:
            try:
                WrappedSession.close(self)
            except Exception as err:  # join already raised what matters
                _logger.info("Ignored an error closing the session: %s", err)

    def run(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return self._sess.run(*args, **kwargs)
        except PREEMPTION_ERRORS:
            raise
        except Exception as original:
            # a thread's preemption error is the root cause of this one: raise that instead
            try:
                self._coord.raise_requested_exception()
            except PREEMPTION_ERRORS:
                raise
            except Exception:
                raise original from None
            raise


class RecoverableSession(WrappedSession):
    """Makes a new session (restore or init, hooks' after_create_session) when a run raises
    AbortedError or UnavailableError, and runs again."""

    def __init__(self, sess_creator: Any):
        self._sess_creator = sess_creator
        super().__init__(self._create_session())

    def _create_session(self) -> Any:
        while True:
            try:
                return self._sess_creator.create_session()
            except PREEMPTION_ERRORS as err:
                _logger.info(
                    "An error was raised while a session was being created; a new "
                    "session will be created. Error: %s",
                    err,
                )

    def _check_stop(self) -> bool:
        try:
            return self._sess._check_stop() if self._sess else True
        except PREEMPTION_ERRORS as err:
            _logger.info("A new session will be created after: %s", err)
            self.close()
            self._sess = self._create_session()
            return False
        except Exception:  # the error surfaces from the next run; should_stop never raises
            return True

    def run(
        self,
        fetches: Any,
        feed_dict: dict | None = None,
        options: Any = None,
        run_metadata: Any = None,
    ) -> Any:
        while True:
            try:
                if not self._sess:
                    self._sess = self._create_session()
                return self._sess.run(
                    fetches, feed_dict=feed_dict, options=options, run_metadata=run_metadata
                )
            except PREEMPTION_ERRORS as err:
                _logger.info("A new session will be created after: %s", err)
                self.close()
                self._sess = None

    def run_step_fn(self, step_fn: Any, raw_session: Any, run_with_hooks: Any) -> Any:
        while True:
            try:
                if not self._sess:
                    self._sess = self._create_session()
                return self._sess.run_step_fn(step_fn, raw_session, self._sess.run)
            except PREEMPTION_ERRORS as err:
                _logger.info("A new session will be created after: %s", err)
                self.close()
                self._sess = None

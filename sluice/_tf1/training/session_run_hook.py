"""The hook protocol of `MonitoredSession` (TF1 `tf.train.SessionRunHook` and its records).

A monitored `run` is, in plain Python:

    for hook in hooks:
        args = hook.before_run(context)            # None, or SessionRunArgs(fetches, feed_dict)
        ...collect args.fetches under the hook, merge args.feed_dict into the user's feeds...
    values = session.run([user_fetches, *hook_fetches], feeds)     # ONE session run
    for hook in hooks:
        hook.after_run(context, SessionRunValues(results=<that hook's values or None>, ...))
    should_stop |= context.stop_requested

`begin` runs before the graph is finalized (the last chance to add ops), `after_create_session`
once a session holds initialized or restored variables, `end` when the session closes cleanly.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from sluice._export import export


@export("train.SessionRunHook")
class SessionRunHook:
    """Runs code around each `MonitoredSession.run`. Every method is optional."""

    def begin(self) -> None:
        """Called once before the session is created; the graph may still change here."""

    def after_create_session(self, session: Any, coord: Any) -> None:
        """Called once the variables are initialized or restored; the graph is finalized."""

    def before_run(self, run_context: "SessionRunContext") -> "SessionRunArgs | None":
        """Called before each run; returns extra fetches and feeds for that same run, or None."""
        return None

    def after_run(self, run_context: "SessionRunContext", run_values: "SessionRunValues") -> None:
        """Called after each run with the values of the fetches `before_run` asked for."""

    def end(self, session: Any) -> None:
        """Called when the session closes without an error (OutOfRangeError counts as none)."""


@export("train.SessionRunArgs")
class SessionRunArgs(NamedTuple):
    """What a hook adds to a run: `fetches` (any structure `Session.run` takes, or None),
    `feed_dict` (merged with the caller's; a tensor fed twice is an error) and `options`."""

    fetches: Any
    feed_dict: dict | None = None
    options: Any = None


@export("train.SessionRunValues")
class SessionRunValues(NamedTuple):
    """What a hook gets back: `results` has the structure of its `SessionRunArgs.fetches`
    (None when it asked for nothing)."""

    results: Any
    options: Any
    run_metadata: Any


@export("train.SessionRunContext")
class SessionRunContext:
    """The run in progress, as hooks see it: the caller's `original_args`, the raw `session`
    (for extra runs without hooks), and `request_stop()`."""

    def __init__(self, original_args: SessionRunArgs, session: Any):
        self._original_args = original_args
        self._session = session
        self._stop_requested = False

    @property
    def original_args(self) -> SessionRunArgs:
        return self._original_args

    @property
    def session(self) -> Any:
        return self._session

    @property
    def stop_requested(self) -> bool:
        return self._stop_requested

    def request_stop(self) -> None:
        """Makes `should_stop()` of the monitored session true once this run's hooks finish."""
        self._stop_requested = True

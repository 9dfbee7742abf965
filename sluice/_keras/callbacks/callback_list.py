"""`CallbackList`: calls every callback's hook in order; fit adds History and ProgbarLogger."""

from __future__ import annotations

import inspect
from typing import Any

from sluice._export import export
from sluice._keras.callbacks.callback import Callback
from sluice._keras.callbacks.history import History
from sluice._keras.callbacks.progbar_logger import ProgbarLogger
from sluice.framework.placement import processes


@export("callbacks.CallbackList")
class CallbackList(Callback):
    """Calls every callback's hook in order; adds History and ProgbarLogger when asked."""

    def __init__(
        self,
        callbacks: list | None = None,
        add_history: bool = False,
        add_progbar: bool = False,
        model: Any = None,
        **params: Any,
    ):
        super().__init__()
        self.callbacks = list(callbacks or [])
        for cb in self.callbacks:
            if not isinstance(cb, Callback):
                raise TypeError(f"callbacks must be sl.callbacks.Callback objects, got {cb!r}.")
        self.history: History | None = None
        if add_history:
            self.history = next((c for c in self.callbacks if isinstance(c, History)), None)
            if self.history is None:
                self.history = History()
                self.callbacks.append(self.history)
        # one progress bar for a multi-process run: the chief's (every process sees the same logs)
        has_progbar = any(isinstance(c, ProgbarLogger) for c in self.callbacks)
        if add_progbar and processes.is_chief() and not has_progbar:
            self.callbacks.append(ProgbarLogger())
        self.set_model(model)
        self.set_params(params)

    def set_model(self, model: Any) -> None:
        super().set_model(model)
        for cb in self.callbacks:
            cb.set_model(model)

    def set_params(self, params: dict) -> None:
        super().set_params(params)
        for cb in self.callbacks:
            cb.set_params(params)

    def _call(self, hook: str, *args: Any) -> None:
        for cb in self.callbacks:
            getattr(cb, hook)(*args)


# the train batch hooks call the older names themselves (`on_batch_end` from
# `on_train_batch_end`), as Keras's base Callback does
HOOKS = tuple(
    name
    for name in vars(Callback)
    if name.startswith("on_") and name not in ("on_batch_begin", "on_batch_end")
)


def _dispatch(hook: str):
    arity = len(inspect.signature(getattr(Callback, hook)).parameters) - 1  # without self

    def method(self: CallbackList, *args: Any) -> None:
        # as Keras's CallbackList, every argument is passed: `logs` too, {} when not given
        # (a user's `def on_train_begin(self, logs):` reads `logs.keys()`)
        args = (*args, *[None] * (arity - len(args)))
        if args and args[-1] is None:
            args = (*args[:-1], {})
        self._call(hook, *args)

    method.__name__ = hook
    return method


for _hook in HOOKS:
    setattr(CallbackList, _hook, _dispatch(_hook))

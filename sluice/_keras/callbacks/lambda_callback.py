"""`LambdaCallback`: a callback made of functions, one per hook."""

from __future__ import annotations

from collections.abc import Callable

from sluice._export import export
from sluice._keras.callbacks.callback import Callback


@export("callbacks.LambdaCallback")
class LambdaCallback(Callback):
    """A callback from functions: LambdaCallback(on_epoch_end=lambda epoch, logs: ...)."""

    def __init__(self, **hooks: Callable):
        super().__init__()
        for name, fn in hooks.items():
            if not name.startswith("on_") or not hasattr(Callback, name):
                raise ValueError(f"LambdaCallback: unknown hook {name!r}.")
            setattr(self, name, fn)

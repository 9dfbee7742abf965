"""`Callback`: the base class of callbacks, Keras's hooks into fit, evaluate and predict."""

from __future__ import annotations

from typing import Any

from sluice._export import export


@export("callbacks.Callback")
class Callback:
    """Base class of callbacks: override the hooks you need. `self.model` is the model being
    fitted (evaluated, predicted); `self.params` holds verbose, epochs and steps."""

    def __init__(self) -> None:
        self.model: Any = None
        self.params: dict = {}

    def set_model(self, model: Any) -> None:
        self.model = model

    def set_params(self, params: dict) -> None:
        self.params = params

    def on_train_begin(self, logs: dict | None = None) -> None: ...
    def on_train_end(self, logs: dict | None = None) -> None: ...
    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None: ...
    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None: ...
    def on_batch_begin(self, batch: int, logs: dict | None = None) -> None:
        """Keras's older name of `on_train_batch_begin`, which calls it."""

    def on_batch_end(self, batch: int, logs: dict | None = None) -> None:
        """Keras's older name of `on_train_batch_end`, which calls it."""

    def on_train_batch_begin(self, batch: int, logs: dict | None = None) -> None:
        self.on_batch_begin(batch, logs=logs)

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        self.on_batch_end(batch, logs=logs)

    def on_test_begin(self, logs: dict | None = None) -> None: ...
    def on_test_end(self, logs: dict | None = None) -> None: ...
    def on_test_batch_begin(self, batch: int, logs: dict | None = None) -> None: ...
    def on_test_batch_end(self, batch: int, logs: dict | None = None) -> None: ...
    def on_predict_begin(self, logs: dict | None = None) -> None: ...
    def on_predict_end(self, logs: dict | None = None) -> None: ...
    def on_predict_batch_begin(self, batch: int, logs: dict | None = None) -> None: ...
    def on_predict_batch_end(self, batch: int, logs: dict | None = None) -> None: ...

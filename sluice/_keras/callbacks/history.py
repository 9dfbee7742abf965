"""`History`: the callback fit adds itself and returns, with the logs of every epoch."""

from __future__ import annotations

from sluice._export import export
from sluice._keras.callbacks.callback import Callback


@export("callbacks.History")
class History(Callback):
    """Records the logs of every epoch: `history.history["loss"]` is the list of epoch losses;
    `history.epoch` the epoch indices."""

    def __init__(self) -> None:
        super().__init__()
        self.history: dict[str, list] = {}
        self.epoch: list[int] = []

    def on_train_begin(self, logs: dict | None = None) -> None:
        self.epoch = []

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        self.epoch.append(epoch)
        for name, value in (logs or {}).items():
            self.history.setdefault(name, []).append(value)
        self.model.history = self

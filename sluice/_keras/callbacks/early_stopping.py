"""`EarlyStopping`: stops fit when a monitored log stops improving."""

from __future__ import annotations

from sluice._export import export
from sluice._keras.callbacks.arguments import monitor_mode
from sluice._keras.callbacks.callback import Callback


@export("callbacks.EarlyStopping")
class EarlyStopping(Callback):
    """Stops fit when `monitor` has not improved for `patience` epochs (Keras 3 rules).

    Args:
      monitor: the log to watch ("val_loss" by default).
      min_delta: the least change that counts as an improvement.
      patience: epochs without improvement before stopping.
      verbose: 1 prints a line when stopping.
      mode: "min", "max" or "auto".
      baseline: a value `monitor` must beat, else training stops after `patience` epochs.
      restore_best_weights: at the end, load the weights of the best epoch.
      start_from_epoch: epochs to wait before watching.
    """

    def __init__(
        self,
        monitor: str = "val_loss",
        min_delta: float = 0.0,
        patience: int = 0,
        verbose: int = 0,
        mode: str = "auto",
        baseline: float | None = None,
        restore_best_weights: bool = False,
        start_from_epoch: int = 0,
    ):
        super().__init__()
        self.monitor = monitor
        self.patience = patience
        self.verbose = verbose
        self.baseline = baseline
        self.restore_best_weights = restore_best_weights
        self.start_from_epoch = start_from_epoch
        self.mode = monitor_mode(mode, monitor)
        self.min_delta = abs(min_delta) * (1 if self.mode == "max" else -1)

    def _improved(self, value: float, reference: float | None) -> bool:
        if reference is None:
            return True
        value = value - self.min_delta
        return value > reference if self.mode == "max" else value < reference

    def on_train_begin(self, logs: dict | None = None) -> None:
        self.wait = 0
        self.stopped_epoch = 0
        self.best: float | None = None
        self.best_weights: list | None = None
        self.best_epoch = 0

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        current = (logs or {}).get(self.monitor)
        if current is None:
            print(
                f"EarlyStopping: the metric {self.monitor!r} is not in the logs"
                f" {sorted(logs or {})}; skipping."
            )
            return
        if epoch < self.start_from_epoch:
            return
        if self.restore_best_weights and self.best_weights is None:
            self.best_weights = self.model.get_weights()
        self.wait += 1
        if self._improved(float(current), self.best):
            self.best = float(current)
            self.best_epoch = epoch
            if self.restore_best_weights:
                self.best_weights = self.model.get_weights()
            if self.baseline is None or self._improved(float(current), self.baseline):
                self.wait = 0
            return
        if self.wait >= self.patience and epoch > 0:
            self.stopped_epoch = epoch
            self.model.stop_training = True

    def on_train_end(self, logs: dict | None = None) -> None:
        if self.stopped_epoch > 0 and self.verbose:
            print(f"Epoch {self.stopped_epoch + 1}: early stopping")
        if self.restore_best_weights and self.best_weights is not None:
            if self.verbose:
                print(
                    "Restoring model weights from the end of the best epoch:"
                    f" {self.best_epoch + 1}."
                )
            self.model.set_weights(self.best_weights)

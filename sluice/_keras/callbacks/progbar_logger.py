"""`ProgbarLogger`: the progress output of fit, evaluate and predict (added by them when
`verbose` is not 0).

On a terminal, and with verbose=2 anywhere, the logs are shown in Keras 3's order: Keras's
trainer sorts the metric results by name (so `accuracy` comes before `loss`) and appends the
sorted validation results. Off a terminal the one line per epoch of verbose=1 keeps the order
fit gives (loss first, then the metrics in compile order).
"""

from __future__ import annotations

from sluice._export import export
from sluice._keras.callbacks.callback import Callback
from sluice._keras.callbacks.progbar import Progbar
from sluice._keras.utils import io_utils


def keras_order(logs: dict) -> dict:
    """`logs` with the training names sorted, then the sorted `val_` names (Keras 3's order).

    >>> list(keras_order({"loss": 1, "val_loss": 2, "accuracy": 3, "val_accuracy": 4}))
    ['accuracy', 'loss', 'val_accuracy', 'val_loss']
    """
    train = sorted(k for k in logs if not k.startswith("val_"))
    validation = sorted(k for k in logs if k.startswith("val_"))
    return {k: logs[k] for k in train + validation}


@export("callbacks.ProgbarLogger")
class ProgbarLogger(Callback):
    """Prints "Epoch i/n" and a `Progbar` per epoch (per evaluate / predict call when those are
    run on their own), as Keras's verbose=1 (a bar; one line per epoch off a terminal) or
    verbose=2 (one line per epoch)."""

    def __init__(self) -> None:
        super().__init__()
        self._bar: Progbar | None = None
        self._in_fit = False
        self._logs: dict = {}

    def _new_bar(self, initial: int = 0) -> Progbar:
        return Progbar(
            self.params.get("steps"), verbose=self.params.get("verbose", 1), initial=initial
        )

    @staticmethod
    def _show(bar: Progbar, step: int, logs: dict, finalize: bool) -> None:
        keras_like = bar.dynamic or bar.verbose == 2
        bar.update(step, keras_order(logs) if keras_like else logs, finalize=finalize)

    def on_train_begin(self, logs: dict | None = None) -> None:
        self._in_fit = True

    def on_train_end(self, logs: dict | None = None) -> None:
        self._in_fit = False

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        self._bar = None
        epochs = self.params.get("epochs", 1)
        if self.params.get("verbose") and epochs > 1:
            io_utils.print_msg(f"Epoch {epoch + 1}/{epochs}")

    def on_train_batch_begin(self, batch: int, logs: dict | None = None) -> None:
        if self._bar is None:  # started here, so the first step's time (compilation) counts
            self._bar = self._new_bar(initial=batch)

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        if self._bar is None:
            self._bar = self._new_bar(initial=batch)
        self._logs = dict(logs or {})
        self._show(self._bar, batch + 1, self._logs, finalize=False)

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        bar = self._bar or self._new_bar()
        steps = self.params.get("steps") or 0
        self._show(bar, steps, logs or self._logs, finalize=True)
        self._bar = None

    def on_test_begin(self, logs: dict | None = None) -> None:
        if not self._in_fit:
            self._bar = self._new_bar()

    def on_test_batch_end(self, batch: int, logs: dict | None = None) -> None:
        if not self._in_fit and self._bar is not None:
            self._logs = dict(logs or {})
            self._show(self._bar, batch + 1, self._logs, finalize=False)

    def on_test_end(self, logs: dict | None = None) -> None:
        if not self._in_fit and self._bar is not None:
            self._show(self._bar, self.params.get("steps") or 0, logs or self._logs, True)
            self._bar = None

    def on_predict_begin(self, logs: dict | None = None) -> None:
        self._bar = self._new_bar()

    def on_predict_batch_end(self, batch: int, logs: dict | None = None) -> None:
        if self._bar is not None:
            self._bar.update(batch + 1, None, finalize=False)

    def on_predict_end(self, logs: dict | None = None) -> None:
        if self._bar is not None:
            self._bar.update(self.params.get("steps") or 0, None, finalize=True)
            self._bar = None

"""`ProgbarLogger`: the progress output of fit, evaluate and predict (added by them when
`verbose` is not 0)."""

from __future__ import annotations

from sluice.callbacks.callback import Callback
from sluice.callbacks.progbar import Progbar


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

    def on_train_begin(self, logs: dict | None = None) -> None:
        self._in_fit = True

    def on_train_end(self, logs: dict | None = None) -> None:
        self._in_fit = False

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        self._bar = None
        epochs = self.params.get("epochs", 1)
        if self.params.get("verbose") and epochs > 1:
            print(f"Epoch {epoch + 1}/{epochs}", flush=True)

    def on_train_batch_begin(self, batch: int, logs: dict | None = None) -> None:
        if self._bar is None:  # started here, so the first step's time (compilation) counts
            self._bar = self._new_bar(initial=batch)

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        if self._bar is None:
            self._bar = self._new_bar(initial=batch)
        self._logs = dict(logs or {})
        self._bar.update(batch + 1, self._logs, finalize=False)

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        bar = self._bar or self._new_bar()
        steps = self.params.get("steps") or 0
        bar.update(steps, logs or self._logs, finalize=True)
        self._bar = None

    def on_test_begin(self, logs: dict | None = None) -> None:
        if not self._in_fit:
            self._bar = self._new_bar()

    def on_test_batch_end(self, batch: int, logs: dict | None = None) -> None:
        if not self._in_fit and self._bar is not None:
            self._logs = dict(logs or {})
            self._bar.update(batch + 1, self._logs, finalize=False)

    def on_test_end(self, logs: dict | None = None) -> None:
        if not self._in_fit and self._bar is not None:
            self._bar.update(self.params.get("steps") or 0, logs or self._logs, finalize=True)
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

"""`Callback` (Keras's hooks), `CallbackList`, and the two callbacks fit adds itself:
`History` (returned by fit) and `ProgbarLogger` (the progress bar)."""

from __future__ import annotations

from typing import Any

from sluice.callbacks.progbar import Progbar


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
    def on_train_batch_begin(self, batch: int, logs: dict | None = None) -> None: ...
    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None: ...
    def on_test_begin(self, logs: dict | None = None) -> None: ...
    def on_test_end(self, logs: dict | None = None) -> None: ...
    def on_test_batch_begin(self, batch: int, logs: dict | None = None) -> None: ...
    def on_test_batch_end(self, batch: int, logs: dict | None = None) -> None: ...
    def on_predict_begin(self, logs: dict | None = None) -> None: ...
    def on_predict_end(self, logs: dict | None = None) -> None: ...
    def on_predict_batch_begin(self, batch: int, logs: dict | None = None) -> None: ...
    def on_predict_batch_end(self, batch: int, logs: dict | None = None) -> None: ...


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
        if add_progbar and not any(isinstance(c, ProgbarLogger) for c in self.callbacks):
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


HOOKS = tuple(name for name in vars(Callback) if name.startswith("on_"))


def _dispatch(hook: str):
    def method(self: CallbackList, *args: Any) -> None:
        self._call(hook, *args)

    method.__name__ = hook
    return method


for _hook in HOOKS:
    setattr(CallbackList, _hook, _dispatch(_hook))

"""`TerminateOnNaN`: stops fit at the first batch whose loss is not finite."""

from __future__ import annotations

import numpy as np

from sluice._export import export
from sluice._keras.callbacks.callback import Callback


@export("callbacks.TerminateOnNaN")
class TerminateOnNaN(Callback):
    """Stops fit when the loss becomes NaN or infinite."""

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        loss = (logs or {}).get("loss")
        if loss is not None and not np.isfinite(loss):
            print(f"Batch {batch}: Invalid loss, terminating training")
            self.model.stop_training = True

"""`sl.callbacks`: Keras 3 callbacks for `fit`.

History and ProgbarLogger are added by fit itself. Callbacks see `self.model` and `self.params`
({"verbose", "epochs", "steps"}).

>>> model.fit(x, y, epochs=20, callbacks=[
...     sl.callbacks.BackupAndRestore("backup", save_freq=50),
...     sl.callbacks.EarlyStopping(monitor="val_loss", patience=3, restore_best_weights=True),
...     sl.callbacks.CSVLogger("training.csv"),
... ])
"""

from sluice.callbacks.backup_and_restore import BackupAndRestore, ModelCheckpoint
from sluice.callbacks.callback import Callback, CallbackList, History, ProgbarLogger
from sluice.callbacks.early_stopping import (
    CSVLogger,
    EarlyStopping,
    LambdaCallback,
    LearningRateScheduler,
    TerminateOnNaN,
)

__all__ = [
    "BackupAndRestore", "CSVLogger", "Callback", "CallbackList", "EarlyStopping", "History",
    "LambdaCallback", "LearningRateScheduler", "ModelCheckpoint", "ProgbarLogger",
    "TerminateOnNaN",
]  # fmt: skip

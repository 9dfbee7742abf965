"""`sl.callbacks`: Keras 3 callbacks for `fit`.

History and ProgbarLogger are added by fit itself. Callbacks see `self.model` and `self.params`
({"verbose", "epochs", "steps"}).

>>> x = np.random.default_rng(0).normal(size=(64, 4)).astype("float32")
>>> y = x @ np.array([[1.0], [-2.0], [0.5], [3.0]], "float32")
>>> model = sl.Sequential([sl.Input((4,)), sl.layers.Dense(1)])
>>> model.compile("sgd", "mse")
>>> history = model.fit(x, y, epochs=20, validation_split=0.25, verbose=0, callbacks=[
...     sl.callbacks.BackupAndRestore("backup", save_freq=50),
...     sl.callbacks.EarlyStopping(monitor="val_loss", patience=3, restore_best_weights=True),
...     sl.callbacks.CSVLogger("training.csv"),
... ])
>>> open("training.csv").readline().strip()  # then one row per epoch
'epoch,loss,val_loss'
"""

from sluice._keras.callbacks.backup_and_restore import BackupAndRestore
from sluice._keras.callbacks.callback import Callback
from sluice._keras.callbacks.callback_list import CallbackList
from sluice._keras.callbacks.csv_logger import CSVLogger
from sluice._keras.callbacks.early_stopping import EarlyStopping
from sluice._keras.callbacks.history import History
from sluice._keras.callbacks.lambda_callback import LambdaCallback
from sluice._keras.callbacks.learning_rate_scheduler import LearningRateScheduler
from sluice._keras.callbacks.model_checkpoint import ModelCheckpoint
from sluice._keras.callbacks.progbar_logger import ProgbarLogger
from sluice._keras.callbacks.reduce_lr_on_plateau import ReduceLROnPlateau
from sluice._keras.callbacks.tensorboard import TensorBoard
from sluice._keras.callbacks.terminate_on_nan import TerminateOnNaN

__all__ = [
    "BackupAndRestore", "CSVLogger", "Callback", "CallbackList", "EarlyStopping", "History",
    "LambdaCallback", "LearningRateScheduler", "ModelCheckpoint", "ProgbarLogger",
    "ReduceLROnPlateau", "TensorBoard", "TerminateOnNaN",
]  # fmt: skip

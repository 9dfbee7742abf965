"""`sl.optimizers`: optimizers over optax, in Keras 3 spelling (the TF1 spelling is `sl.train`).

Every optimizer, in either spelling, is one `Optimizer` applying one optax transformation; see
`transforms` for the compositions and `optimizer` for how the state becomes graph Variables.
"""

from sluice._keras.optimizers.keras import SGD, Adagrad, Adam, AdamW, RMSprop, get
from sluice._keras.optimizers.optimizer import Optimizer

__all__ = ["SGD", "Adagrad", "Adam", "AdamW", "Optimizer", "RMSprop", "get"]

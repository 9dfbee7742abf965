"""The three names that Keras 3 and TF1 both spell, with different meanings, and how one sluice
name serves both (`import sluice as keras` and `import sluice as tf` must both work):

    sl.losses.mean_squared_error     Keras: mean((y_true - y_pred) ** 2, axis=-1), per sample
                                     TF1: a weighted, reduced scalar, added to GraphKeys.LOSSES
    sl.metrics.mean_squared_error    Keras: the same per-sample function
                                     TF1: a streaming metric, (value, update_op)
    sl.metrics.mean_absolute_error   Keras: mean(abs(y_true - y_pred), axis=-1), per sample
                                     TF1: a streaming metric, (value, update_op)

The rule: a call with Keras's keywords `y_true=` or `y_pred=` is Keras's; any other call
(positional arguments, TF1's `labels=`, `predictions=`, `weights=`, ...) is TF1's, as TF1
programs wrote them. Wherever a loss or metric is taken as an object rather than called by the
user, it is Keras's: `compile(loss=sl.losses.mean_squared_error)`, `sl.losses.get`,
`sl.metrics.get`, `LossFunctionWrapper` and `MeanMetricWrapper` (each takes the function's
`keras_function` attribute: `sluice._keras.losses.loss.keras_function`), and a saved file's
"keras.losses.mean_squared_error".

This module sits with TF1's metrics, the highest of the packages it joins (sluice/_keras/losses,
sluice/_tf1/losses, sluice/_tf1/metrics). Keras's per-sample functions
are also reachable under names TF1 never used: `sl.losses.mse`, `sl.losses.MSE`,
`sl.metrics.mse`, `sl.losses.mae`, ...

>>> y_true, y_pred = [[0.0, 1.0], [0.0, 0.0]], [[1.0, 1.0], [1.0, 0.0]]
>>> per_sample = sl.losses.mean_squared_error(y_true=y_true, y_pred=y_pred)   # Keras 3
>>> scalar = sl.losses.mean_squared_error(y_true, y_pred)                     # TF1
>>> sl.Session().run([per_sample, scalar])
[array([0.5, 0.5], dtype=float32), array(0.5, dtype=float32)]
"""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras.losses import regression
from sluice._keras.saving import serialization
from sluice._tf1.losses import tf1_losses
from sluice._tf1.metrics import tf1_metrics

_KERAS_KEYWORDS = ("y_true", "y_pred")


def is_keras_call(kwargs: dict) -> bool:
    """Whether a call is Keras's: it names y_true or y_pred."""
    return any(k in kwargs for k in _KERAS_KEYWORDS)


@export("losses.mean_squared_error")
def mean_squared_error(*args: Any, **kwargs: Any) -> Any:
    """Keras's `mean_squared_error(y_true, y_pred)` (per sample) when called with y_true= or
    y_pred=; TF1's `tf.losses.mean_squared_error(labels, predictions, weights=1.0, scope=None,
    loss_collection=GraphKeys.LOSSES, reduction=SUM_BY_NONZERO_WEIGHTS)` otherwise (see the
    module docstring)."""
    if is_keras_call(kwargs):
        return regression.mean_squared_error(*args, **kwargs)
    return tf1_losses.mean_squared_error(*args, **kwargs)


@export("metrics.mean_squared_error")
def metrics_mean_squared_error(*args: Any, **kwargs: Any) -> Any:
    """Keras's `mean_squared_error(y_true, y_pred)` (per sample) when called with y_true= or
    y_pred=; TF1's `tf.metrics.mean_squared_error(labels, predictions, weights=None,
    metrics_collections=None, updates_collections=None, name=None)` otherwise."""
    if is_keras_call(kwargs):
        return regression.mean_squared_error(*args, **kwargs)
    return tf1_metrics.mean_squared_error(*args, **kwargs)


@export("metrics.mean_absolute_error")
def metrics_mean_absolute_error(*args: Any, **kwargs: Any) -> Any:
    """Keras's `mean_absolute_error(y_true, y_pred)` (per sample) when called with y_true= or
    y_pred=; TF1's `tf.metrics.mean_absolute_error(labels, predictions, weights=None,
    metrics_collections=None, updates_collections=None, name=None)` otherwise."""
    if is_keras_call(kwargs):
        return regression.mean_absolute_error(*args, **kwargs)
    return tf1_metrics.mean_absolute_error(*args, **kwargs)


# their public names (the module's own names tell the two mean_squared_error apart)
for _fn, _name in (
    (metrics_mean_squared_error, "mean_squared_error"),
    (metrics_mean_absolute_error, "mean_absolute_error"),
):
    _fn.__name__ = _fn.__qualname__ = _name
mean_squared_error.keras_function = regression.mean_squared_error
metrics_mean_squared_error.keras_function = regression.mean_squared_error
metrics_mean_absolute_error.keras_function = regression.mean_absolute_error

# in saved files these paths name Keras's functions (`losses.serialize(get("mse"))` writes
# "keras.losses.mean_squared_error", as Keras 3 does, and reading it gives Keras's function)
serialization.register_builtin("keras.losses.mean_squared_error", regression.mean_squared_error)
serialization.register_builtin("keras.metrics.mean_squared_error", regression.mean_squared_error)
serialization.register_builtin("keras.metrics.mean_absolute_error", regression.mean_absolute_error)

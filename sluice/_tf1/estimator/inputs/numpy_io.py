"""`numpy_input_fn` (TF1 `tf.estimator.inputs.numpy_input_fn`): batches of in-memory arrays.

TF 1.15 feeds the rows through a queue (a shuffling one when `shuffle`); sluice reads them with
`sl.data`, in the same order: rows in sequence, epoch after epoch, `shuffle` mixing them in a
buffer of `queue_capacity` rows (seeded by the graph seed), then `batch_size` rows per batch.
With `num_epochs=None` the rows repeat forever and every batch is full (a static batch
dimension, as TF's `dequeue_many`); with a number of epochs the last batch may be smaller
(TF's `dequeue_up_to`) and the input ends after it.
"""

from __future__ import annotations

import collections
from typing import Any, Callable

import numpy as np

from sluice._export import export
from sluice._tf1.data.dataset import Dataset

_TARGET_KEY = "__target_key__"
_ARRAY_KEY = "__direct_np_input__"


def _ordered(x: Any) -> collections.OrderedDict:
    """x (a dict of arrays, or one array) as an ordered dict, keys sorted as TF sorts them.

    Raises:
      ValueError: an empty dict or array.
      TypeError: x is neither.
    """
    if isinstance(x, dict):
        if not x:
            raise ValueError("x cannot be an empty dict")
        return collections.OrderedDict(sorted(x.items(), key=lambda item: item[0]))
    if isinstance(x, np.ndarray):
        if x.size == 0:
            raise ValueError("x cannot be an empty array")
        return collections.OrderedDict({_ARRAY_KEY: x})
    raise TypeError(f"x must be a dict or array; got {type(x).__name__}")


@export("estimator.inputs.numpy_input_fn")
def numpy_input_fn(
    x: Any,
    y: Any = None,
    batch_size: int = 128,
    num_epochs: int | None = 1,
    shuffle: bool | None = None,
    queue_capacity: int = 1000,
    num_threads: int = 1,
) -> Callable[[], Any]:
    """An input function yielding `(features, labels)` batches of `x` and `y`.

    Args:
      x: a dict of arrays (features is then a dict with the same keys) or one array (features
        is then one tensor).
      y: an array, a dict of arrays, or None (the input function then returns features only).
      batch_size: rows per batch.
      num_epochs: passes over the rows; None repeats forever.
      shuffle: whether to shuffle the rows; must be given (True for training).
      queue_capacity: the shuffle buffer's size in rows.
      num_threads: accepted for TF's signature (the rows come in order from one reader).

    Returns:
      A function `() -> (features, labels)` (or `features`) for `Estimator.train`,
      `evaluate` and `predict`.

    Raises:
      ValueError: shuffle is not a bool; (when called) x or y empty, keys in both x and y,
        or arrays of different lengths.
      TypeError: (when called) x is neither a dict nor an array.

    >>> input_fn = sl.estimator.inputs.numpy_input_fn(
    ...     {"a": np.arange(5.0)}, np.arange(5), batch_size=2, shuffle=False)
    >>> features, labels = input_fn()
    >>> with sl.Session() as sess:
    ...     print(sess.run(labels), sess.run(labels), sess.run(labels))
    [0 1] [2 3] [4]
    """
    if not isinstance(shuffle, bool):
        raise ValueError(
            "shuffle must be provided and explicitly set as boolean (it is recommended to "
            f"set it as True for training); got {shuffle}"
        )

    def input_fn() -> Any:
        data = _ordered(x)
        feature_keys = list(data)
        if y is None:
            target_keys: Any = None
        elif isinstance(y, dict):
            if not y:
                raise ValueError("y cannot be empty dict, use None instead.")
            ordered_y = collections.OrderedDict(sorted(y.items(), key=lambda item: item[0]))
            target_keys = list(ordered_y)
            duplicates = set(feature_keys) & set(target_keys)
            if duplicates:
                raise ValueError(
                    f"{len(duplicates)} duplicate keys are found in both x and y: {duplicates}"
                )
            data.update(ordered_y)
        else:
            target_keys = _TARGET_KEY
            while target_keys in data:
                target_keys += "_n"
            data[target_keys] = y
        data = collections.OrderedDict((k, np.asarray(v)) for k, v in data.items())
        if len({v.shape[0] if v.ndim else None for v in data.values()}) != 1:
            x_shapes = {k: data[k].shape for k in feature_keys}
            if target_keys is None:
                y_shapes = None
            elif isinstance(target_keys, str):
                y_shapes = data[target_keys].shape
            else:
                y_shapes = {k: data[k].shape for k in target_keys}
            raise ValueError(
                "Length of tensors in x and y is mismatched. All elements in x and y must "
                f"have the same length.\nShapes in x: {x_shapes}\nShapes in y: {y_shapes}\n"
            )
        dataset = Dataset.from_tensor_slices(dict(data)).repeat(num_epochs)
        if shuffle:
            dataset = dataset.shuffle(queue_capacity)
        dataset = dataset.batch(batch_size, drop_remainder=num_epochs is None)
        batch = dataset.make_one_shot_iterator().get_next()
        if isinstance(x, np.ndarray):
            features = batch[_ARRAY_KEY]
        else:
            features = {k: batch[k] for k in feature_keys}
        if target_keys is None:
            return features
        if isinstance(target_keys, str):
            return features, batch[target_keys]
        return features, {k: batch[k] for k in target_keys}

    return input_fn

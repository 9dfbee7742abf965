"""`fit(class_weight=...)`: Keras 3's class weights, folded into per-sample weights.

Each sample weighs `class_weight.get(its class, 1.0)`, its class read from its target as Keras 3
reads it (`class_weight_to_sample_weights`): an integer class id of shape (n,) or (n, 1), a
binary 0/1 label (rounded), or the argmax of a one-hot (or soft) row of shape (n, classes).
A class missing from the dict weighs 1. Arrays are converted once; a `sl.data.Dataset` batch by
batch. As in Keras 3, class weights are refused together with sample weights, for a model with
several outputs, and for targets that do not give one class per sample.

>>> class_weight_to_sample_weights(np.array([0, 1, 2, 1]), {0: 0.5, 1: 2.0})
array([0.5, 2. , 1. , 2. ], dtype=float32)
"""

from __future__ import annotations

from typing import Any

import numpy as np


def standardize(class_weight: Any) -> dict[int, float]:
    """`class_weight` as {class index: weight}; keys are converted with `int` as Keras 3 does
    (so "1" and 1.0 name class 1).

    Raises:
      ValueError: for something other than a dict-like mapping, or a key that is not a class
        index.
    """
    if not hasattr(class_weight, "items") or not hasattr(class_weight, "get"):
        raise ValueError(
            "`class_weight` must be a dict-like mapping of class indices to weights. Received: "
            f"class_weight={class_weight!r} of type {type(class_weight).__name__}."
        )
    cleaned = {}
    for key, value in class_weight.items():
        try:
            cleaned[int(key)] = float(value)
        except (TypeError, ValueError):
            raise ValueError(
                "`class_weight` must be a dictionary with integer keys representing class "
                f"indices. Received an invalid key: {key!r} of type {type(key).__name__}."
            ) from None
    return cleaned


def check_single_output(model: Any, y: Any) -> None:
    """Keras 3's refusal of class weights for several outputs (or structured targets)."""
    outputs = getattr(model, "outputs", None) or []
    structured = isinstance(y, dict) or (
        isinstance(y, (list, tuple)) and any(np.ndim(item) > 0 for item in y)
    )
    if len(outputs) > 1 or structured:
        raise ValueError(
            "`class_weight` is only supported for Models with a single output (and one target "
            f"array); got {'targets of type ' + type(y).__name__ if structured else ''}"
            f"{'' if structured else f'a model with {len(outputs)} outputs'}. Pass per-sample "
            "weights with `sample_weight` instead."
        )


def refuse_with_sample_weight(sample_weight: Any) -> None:
    if sample_weight is not None:
        raise ValueError("You cannot `class_weight` and `sample_weight` at the same time.")


def class_weight_to_sample_weights(y: Any, class_weight: Any) -> np.ndarray:
    """One float32 weight per sample of the targets `y` (see the module docstring).

    Raises:
      ValueError: for a bad `class_weight` (see `standardize`), or targets of more than one
        class per sample (e.g. sequences of class ids).
    """
    weights = standardize(class_weight)
    targets = np.asarray(y)
    classes = targets
    if classes.ndim > 1:  # (n, 1): the id or 0/1 label; (n, classes): one-hot
        classes = np.squeeze(classes, -1) if classes.shape[-1] == 1 else np.argmax(classes, -1)
    if classes.ndim != 1:
        raise ValueError(
            "`class_weight` needs one class per sample: targets of shape (n,), (n, 1) or "
            f"(n, classes); got targets of shape {targets.shape}. Give per-step weights with "
            "`sample_weight` instead."
        )
    classes = np.round(classes).astype(np.int64)
    sample_weight = np.ones(len(classes), np.float32)
    for index, weight in weights.items():
        sample_weight[classes == index] = weight
    return sample_weight

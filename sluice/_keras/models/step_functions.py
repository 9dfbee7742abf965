"""The graph functions of a compiled model, each built once and run once per batch:

    train step:   feeds (inputs..., y_true, sample_weight) -> logs; runs, in one session.run,
                  the forward pass (training=True), the loss, the optimizer update, the layers'
                  updates (BatchNormalization statistics), the metric updates and the fit
                  position (`fit_state/batch`, `fit_state/iterations`)
    test step:    feeds (inputs..., y_true, sample_weight) -> logs (inference forward pass)
    predict step: feeds (inputs...) -> outputs

The logs are the running results of the loss tracker and the metrics (Variables), read after
their updates. With the compiled engine, each step is one jitted function: batches of the same
shape reuse it, and a last, smaller batch compiles it once more for that shape.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from sluice._keras.layers import tracking
from sluice._keras.losses import losses as losses_lib
from sluice._keras.losses.loss import Loss
from sluice._keras.metrics import metrics as metrics_lib
from sluice._keras.models import fit_state
from sluice._tf1.cells import nest
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Operation, Tensor
from sluice.framework.ops.array import fill_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import math_ops


@dataclasses.dataclass
class StepFunction:
    """Placeholders to feed (in order), what to fetch, and the input signature it was built for
    (None: the model's own input placeholders)."""

    feeds: list[Tensor]
    fetches: Any
    signature: Any = None


def input_signature(model: Any, xs: list[np.ndarray]) -> tuple | None:
    """None when the model's inputs have static shapes (but the batch); else the data's
    per-example shapes, for which the steps are specialised.

    A step over inputs with an unknown dimension besides the batch (e.g. the time axis of
    `Input((None,))`) would hold while loops of unknown length, which the compiled engine
    cannot differentiate; specialised placeholders with the data's shapes make them static.
    """
    flat = nest.flatten(model._input_struct)
    if all(t.shape.rank is not None and t.shape[1:].is_fully_defined() for t in flat):
        return None
    return tuple(tuple(a.shape[1:]) for a in xs)


def _step_inputs(model: Any, signature: tuple | None) -> Any:
    """The placeholders a step feeds: the model's own, or new ones of the signature's shapes."""
    if signature is None:
        return model._input_struct
    flat = nest.flatten(model._input_struct)
    with model.graph.name_scope("inputs"):
        new = [
            core_ops.placeholder(t.dtype, [None] + list(shape), name=f"input_{i}")
            for i, (t, shape) in enumerate(zip(flat, signature))
        ]
    return nest.pack_sequence_as(model._input_struct, new)


def _target_placeholder(y: np.ndarray, name: str) -> Tensor:
    dtype = (
        dtypes.int32 if np.issubdtype(y.dtype, np.integer) or y.dtype == bool else dtypes.float32
    )
    return core_ops.placeholder(dtype, [None] + list(y.shape[1:]), name=name)


def _loss_and_metrics(
    model: Any,
    y_true: Tensor,
    y_pred: Any,
    sample_weight: Tensor,
    extra_losses: list,
) -> tuple[Tensor, list[Operation], dict[str, Any]]:
    """The total loss, the metric update ops, and {name: metric} in log order."""
    if isinstance(y_pred, (list, tuple)):
        if len(y_pred) != 1:
            raise NotImplementedError(
                "fit/evaluate support models with one output; this one has "
                f"{len(y_pred)}. (predict supports several.)"
            )
        y_pred = y_pred[0]
    loss = model.compiled_loss(y_true, y_pred, sample_weight)
    if model._loss_weight is not None:  # Keras 3: the weight scales the compiled loss only
        loss = loss * core_ops.convert_to_tensor(model._loss_weight, dtype=loss.dtype)
    terms = [loss] + [fill_ops.cast(t, loss.dtype) for t in model.losses + extra_losses]
    total = terms[0] if len(terms) == 1 else math_ops.add_n(terms)
    batch = fill_ops.cast(fill_ops.shape(y_true)[0], dtypes.float32)
    updates = [model._loss_tracker.update_state(total, sample_weight=batch)]
    named = {"loss": model._loss_tracker}
    for identifier in model._metric_identifiers:
        metric = model._metric_objects.get(identifier)
        if metric is None:
            metric = metrics_lib.get(identifier, y_true, y_pred)
            model._metric_objects[identifier] = metric
        # Keras 3 weighs only `weighted_metrics`: `metrics` see no sample (or class) weights
        updates.append(metric.update_state(y_true, y_pred))
        named[metric.name] = metric
    return total, updates, named


def _logs(named: dict, after: list[Operation]) -> dict[str, Tensor]:
    with after[0].graph.control_dependencies(after):
        return {name: core_ops.identity(metric.result()) for name, metric in named.items()}


def build_train_function(model: Any, y: np.ndarray, signature: tuple | None) -> StepFunction:
    """The training step for targets like `y` (see the module docstring)."""
    g = model.graph
    with g.as_default(), g.name_scope("train_step"):
        inputs = _step_inputs(model, signature)
        y_true = _target_placeholder(y, "y_true")
        sample_weight = core_ops.placeholder(dtypes.float32, [None], name="sample_weight")
        with tracking.collect() as collector:
            y_pred = model._forward(inputs, training=True)
        total, metric_updates, named = _loss_and_metrics(
            model, y_true, y_pred, sample_weight, collector.losses
        )
        variables = model.trainable_weights
        if not variables:
            raise ValueError(f"Model {model.name!r} has no trainable weights to fit.")
        model.optimizer = fit_state.graph_optimizer(model.optimizer, g, variables[0].dtype)
        train_op = model.optimizer.minimize(total, var_list=variables)
        one = np.int64(1)
        step = [
            train_op,
            model._fit_state.batch.assign_add(one, read_value=False),
            model._fit_state.iterations.assign_add(one, read_value=False),
        ] + collector.updates
        logs = _logs(named, step + metric_updates)
    feeds = nest.flatten(inputs) + [y_true, sample_weight]
    return StepFunction(feeds, logs, signature)


def _inference(model: Any, signature: tuple | None) -> tuple[Any, Any]:
    """(inputs, outputs) of an inference forward pass: the model's own for signature None."""
    if signature is None:
        return model._input_struct, model._inference_outputs
    inputs = _step_inputs(model, signature)
    return inputs, model._forward(inputs, training=False)


def build_test_function(model: Any, y: np.ndarray, signature: tuple | None) -> StepFunction:
    """The evaluation step for targets like `y`: inference outputs, loss and metrics."""
    g = model.graph
    with g.as_default(), g.name_scope("test_step"):
        inputs, outputs = _inference(model, signature)
        y_true = _target_placeholder(y, "y_true")
        sample_weight = core_ops.placeholder(dtypes.float32, [None], name="sample_weight")
        _, metric_updates, named = _loss_and_metrics(model, y_true, outputs, sample_weight, [])
        logs = _logs(named, metric_updates)
    feeds = nest.flatten(inputs) + [y_true, sample_weight]
    return StepFunction(feeds, logs, signature)


def build_predict_function(model: Any, signature: tuple | None) -> StepFunction:
    g = model.graph
    with g.as_default(), g.name_scope("predict_step"):
        inputs, outputs = _inference(model, signature)
    return StepFunction(nest.flatten(inputs), outputs, signature)


def loss_weight(loss_weights: Any) -> float | None:
    """The factor of the one output's loss, from compile's `loss_weights` as Keras 3 reads it
    for one loss: a float, or a list, tuple or dict holding one number; None for none.

    Raises:
      ValueError: for another type (Keras 3 refuses an int too) or not exactly one weight.
    """
    if loss_weights is None:
        return None
    if not isinstance(loss_weights, (list, tuple, dict, float)):
        raise ValueError(
            "Expected `loss_weights` argument to be a float (single output case) or a list, "
            "tuple, or dict (multiple output case). Received instead: "
            f"loss_weights={loss_weights!r} of type {type(loss_weights)}"
        )
    flat = nest.flatten(loss_weights)
    if len(flat) != 1:
        raise ValueError(
            f"`loss_weights` must match the number of losses, got 1 losses and {len(flat)} weights."
        )
    return float(flat[0])


def compiled_loss(loss: Any) -> Loss:
    """The model's loss as a Loss object (one loss for the one output)."""
    if isinstance(loss, (list, tuple, dict)):
        if isinstance(loss, (list, tuple)) and len(loss) == 1:
            return losses_lib.as_loss(loss[0])
        raise NotImplementedError(
            "One loss per output (a list or dict of losses) is not supported."
        )
    if loss is None:
        raise ValueError("compile() needs a loss to fit or evaluate the model.")
    return losses_lib.as_loss(loss)

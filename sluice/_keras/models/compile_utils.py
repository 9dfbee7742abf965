"""`compile`'s loss and metrics over a model's outputs, as Keras 3's `trainers/compile_utils.py`
reads them.

One output: one loss, its weight, and every metric on that output (a nested list of metrics is
flattened). Several outputs (a list, tuple or dict of output tensors):

    loss="mse"                                   the same loss on every output
    loss=["mse", None, "sparse_categorical_crossentropy"]   one per output (None: no loss)
    loss={"out1": "mse", "out2": "mae"}          by output name (every output named)
    loss_weights=[1.0, 0.5] / {"out1": 1.0, "out2": 0.5}    one per loss
    metrics=[["mae"], ["accuracy"]] / {"out2": "accuracy"}  per output (a dict: some outputs)

The total loss is the sum of the weighted losses. With more than one loss, each output's
unweighted loss is also tracked by a `Mean` named "<output>_loss"; a metric of an output is
logged as "<output>_<metric>" (a name taken twice gets "_1", "_2"). An output's name is its
layer's name in a functional model, its key when the model outputs a dict; a subclassed model's
outputs have none (its losses are then named by the loss, its metrics by the metric).

Targets come as the outputs do: one array for one output; a list (one per output, None for an
output without a loss) or a dict by output name for several (`data.target_arrays`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from sluice._keras.losses import losses as losses_lib
from sluice._keras.losses.loss import Loss
from sluice._keras.metrics import metrics as metrics_lib
from sluice._keras.metrics.metric import Mean, Metric
from sluice._tf1.cells import nest
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Tensor
from sluice.framework.ops.array import fill_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import math_ops, reduction_ops


def output_names(model: Any, y_pred: Any = None) -> list[str | None]:
    """The names of the model's outputs in flat order (`nest.flatten(y_pred)`): the keys of a
    dict of outputs, else `model.output_names` (a functional model's output layers), else None
    for each."""
    struct = y_pred if y_pred is not None else model._inference_outputs
    names = getattr(model, "output_names", None)
    if (
        not isinstance(struct, dict)
        and names is not None
        and len(names) == len(nest.flatten(struct))
    ):
        return list(names)
    return output_names_of_structure(struct)


def flat_targets(y: Any, names: list[str | None], what: str = "The targets") -> list:
    """`y` (one target, a list or tuple of one per output, or a dict by output name) as one
    entry per output, in the order of `names` (None: an output without a target).

    Raises:
      ValueError: targets that do not match the outputs, naming both.
    """
    n = len(names)
    if isinstance(y, dict):
        if n == 1 and len(y) == 1:
            return list(y.values())
        unknown = [key for key in y if key not in names]
        if unknown:
            raise ValueError(
                f"{what} name outputs {unknown} the model does not have; its outputs are {names}."
            )
        return [y.get(name) for name in names]
    if isinstance(y, (list, tuple)) and not hasattr(y, "_fields"):
        if len(y) == n:
            return list(y)
        if n == 1:
            return [y]  # one output, whose target is a list (of numbers)
        raise ValueError(
            f"{what} hold {len(y)} arrays, but the model has {n} outputs {names}: give one "
            "per output (None for an output without a loss), or a dict by output name."
        )
    if n != 1:
        raise ValueError(
            f"{what} are one array, but the model has {n} outputs {names}: give a list of {n} "
            "arrays (one per output) or a dict by output name."
        )
    return [y]


def check_loss_weights(loss: Any, loss_weights: Any) -> None:
    """Keras 3's checks of `loss_weights` that need no model (at compile).

    Raises:
      ValueError: a type other than float, list, tuple or dict (an int too, as Keras), or not
        one weight per loss.
    """
    if loss_weights is None:
        return
    if not isinstance(loss_weights, (list, tuple, dict, float)):
        raise ValueError(
            "Expected `loss_weights` argument to be a float (single output case) or a list, "
            "tuple, or dict (multiple output case). Received instead: "
            f"loss_weights={loss_weights!r} of type {type(loss_weights)}"
        )
    losses = 1 if not isinstance(loss, (list, tuple, dict)) else len(loss)
    if len(nest.flatten(loss_weights)) != losses:
        raise ValueError(
            f"`loss_weights` must match the number of losses, got {losses} losses and "
            f"{len(nest.flatten(loss_weights))} weights."
        )


@dataclasses.dataclass
class OutputLoss:
    index: int  # of the output, in flat order
    loss: Loss
    weight: float | None
    tracker: Mean | None  # the output's unweighted loss, with several losses


class CompileLoss:
    """The compiled loss of a model: `compile`'s `loss` and `loss_weights`, resolved against
    the outputs when first called (see the module docstring)."""

    def __init__(self, loss: Any, loss_weights: Any = None):
        if loss is None:
            raise ValueError("compile() needs a loss to fit or evaluate the model.")
        check_loss_weights(loss, loss_weights)
        self.loss, self.loss_weights = _resolved(loss), loss_weights
        self.entries: list[OutputLoss] | None = None

    @property
    def metrics(self) -> list[Mean]:
        """The trackers of the outputs' losses (none with one loss), once built."""
        return [e.tracker for e in self.entries or [] if e.tracker is not None]

    def build(self, names: list[str | None]) -> None:
        """One `OutputLoss` per output that has a loss.

        Raises:
          ValueError: losses or weights that do not match the outputs.
        """
        n = len(names)
        losses, weights = self.loss, self.loss_weights
        if isinstance(losses, dict):
            if n == 1 and len(losses) == 1:
                losses = list(losses.values())
            elif set(losses) != set(names):
                raise ValueError(
                    f"Expected keys {names} in loss dict, but found loss.keys()={list(losses)}"
                )
            else:
                losses = [losses[name] for name in names]
                if isinstance(weights, dict):
                    weights = [weights.get(name) for name in names]
        if isinstance(losses, (list, tuple)):
            if len(losses) != n:
                raise ValueError(
                    f"`loss` holds {len(losses)} losses, but the model has {n} outputs {names}: "
                    "give one per output (None for an output without a loss), a dict by output "
                    "name, or one loss for every output."
                )
            per_weight = [None] * n if weights is None else nest.flatten(weights)
        else:  # one loss (and weight) for every output
            losses = [losses] * n
            per_weight = [None if weights is None else nest.flatten(weights)[0]] * n
        entries = [
            OutputLoss(i, loss, _weight(w), None)
            for i, (loss, w) in enumerate(zip(losses, per_weight))
            if loss is not None
        ]
        if len(entries) > 1:
            taken: dict[str, int] = {}
            for e in entries:
                name = _unique(f"{names[e.index] or e.loss.name}_loss", taken)
                e.tracker = Mean(name=name)
        self.entries = entries

    def __call__(
        self,
        y_true: Any,
        y_pred: Any,
        sample_weight: Any = None,
        regularization_losses: Any = None,
        names: list | None = None,
    ) -> Tensor:
        """The total loss: the sum of each output's loss of (its target, its prediction)
        weighted by `sample_weight`, times its `loss_weights` entry; each output's unweighted
        loss goes to its tracker. Builds on first use. `names`: the outputs' (`output_names`;
        default: a dict's keys, else none). `regularization_losses` (tf.keras 2's
        `self.compiled_loss(y, y_pred, regularization_losses=self.losses)`) are added, summed.

        Raises:
          ValueError: a target missing for an output with a loss.
        """
        flat_pred = nest.flatten(y_pred)
        names = names or output_names_of_structure(y_pred)
        if self.entries is None:
            self.build(names)
        flat_true = flat_targets(y_true, names)
        values = []
        for e in self.entries:
            target = flat_true[e.index]
            if target is None:
                raise ValueError(
                    f"The output {names[e.index] or e.index!r} has a loss "
                    f"({e.loss.name}) but no target: give one in `y`."
                )
            prediction = flat_pred[e.index]
            value = e.loss(target, prediction, sample_weight)
            if e.tracker is not None:
                size = fill_ops.cast(fill_ops.shape(prediction)[0], dtypes.float32)
                e.tracker.update_state(value, sample_weight=size)
            if e.weight is not None:  # Keras 3: the weight scales the compiled loss only
                value = value * core_ops.convert_to_tensor(e.weight, dtype=value.dtype)
            values.append(value)
        if not values:
            raise ValueError("`loss` gives none of the model's outputs a loss.")
        for term in regularization_losses or []:
            term = fill_ops.cast(term, values[0].dtype)
            values.append(term if term.shape.rank == 0 else reduction_ops.reduce_sum(term))
        return values[0] if len(values) == 1 else math_ops.add_n(values)


class LegacyCompiledLoss:
    """tf.keras 2's `model.compiled_loss`: the compiled loss plus `regularization_losses`,
    whose total also updates the model's loss tracker (the "loss" in the logs), as Keras 2's
    loss container did; Keras 3's steps update the tracker themselves."""

    def __init__(self, compile_loss: CompileLoss, model: Any):
        self.compile_loss, self.model = compile_loss, model

    @property
    def metrics(self) -> list[Mean]:
        return self.compile_loss.metrics

    def __call__(
        self, y_true: Any, y_pred: Any, sample_weight: Any = None, regularization_losses: Any = None
    ) -> Tensor:
        names = output_names(self.model, y_pred)
        total = self.compile_loss(y_true, y_pred, sample_weight, regularization_losses, names)
        tracker = self.model.metrics[0] if self.model.metrics else None
        if tracker is not None and tracker.name == "loss":
            size = fill_ops.cast(fill_ops.shape(nest.flatten(y_pred)[0])[0], dtypes.float32)
            tracker.update_state(total, sample_weight=size)
        return total


class CompileMetrics:
    """The compiled metrics of a model: `compile`'s `metrics`, resolved against the outputs
    and targets when first built (see the module docstring)."""

    def __init__(self, metrics: Any, weighted_metrics: Any = None):
        self.user, self.user_weighted = metrics, weighted_metrics
        # (output index, metric, whether it sees the sample weights), unweighted ones first
        self.entries: list[tuple[int, Metric, bool]] | None = None
        self.log_names: dict[int, str] = {}  # id(metric) -> its name in the logs

    @property
    def metrics(self) -> list[Metric]:
        return [m for _, m, _ in self.entries or []]

    def reset_state(self) -> None:
        for metric in self.metrics:
            metric.reset_state()

    def result(self) -> dict:
        """{log name: result} of the built metrics (tf.keras 2's container)."""
        return {self.log_names.get(id(m), m.name): m.result() for m in self.metrics}

    def build(self, names: list[str | None], y_true: list, y_pred: list) -> None:
        """The metrics of each output, made for its target and prediction (which pick the
        accuracy). `y_true`, `y_pred`: one tensor per output, in flat order. A weighted metric
        whose log name an unweighted one took is logged as "weighted_<name>" (Keras 3).

        Raises:
          ValueError: metrics that do not match the outputs, or a metric on an output without
            a target.
        """
        n = len(names)
        entries, taken = [], {}
        for weighted, user in ((False, self.user), (True, self.user_weighted)):
            argument = "weighted_metrics" if weighted else "metrics"
            for i, identifiers in enumerate(_per_output(user, names, argument)):
                if identifiers and y_true[i] is None:
                    raise ValueError(
                        f"The output {names[i] or i!r} has {argument} {identifiers} but no "
                        "target: give one in `y`."
                    )
                prefix = f"{names[i]}_" if n > 1 and names[i] else ""
                for identifier in identifiers:
                    metric = metrics_lib.get(identifier, y_true[i], y_pred[i])
                    name = prefix + metric.name
                    if weighted and name in taken:
                        name = f"{prefix}weighted_{metric.name}"
                    self.log_names[id(metric)] = _unique(name, taken)
                    entries.append((i, metric, weighted))
        self.entries = entries

    def update_state(
        self, y_true: Any, y_pred: Any, sample_weight: Any = None, names: list | None = None
    ) -> None:
        """Each metric updated with its output's (target, prediction): those of `metrics`
        unweighted, those of `weighted_metrics` weighted by `sample_weight` (Keras 3's; also
        tf.keras 2's `compiled_metrics.update_state(y, y_pred, sample_weight)`). Builds on
        first use. `names` as for `CompileLoss`."""
        if not self.user and not self.user_weighted:
            return
        names = names or output_names_of_structure(y_pred)
        flat_true, flat_pred = flat_targets(y_true, names), nest.flatten(y_pred)
        if self.entries is None:
            self.build(names, flat_true, flat_pred)
        for i, metric, weighted in self.entries:
            if weighted and sample_weight is not None:
                metric.update_state(flat_true[i], flat_pred[i], sample_weight=sample_weight)
            else:
                metric.update_state(flat_true[i], flat_pred[i])


def _per_output(user: Any, names: list[str | None], argument: str) -> list[list]:
    """`compile`'s metrics (or weighted metrics) as one list of identifiers per output."""
    n = len(names)
    if not user:
        return [[] for _ in names]
    if n == 1:
        return [nest.flatten(user)]
    if isinstance(user, (list, tuple)) and len(user) == n:
        return [_as_list(m) for m in user]
    if isinstance(user, dict) and set(user) <= set(names):
        return [_as_list(user.get(name)) for name in names]
    raise ValueError(
        f"Invalid `{argument}`: for a model with {n} outputs {names}, give a list with one "
        "entry (a metric, a list of metrics or None) per output, or a dict by output "
        f"name. Received: {argument}={user!r}"
    )


def output_names_of_structure(y_pred: Any) -> list[str | None]:
    """A dict's keys (in flat order), else no names."""
    if isinstance(y_pred, dict):
        return [str(key) for key in sorted(y_pred)]
    return [None] * len(nest.flatten(y_pred))


def _resolved(loss: Any) -> Any:
    """`loss` with each loss a `Loss` object (None kept), so that an unknown name is refused at
    compile."""
    if isinstance(loss, dict):
        return {key: _resolved(value) for key, value in loss.items()}
    if isinstance(loss, (list, tuple)):
        return [_resolved(value) for value in loss]
    return None if loss is None else losses_lib.as_loss(loss)


def _weight(value: Any) -> float | None:
    return None if value is None else float(value)


def _as_list(metrics: Any) -> list:
    if metrics is None:
        return []
    return list(metrics) if isinstance(metrics, (list, tuple)) else [metrics]


def _unique(name: str, taken: dict[str, int]) -> str:
    """`name`, or `name_1`, `name_2`, ... when taken (Keras's numbering of equal log names)."""
    if name not in taken:
        taken[name] = 1
        return name
    index = taken[name]
    taken[name] += 1
    return f"{name}_{index}"

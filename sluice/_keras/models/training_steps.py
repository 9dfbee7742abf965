"""The steps of `Model` that a subclass may override, as Keras 3 has them on TensorFlow:
`train_step(data)`, `test_step(data)`, `predict_step(data)`, and the pieces they use:
`compute_loss`, `compute_metrics`, `get_metrics_result`, `metrics` and `losses`.

`fit`, `evaluate` and `predict` trace a step once per data structure into the model's graph
(`step_functions.build_step`) and run it once per batch. A step is symbolic code: `data` holds
placeholders, and what it returns is fetched after every update it built. An overridden
`train_step`, as the Keras guide "Customizing what happens in fit() with TensorFlow" writes it:

    class CustomModel(sl.Model):
        def train_step(self, data):
            x, y = data
            with sl.GradientTape() as tape:
                y_pred = self(x, training=True)
                loss = self.compute_loss(y=y, y_pred=y_pred)
            grads = tape.gradient(loss, self.trainable_variables)
            self.optimizer.apply(grads, self.trainable_variables)
            for metric in self.metrics:
                if metric.name == "loss":
                    metric.update_state(loss)
                else:
                    metric.update_state(y, y_pred)
            return {m.name: m.result() for m in self.metrics}

`data` is what `fit` was given, as Keras structures it (`sl.utils.unpack_x_y_sample_weight`):
`(x, y)` for `fit(x, y)`, `(x, y, sample_weight)` with sample or class weights, `x` alone (or
`(x,)` for a tuple `x`) for `fit(x)`, and for a `sl.data.Dataset` what it yields.
"""

from __future__ import annotations

import inspect
import warnings
from typing import Any

from sluice._keras import config
from sluice._keras.layers import tracking
from sluice._keras.metrics.metric import Metric
from sluice._keras.models import compile_utils, fit_state, step_trace
from sluice._keras.models import data as data_lib
from sluice._tf1.cells import nest
from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Tensor
from sluice.framework.ops.array import fill_ops
from sluice.framework.ops.math import math_ops, reduction_ops


class TrainingSteps:
    """The overridable steps of `Model` (mixed into `Trainer`; see the module docstring)."""

    # -- the steps ------------------------------------------------------------------------------
    def train_step(self, data: Any) -> dict:
        """One training step on the batch `data`; returns the logs (name -> value).

        The built-in step: the forward pass in training mode, `compute_loss`, the loss tracker
        (weighted by the batch size), `compute_metrics`, and the optimizer's update of
        `trainable_weights`. Override it to train differently (see the module docstring).

        A model without trainable weights warns, as Keras 3 does, and updates nothing.
        """
        x, y, sample_weight = data_lib.unpack_x_y_sample_weight(data)
        y_pred = self._forward(x, training=True)
        loss = self._compute_loss(x, y, y_pred, sample_weight, training=True)
        self._loss_tracker.update_state(loss, sample_weight=_batch_size(x, y))
        logs = self.compute_metrics(x, y, y_pred, sample_weight)
        variables = self.trainable_weights
        if not variables:  # as Keras 3: the loss and metrics are still computed and logged
            warnings.warn("The model does not have any trainable weights.", stacklevel=2)
            return logs
        self._use_graph_optimizer(variables[0].dtype)
        self.optimizer.minimize(loss, var_list=variables)
        return logs

    def test_step(self, data: Any) -> dict:
        """One evaluation step on the batch `data` (inference mode); returns the logs.

        The loss is Keras 3's `compute_loss`: the compiled loss plus the `add_loss` terms of
        the forward pass (activity regularizers included) and the weights' regularization. The
        built-in step reuses the model's own inference outputs when `data` holds its input
        placeholders, the loss comes from `compile` and no layer called in the model's graph
        ever added a loss term (so evaluation adds no forward pass to the graph); otherwise it
        runs a forward pass and collects its terms.
        """
        x, y, sample_weight = data_lib.unpack_x_y_sample_weight(data)
        if (
            x is self._input_struct
            and self._compile_loss is not None
            and not tracking.has_losses(self._graph)
        ):
            y_pred = self._inference_outputs
        else:
            y_pred = self._forward(x, training=False)
        loss = self._compute_loss(x, y, y_pred, sample_weight, training=False)
        self._loss_tracker.update_state(loss, sample_weight=_batch_size(x, y))
        return self.compute_metrics(x, y, y_pred, sample_weight)

    def predict_step(self, data: Any) -> Any:
        """The model's outputs (inference mode) for the batch `data`."""
        x, _, _ = data_lib.unpack_x_y_sample_weight(data)
        if x is self._input_struct:
            return self._inference_outputs
        return self._forward(x, training=False)

    # -- what the steps use ---------------------------------------------------------------------
    def compute_loss(
        self,
        x: Any = None,
        y: Any = None,
        y_pred: Any = None,
        sample_weight: Any = None,
        training: bool = True,
    ) -> Tensor:
        """The total loss of a batch (Keras 3's): the compiled loss of (y, y_pred) weighted by
        `sample_weight` and scaled by `loss_weights` (summed over the outputs, see
        `compile_utils`), plus every term of `self.losses` (weight regularization, and the
        `add_loss` terms of the calls in this step).

        Raises:
          ValueError: no loss at all (compile() was given none and nothing called add_loss), or
            a compiled loss without targets `y`.
        """
        del x, training
        terms = []
        if self._compile_loss is not None:
            if y is None:
                raise ValueError(
                    f"Model {self.name!r} was compiled with a loss, which needs targets `y`; the "
                    "data has none. Pass `y` to fit (or yield (x, y) batches), or compile without "
                    "a loss when the model's losses come from add_loss."
                )
            names = compile_utils.output_names(self, y_pred)
            terms.append(self._compile_loss(y, y_pred, sample_weight, names=names))
        dtype = terms[0].dtype if terms else dtypes.as_dtype(config.floatx())
        for term in self.losses:
            term = fill_ops.cast(term, dtype)
            terms.append(term if term.shape.rank == 0 else reduction_ops.reduce_sum(term))
        if not terms:
            raise ValueError("No loss to compute. Provide a `loss` argument in `compile()`.")
        return terms[0] if len(terms) == 1 else math_ops.add_n(terms)

    def _compute_loss(
        self, x: Any, y: Any, y_pred: Any, sample_weight: Any, training: bool
    ) -> Tensor:
        """`compute_loss`, without `training` for an override that does not take it (Keras
        added the argument in 3.3)."""
        if "training" in inspect.signature(self.compute_loss).parameters:
            return self.compute_loss(x, y, y_pred, sample_weight, training=training)
        return self.compute_loss(x, y, y_pred, sample_weight)

    def compute_metrics(self, x: Any, y: Any, y_pred: Any, sample_weight: Any = None) -> dict:
        """Updates the compiled metrics with (y, y_pred) (`metrics` unweighted, as Keras 3's;
        `weighted_metrics` weighted by `sample_weight`) and returns `get_metrics_result()`.

        Raises:
          ValueError: compiled metrics and no targets `y`.
        """
        del x
        if self._compile_metrics is not None:
            if y is None:
                raise ValueError(
                    f"Model {self.name!r} was compiled with metrics "
                    f"{self._metric_identifiers}, which need targets `y`; the data has none."
                )
            names = compile_utils.output_names(self, y_pred)
            self._compile_metrics.update_state(y, y_pred, sample_weight, names=names)
        return self.get_metrics_result()

    def get_metrics_result(self) -> dict:
        """{name: result} of every metric in `metrics` (a metric that has seen nothing yet: 0)."""
        logs = {}
        for metric in self.metrics:
            result = metric.result() if metric.variables else 0.0
            if isinstance(result, dict):
                logs.update(result)
            else:
                logs[self._log_name(metric)] = result
        return logs

    def _log_name(self, metric: Metric) -> str:
        """A metric's name in the logs: "<output>_<name>" for a compiled metric of one of
        several outputs (see `compile_utils`), else its name."""
        compiled = self._compile_metrics
        return compiled.log_names.get(id(metric), metric.name) if compiled else metric.name

    @property
    def metrics(self) -> list:
        """The metrics fit and evaluate reset and log (Keras 3's order): the loss tracker, the
        compiled metrics and the trackers of each output's loss (once built), then every
        `Metric` held as an attribute of the model (`self.loss_tracker =
        sl.metrics.Mean(name="loss")`) or of its layers."""
        found = [self._loss_tracker] if self._loss_tracker is not None else []
        if self._compile_metrics is not None:
            found += self._compile_metrics.metrics
        if self._compile_loss is not None:
            found += self._compile_loss.metrics
        found += _attribute_metrics(self)
        return list({id(m): m for m in found}.values())

    @property
    def metrics_names(self) -> list[str]:
        return [self._log_name(m) for m in self.metrics]

    def reset_metrics(self) -> None:
        for metric in self.metrics:
            metric.reset_state()

    @property
    def losses(self) -> list[Tensor]:
        """The regularization terms of the weights, and, inside a step, the `add_loss` terms of
        the calls it made so far (Keras 3's `model.losses`)."""
        return super().losses + step_trace.traced_losses(self._graph)

    # -- helpers of the steps --------------------------------------------------------------------
    def _use_graph_optimizer(self, dtype: Any = None) -> None:
        """Makes `self.optimizer` keep its learning rate in a Variable (see `fit_state`)."""
        if dtype is None:
            variables = self.trainable_weights
            dtype = variables[0].dtype if variables else dtypes.as_dtype(config.floatx())
        self.optimizer = fit_state.graph_optimizer(self.optimizer, self.graph, dtype)

    def _build_compiled_metrics(self, data: Any, y_pred: Any = None) -> None:
        """Creates the compiled metrics for the targets of `data` and `y_pred` (default: the
        model's inference outputs), so that an overridden step finds them in `metrics`."""
        _, y, _ = data_lib.unpack_x_y_sample_weight(data)
        compiled = self._compile_metrics
        y_pred = self._inference_outputs if y_pred is None else y_pred
        if compiled is None or compiled.entries is not None or y is None or y_pred is None:
            return  # nothing to build, or built by the first compute_metrics instead
        names = compile_utils.output_names(self, y_pred)
        try:
            y_true = compile_utils.flat_targets(y, names)
        except ValueError:
            return  # targets of another structure: left to the step's own compute_metrics
        flat_pred = nest.flatten(y_pred)
        if all(isinstance(t, (Tensor, type(None))) for t in y_true + flat_pred):
            compiled.build(names, y_true, flat_pred)


def _batch_size(x: Any, y: Any) -> Tensor:
    """The number of samples of a batch, as a float (the loss tracker's weight)."""
    first = next(t for t in nest.flatten(y) + nest.flatten(x) if t is not None)
    return fill_ops.cast(fill_ops.shape(first)[0], dtypes.float32)


def _attribute_metrics(model: Any) -> list[Metric]:
    """The Metrics held as attributes (or in lists and tuples of attributes) of `model` and of
    its layers, in assignment order; a sub-model's own are left out, as in Keras."""
    found: list[Metric] = []
    seen: set[int] = set()

    def visit(layer: Any) -> None:
        if id(layer) in seen:
            return
        seen.add(id(layer))
        for key, value in vars(layer).items():
            if key.startswith("_"):
                continue
            for item in value if isinstance(value, (list, tuple)) else [value]:
                if isinstance(item, Metric):
                    found.append(item)
        for child in layer.sublayers():
            if not isinstance(child, TrainingSteps):
                visit(child)

    visit(model)
    return found

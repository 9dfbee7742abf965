"""`EstimatorSpec` (TF1 `tf.estimator.EstimatorSpec`): what a model_fn returns, validated as
TF 1.15 validates it, and the rules for calling a model_fn with the arguments it declares."""

from __future__ import annotations

import collections
import functools
import inspect
import logging
from typing import Any, Callable

from sluice._export import export
from sluice._tf1.estimator.mode_keys import ModeKeys
from sluice._tf1.training.scaffold import Scaffold
from sluice._tf1.training.session_run_hook import SessionRunHook
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Operation, Tensor
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.array.array_ops import reshape
from sluice.framework.variables import Variable

_logger = logging.getLogger("sluice")

LOSS_METRIC_KEY = "loss"
VALID_MODEL_FN_ARGS = frozenset({"features", "labels", "mode", "params", "self", "config"})

_FIELDS = (
    "mode",
    "predictions",
    "loss",
    "train_op",
    "eval_metric_ops",
    "export_outputs",
    "training_chief_hooks",
    "training_hooks",
    "scaffold",
    "evaluation_hooks",
    "prediction_hooks",
)

_NOT_IN_DEFAULT_GRAPH = (
    '{0} with "{1}" must be from the default graph. Possible causes of this error include: '
    "\n\n1) {0} was created outside the context of the default graph.\n\n2) The object "
    'passed through to EstimatorSpec was not created in the most recent call to "model_fn".'
)


@export("estimator.EstimatorSpec")
class EstimatorSpec(collections.namedtuple("EstimatorSpec", _FIELDS)):
    """The ops a model_fn returns to its Estimator, checked for the mode.

    TRAIN needs `loss` and `train_op`, EVAL needs `loss`, PREDICT needs `predictions`; the
    rest may be given in any mode and is ignored where it has no use.

    Args:
      mode: a `ModeKeys` value.
      predictions: a Tensor or a dict of Tensors (`predict` yields their values).
      loss: a scalar Tensor (shape [1] is reshaped to []).
      train_op: the Operation (or Tensor) of one training step.
      eval_metric_ops: {name: (value_tensor, update_op)}, as `sl.metrics.*` return.
      export_outputs: accepted and kept; sluice exports no SavedModel.
      training_chief_hooks, training_hooks, evaluation_hooks, prediction_hooks:
        `sl.train.SessionRunHook`s run in that mode.
      scaffold: an `sl.train.Scaffold` (default: a new one).

    Raises:
      ValueError: a field the mode needs is missing, a loss is not scalar, or a tensor is not
        of the default graph.
      TypeError: a field is of the wrong type (not a Tensor, not a hook, not a 2-tuple).

    >>> x = sl.constant([1.0, 2.0])
    >>> spec = sl.estimator.EstimatorSpec("infer", predictions={"y": 2 * x})
    >>> sorted(spec.predictions), spec.loss, spec.training_hooks
    (['y'], None, ())
    >>> sl.estimator.EstimatorSpec("train", loss=sl.reduce_sum(x))
    Traceback (most recent call last):
    ...
    ValueError: Missing train_op.
    """

    def __new__(
        cls,
        mode: str,
        predictions: Any = None,
        loss: Any = None,
        train_op: Any = None,
        eval_metric_ops: dict | None = None,
        export_outputs: dict | None = None,
        training_chief_hooks: Any = None,
        training_hooks: Any = None,
        scaffold: Scaffold | None = None,
        evaluation_hooks: Any = None,
        prediction_hooks: Any = None,
    ) -> "EstimatorSpec":
        return super().__new__(
            cls,
            mode=mode,
            train_op=_validate_train_op(train_op, mode),
            loss=_validate_loss(loss, mode),
            predictions=_validate_predictions(predictions, mode),
            export_outputs=export_outputs,
            training_hooks=_validate_hooks(training_hooks),
            evaluation_hooks=_validate_hooks(evaluation_hooks),
            prediction_hooks=_validate_hooks(prediction_hooks),
            training_chief_hooks=_validate_hooks(training_chief_hooks),
            eval_metric_ops=_validate_eval_metric_ops(eval_metric_ops),
            scaffold=_validate_scaffold(scaffold),
        )

    def _replace(self, **kwds: Any) -> "EstimatorSpec":
        """A new, validated EstimatorSpec with the given fields replaced (not the mode)."""
        if "mode" in kwds and self.mode != kwds["mode"]:
            raise ValueError("mode of EstimatorSpec cannot be changed.")
        return EstimatorSpec(**{**self._asdict(), **kwds})


def _is_tensor_like(x: Any) -> bool:
    return isinstance(x, (Tensor, Variable))


def _check_graph(x: Any, what: str, name: str) -> None:
    if x.graph is not graph_lib.get_default_graph():
        raise ValueError(_NOT_IN_DEFAULT_GRAPH.format(what, name))


def _validate_train_op(train_op: Any, mode: str) -> Any:
    if train_op is None:
        if mode == ModeKeys.TRAIN:
            raise ValueError("Missing train_op.")
        return None
    if not (isinstance(train_op, Operation) or _is_tensor_like(train_op)):
        raise TypeError(f"train_op must be Operation or Tensor, given: {train_op}")
    if isinstance(train_op, Variable):
        train_op = train_op.op
    _check_graph(train_op, "train_op", train_op.name)
    return train_op


def _validate_loss(loss: Any, mode: str) -> Any:
    if loss is None:
        if mode in (ModeKeys.TRAIN, ModeKeys.EVAL):
            raise ValueError("Missing loss.")
        return None
    if not _is_tensor_like(loss):
        raise TypeError(f"loss must be Tensor, given: {loss}")
    shape = loss.get_shape()
    if shape.num_elements() not in (None, 1):
        raise ValueError(f"Loss must be scalar, given: {loss}")
    _check_graph(loss, "loss", loss.name)
    if not shape.is_compatible_with(TensorShape([])):
        loss = reshape(loss, [])
    return loss


def _validate_predictions(predictions: Any, mode: str) -> Any:
    if predictions is None:
        if mode == ModeKeys.PREDICT:
            raise ValueError("Missing predictions.")
        return {}
    if isinstance(predictions, dict):
        for key, value in predictions.items():
            if not _is_tensor_like(value):
                raise TypeError(f"predictions[{key}] must be Tensor, given: {value}")
        for key, value in predictions.items():
            _check_graph(value, "prediction values", f"{key}: {value.name}")
        return dict(predictions)
    if not _is_tensor_like(predictions):
        raise TypeError(f"predictions must be Tensor, given: {predictions}")
    _check_graph(predictions, "prediction values", predictions.name)
    return predictions


def _validate_hooks(hooks: Any) -> tuple:
    hooks = tuple(hooks or [])
    for hook in hooks:
        if not isinstance(hook, SessionRunHook):
            raise TypeError(f"All hooks must be SessionRunHook instances, given: {hook}")
    return hooks


def _validate_eval_metric_ops(eval_metric_ops: Any) -> dict:
    if eval_metric_ops is None:
        return {}
    if not isinstance(eval_metric_ops, dict):
        raise TypeError(f"eval_metric_ops must be a dict, given: {eval_metric_ops}")
    for key, value in eval_metric_ops.items():
        if not isinstance(value, tuple) or len(value) != 2:
            raise TypeError(
                "Values of eval_metric_ops must be (metric_value, update_op) tuples, "
                f"given: {value} for key: {key}"
            )
        for part in value:
            if not (isinstance(part, Operation) or _is_tensor_like(part)):
                raise TypeError(
                    f"eval_metric_ops[{key!r}] holds {part!r}: the value and the update op "
                    "must be Tensors or Operations (as sl.metrics.* return them)."
                )
            _check_graph(part, "eval_metric_ops", f"{key}: {part.name}")
    return dict(eval_metric_ops)


def _validate_scaffold(scaffold: Any) -> Scaffold:
    scaffold = scaffold or Scaffold()
    if not isinstance(scaffold, Scaffold):
        raise TypeError(f"scaffold must be tf.train.Scaffold. Given: {scaffold}")
    return scaffold


def fn_args(fn: Callable) -> tuple[str, ...]:
    """The names of the arguments `fn` takes by name (TF's `function_utils.fn_args`): a bound
    method without `self`, a `functools.partial` without those it already binds."""
    if isinstance(fn, functools.partial):
        bound = set(fn.keywords)
        names = fn_args(fn.func)[len(fn.args) :]
        return tuple(name for name in names if name not in bound)
    if not inspect.isfunction(fn) and not inspect.ismethod(fn) and hasattr(fn, "__call__"):
        fn = fn.__call__
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return tuple(
        name
        for name, parameter in inspect.signature(fn).parameters.items()
        if parameter.kind in kinds
    )


def verify_model_fn_args(model_fn: Callable, params: Any) -> None:
    """TF's checks of a model_fn's signature against the Estimator's params.

    Raises:
      ValueError: no `features` argument, params given but not taken, or an argument an
        Estimator cannot pass.
    """
    args = set(fn_args(model_fn))
    if "features" not in args:
        raise ValueError(f"model_fn ({model_fn}) must include features argument.")
    if params is not None and "params" not in args:
        raise ValueError(
            f"model_fn ({model_fn}) does not include params argument, but params ({params}) "
            "is passed to Estimator."
        )
    if params is None and "params" in args:
        _logger.warning(
            "Estimator's model_fn (%s) includes params argument, but params are not passed "
            "to Estimator.",
            model_fn,
        )
    unexpected = sorted(args - VALID_MODEL_FN_ARGS)
    if unexpected:
        raise ValueError(f"model_fn ({model_fn}) has following not expected args: {unexpected}")

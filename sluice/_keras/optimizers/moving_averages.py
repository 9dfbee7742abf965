"""`ExponentialMovingAverage` (TF1 `tf.train.ExponentialMovingAverage`) and
`assign_moving_average`.

`apply(var_list)` creates one shadow Variable per variable, named `<var>/ExponentialMovingAverage`
(non-trainable, global, initialized to the variable's initial value; a Tensor's shadow starts at
zeros), adds each Variable to the MOVING_AVERAGE_VARIABLES collection, and returns one op that
moves every shadow towards its variable:

    decay = min(decay, (1 + num_updates) / (10 + num_updates))   # only when num_updates is given
    shadow -= (1 - decay) * (shadow - variable)

With `zero_debias`, the shadows of Tensors (TF1 debiases only those) are kept as
`biased / (1 - decay ** local_step)` from the variables `<shadow>/biased` and `<shadow>/local_step`
(Kingma & Ba's correction), so early averages are not pulled towards zero.
"""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice.framework.ir import dtypes
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import GraphKeys, Operation, Tensor
from sluice.framework.ops.array import fill_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import math_ops
from sluice.framework.variables import (
    Variable,
    global_variables,
    init_scope,
    trainable_variables,
)

_FLOATING = (dtypes.float16, dtypes.float32, dtypes.float64)


def _shadow_variable(name: str, initial_value: Any) -> Variable:
    """A non-trainable global Variable named exactly `name` (outside any name scope)."""
    return Variable(initial_value, trainable=False, name=name + "/")


def _zero_debias(shadow: Variable, value: Tensor, decay: Tensor) -> Tensor:
    """The update of a zero-debiased shadow (see the module text); returns its new value."""
    shape = shadow.shape.as_list()
    with init_scope(graph_lib.get_default_graph()):
        biased = _shadow_variable(shadow.op.name + "/biased", fill_ops.zeros(shape, shadow.dtype))
        local_step = _shadow_variable(
            shadow.op.name + "/local_step", fill_ops.zeros([], shadow.dtype)
        )
    one_minus_decay = 1.0 - decay
    new_biased = biased.assign_sub((biased - value) * one_minus_decay)
    new_step = local_step.assign_add(1.0)
    with graph_lib.control_dependencies([new_biased, new_step]):
        unbiased = new_biased / (1.0 - math_ops.pow(decay, new_step))
        return shadow.assign(unbiased)


def assign_moving_average(
    variable: Variable, value: Any, decay: Any, zero_debias: bool = True, name: str | None = None
) -> Tensor:
    """`variable -= (1 - decay) * (variable - value)` (TF1 `assign_moving_average`); with
    `zero_debias`, the debiased average of `value` (see the module text). Returns the new value.
    """
    with graph_lib.name_scope(name, "AssignMovingAvg", [variable, value, decay]):
        value = core_ops.convert_to_tensor(value, dtype=variable.dtype)
        decay = core_ops.convert_to_tensor(decay, dtype=variable.dtype, name="decay")
        if zero_debias:
            return _zero_debias(variable, value, decay)
        return variable.assign_sub((variable - value) * (1.0 - decay))


@export("train.ExponentialMovingAverage")
class ExponentialMovingAverage:
    """Keeps moving averages of variables (shadow variables), e.g. to evaluate a model with
    averaged weights: `Saver(ema.variables_to_restore())` restores the averages into the model's
    variables.

    Args:
      decay: the decay, a float (typically 0.999 or 0.9999).
      num_updates: an optional count of updates (a Tensor, e.g. the global step); the decay is
        then `min(decay, (1 + num_updates) / (10 + num_updates))`, so early averages move fast.
      zero_debias: debias the averages of Tensors (not Variables), as TF1.
      name: the name of the shadows' suffix and of the ops.

    >>> w = sl.Variable(0.0, name="w")
    >>> ema = sl.train.ExponentialMovingAverage(0.5)
    >>> with sl.control_dependencies([w.assign(4.0)]):
    ...     update = ema.apply([w])
    >>> with sl.Session() as sess:
    ...     sess.run(sl.global_variables_initializer())
    ...     sess.run(update)
    ...     print(ema.average(w).op.name, sess.run(ema.average(w)))
    w/ExponentialMovingAverage 2.0
    """

    def __init__(
        self,
        decay: float,
        num_updates: Any = None,
        zero_debias: bool = False,
        name: str = "ExponentialMovingAverage",
    ):
        self._decay = decay
        self._num_updates = num_updates
        self._zero_debias = zero_debias
        self._name = name
        self._averages: dict[Any, Variable] = {}

    @property
    def name(self) -> str:
        return self._name

    def apply(self, var_list: list[Any] | None = None) -> Operation:
        """Creates the shadows of `var_list` (default: the trainable variables) and returns the
        op that updates them all.

        Raises:
          TypeError: a variable is not half, float or double.
          ValueError: a variable already has a moving average.
        """
        var_list = trainable_variables() if var_list is None else list(var_list)
        g = graph_lib.get_default_graph()
        debiased = set()
        for var in var_list:
            if var.dtype not in _FLOATING:
                raise TypeError(
                    f"ExponentialMovingAverage: the variables must be half, float, or double: "
                    f"{var.name} is {var.dtype.name}"
                )
            if var in self._averages:
                raise ValueError(f"Moving average already computed for: {var.name}")
            with init_scope(g):
                name = f"{var.op.name}/{self._name}"
                if isinstance(var, Variable):
                    shadow = _shadow_variable(name, var.initialized_value())
                    graph_lib.add_to_collection(GraphKeys.MOVING_AVERAGE_VARIABLES, var)
                else:
                    var = core_ops.convert_to_tensor(var)
                    if not var.shape.is_fully_defined():
                        raise ValueError(
                            f"ExponentialMovingAverage: the shape of {var.name} must be fully "
                            f"defined, got {var.shape}"
                        )
                    shadow = _shadow_variable(name, fill_ops.zeros(var.shape.as_list(), var.dtype))
                    if self._zero_debias:
                        debiased.add(shadow)
            self._averages[var] = shadow
        with graph_lib.name_scope(self._name) as scope:
            decay = core_ops.convert_to_tensor(self._decay, dtype=dtypes.float32, name="decay")
            if self._num_updates is not None:
                n = fill_ops.cast(self._num_updates, dtypes.float32, name="num_updates")
                decay = math_ops.minimum(decay, (1.0 + n) / (10.0 + n))
            updates = []
            for var in var_list:
                shadow = self._averages[var]
                var_decay = (
                    decay if shadow.dtype == dtypes.float32 else fill_ops.cast(decay, shadow.dtype)
                )
                updates.append(
                    assign_moving_average(shadow, var, var_decay, zero_debias=shadow in debiased)
                )
            return core_ops.group(*updates, name=scope)

    def average(self, var: Any) -> Variable | None:
        """The shadow of `var`, or None when `apply` was not given it."""
        return self._averages.get(var)

    def average_name(self, var: Any) -> str:
        """The name of `var`'s shadow (`<var>/ExponentialMovingAverage`), also before `apply`:
        the name to restore the average from in a checkpoint."""
        if var in self._averages:
            return self._averages[var].op.name
        return f"{var.op.name}/{self._name}"

    def variables_to_restore(self, moving_avg_variables: Any = None) -> dict[str, Variable]:
        """The `{checkpoint name: variable}` map that loads the averages into the variables:
        each moving-averaged variable (default: the trainable and the MOVING_AVERAGE_VARIABLES
        ones) under its shadow's name, every other global variable under its own name.

        >>> w = sl.Variable(1.0, name="w")
        >>> ema = sl.train.ExponentialMovingAverage(0.9)
        >>> sorted(ema.variables_to_restore())
        ['w/ExponentialMovingAverage']
        """
        if moving_avg_variables is None:
            moving_avg_variables = trainable_variables() + graph_lib.get_collection(
                GraphKeys.MOVING_AVERAGE_VARIABLES
            )
        averaged = list(dict.fromkeys(moving_avg_variables))
        name_map = {self.average_name(v): v for v in averaged}
        for v in global_variables():
            if v not in averaged and v.op.name not in name_map:
                name_map[v.op.name] = v
        return name_map

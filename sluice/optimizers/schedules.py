"""Learning-rate schedules in TF1 spelling (`sl.train.exponential_decay`, ...) over optax schedules.

Each function returns a scalar Tensor: one `LearningRateSchedule` op whose kernel evaluates an
optax schedule at the value of `global_step` (a Variable or Tensor), so the rate follows the
step kept in the graph and is restored with it. Pass the Tensor as an optimizer's learning rate.

| TF1                 | optax                                                 |
| ------------------- | ----------------------------------------------------- |
| exponential_decay   | exponential_decay(lr, decay_steps, decay_rate, staircase) |
| polynomial_decay    | polynomial_schedule(lr, end, power, decay_steps)      |
| cosine_decay        | cosine_decay_schedule(lr, decay_steps, alpha)         |
| piecewise_constant  | join_schedules(constant_schedule(v)..., boundaries+1) |
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax.numpy as jnp
import optax

from sluice.framework.ir import dtypes
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.registry import not_differentiable, register_op
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops import core_ops


def _schedule_infer(op) -> list:
    (step,) = op.inputs
    if step.shape.rank not in (None, 0):
        raise ValueError(f"the step must be a scalar, got shape {step.shape}")
    if not (dtypes.is_integer(step.dtype) or dtypes.is_floating(step.dtype)):
        raise TypeError(f"the step must be a number, got {step.dtype.name}")
    return [(op.get_attr("dtype"), TensorShape([]))]


def _schedule_kernel(step, *, schedule, dtype, **_):
    return jnp.asarray(schedule(step), dtype)


register_op("LearningRateSchedule", infer=_schedule_infer, kernel=_schedule_kernel)
not_differentiable("LearningRateSchedule")


def schedule_value(
    schedule: Callable[[Any], Any],
    global_step: Any,
    dtype: Any = dtypes.float32,
    name: str | None = None,
) -> Tensor:
    """The value of an optax schedule (`step -> rate`) at `global_step`, as a scalar Tensor.

    >>> step = sl.train.get_or_create_global_step()
    >>> lr = sl.train.schedule_value(optax.warmup_cosine_decay_schedule(0., 1e-3, 100, 1000), step)
    >>> with sl.Session() as sess:
    ...     sess.run(sl.global_variables_initializer())
    ...     step.load(100, sess)
    ...     print(sess.run(lr))   # the peak, at the end of the warmup
    0.001
    """
    if global_step is None:
        raise ValueError("global_step is required for a learning-rate schedule.")
    step = core_ops.convert_to_tensor(global_step)
    attrs = {"schedule": schedule, "dtype": dtypes.as_dtype(dtype)}
    return core_ops.apply_op(
        "LearningRateSchedule", [step], attrs, name=name or "learning_rate"
    ).outputs[0]


def exponential_decay(
    learning_rate: float,
    global_step: Any,
    decay_steps: int,
    decay_rate: float,
    staircase: bool = False,
    name: str | None = None,
) -> Tensor:
    """learning_rate * decay_rate ^ (global_step / decay_steps) (floored when staircase)."""
    if decay_steps <= 0:
        raise ValueError(f"decay_steps must be positive, got {decay_steps}.")
    schedule = optax.exponential_decay(learning_rate, decay_steps, decay_rate, staircase=staircase)
    return schedule_value(schedule, global_step, name=name or "ExponentialDecay")


def polynomial_decay(
    learning_rate: float,
    global_step: Any,
    decay_steps: int,
    end_learning_rate: float = 0.0001,
    power: float = 1.0,
    cycle: bool = False,
    name: str | None = None,
) -> Tensor:
    """(learning_rate - end) * (1 - min(step, decay_steps) / decay_steps) ^ power + end."""
    if cycle:
        raise NotImplementedError("polynomial_decay(cycle=True) is not supported.")
    schedule = optax.polynomial_schedule(learning_rate, end_learning_rate, power, decay_steps)
    return schedule_value(schedule, global_step, name=name or "PolynomialDecay")


def cosine_decay(
    learning_rate: float,
    global_step: Any,
    decay_steps: int,
    alpha: float = 0.0,
    name: str | None = None,
) -> Tensor:
    """learning_rate * ((1 - alpha) * 0.5 * (1 + cos(pi * min(step, decay_steps) / decay_steps))
    + alpha)."""
    schedule = optax.cosine_decay_schedule(learning_rate, decay_steps, alpha=alpha)
    return schedule_value(schedule, global_step, name=name or "CosineDecay")


def piecewise_constant(
    x: Any, boundaries: Sequence[int], values: Sequence[float], name: str | None = None
) -> Tensor:
    """values[0] while x <= boundaries[0], values[i] while boundaries[i-1] < x <= boundaries[i],
    values[-1] after the last boundary (integer steps)."""
    if len(values) != len(boundaries) + 1:
        raise ValueError(
            f"piecewise_constant needs one more value than boundaries, got "
            f"{len(values)} values and {len(boundaries)} boundaries."
        )
    schedule = optax.join_schedules(
        [optax.constant_schedule(v) for v in values], [int(b) + 1 for b in boundaries]
    )
    return schedule_value(schedule, x, name=name or "PiecewiseConstant")

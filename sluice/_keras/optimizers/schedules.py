"""Learning-rate schedules in TF1 spelling (`sl.train.exponential_decay`, ...).

Each TF1 function builds its formula from graph ops at the value of `global_step` (a Variable
or Tensor), as TF1's learning_rate_decay.py does, so the rate follows the step kept in the
graph, its arguments may be Tensors (a placeholder learning rate), and a graph using it can be
exported as a meta graph. The rate has the learning rate's dtype (float32 for a Python float);
the step and the other arguments are cast to it first, so fractional steps decay smoothly unless
`staircase`. `piecewise_constant` takes TF1's `x <= boundary` rule.

`schedule_value` evaluates any optax schedule (`step -> rate`) at the step instead: one
`LearningRateSchedule` op holding the Python function (so that graph has no meta graph).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import jax.numpy as jnp

from sluice._export import export
from sluice.framework.ir import dtypes
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.registry import not_differentiable, register_op
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.array import array_ops, fill_ops, gather_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import math_ops, reduction_ops, unary_ops


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


@export("train.schedule_value")
def schedule_value(
    schedule: Callable[[Any], Any],
    global_step: Any,
    dtype: Any = dtypes.float32,
    name: str | None = None,
) -> Tensor:
    """The value of an optax schedule (`step -> rate`) at `global_step`, as a scalar Tensor.

    >>> step = sl.train.get_or_create_global_step()
    >>> import optax
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


def _positive_steps(what: str, decay_steps: Any) -> None:
    if not isinstance(decay_steps, Tensor) and decay_steps <= 0:
        raise ValueError(f"{what}: decay_steps must be positive, got {decay_steps}.")


def _inputs(what: str, learning_rate: Any, global_step: Any, *args: Any) -> tuple:
    """(learning rate, step, *args) as Tensors of the learning rate's (floating) dtype."""
    if global_step is None:
        raise ValueError(f"{what}: global_step is required for a learning-rate schedule.")
    rate = core_ops.convert_to_tensor(learning_rate, name="learning_rate")
    if not dtypes.is_floating(rate.dtype):
        raise TypeError(f"{what}: learning_rate must be a float, got {rate.dtype.name}")
    cast = [fill_ops.cast(core_ops.convert_to_tensor(a), rate.dtype) for a in (global_step, *args)]
    return (rate, *cast)


def _fraction(step: Tensor, decay_steps: Tensor, staircase: bool) -> Tensor:
    """global_step / decay_steps, floored when `staircase`."""
    p = step / decay_steps
    return unary_ops.floor(p) if staircase else p


@export("train.exponential_decay")
def exponential_decay(
    learning_rate: Any,
    global_step: Any,
    decay_steps: Any,
    decay_rate: Any,
    staircase: bool = False,
    name: str | None = None,
) -> Tensor:
    """learning_rate * decay_rate ^ (global_step / decay_steps) (the exponent floored when
    `staircase`).

    >>> step = sl.train.get_or_create_global_step()
    >>> lr = sl.train.exponential_decay(0.1, step, decay_steps=10, decay_rate=0.5, staircase=True)
    >>> with sl.Session() as sess:
    ...     sess.run(sl.global_variables_initializer())
    ...     step.load(25, sess)
    ...     print(round(float(sess.run(lr)), 6))   # 0.1 * 0.5 ** 2
    0.025
    """
    _positive_steps("exponential_decay", decay_steps)
    with graph_lib.name_scope(
        name, "ExponentialDecay", [learning_rate, global_step, decay_steps, decay_rate]
    ) as scope:
        rate, step, steps, decay = _inputs(
            "exponential_decay", learning_rate, global_step, decay_steps, decay_rate
        )
        p = _fraction(step, steps, staircase)
        return math_ops.multiply(rate, math_ops.pow(decay, p), name=scope)


@export("train.polynomial_decay")
def polynomial_decay(
    learning_rate: Any,
    global_step: Any,
    decay_steps: Any,
    end_learning_rate: Any = 0.0001,
    power: Any = 1.0,
    cycle: bool = False,
    name: str | None = None,
) -> Tensor:
    """(learning_rate - end) * (1 - step / decay_steps) ^ power + end, with step clipped to
    decay_steps; with `cycle`, decay_steps grows to the first multiple of itself >= step
    (decay_steps itself at step 0), so the rate jumps back up after each period."""
    _positive_steps("polynomial_decay", decay_steps)
    with graph_lib.name_scope(
        name, "PolynomialDecay", [learning_rate, global_step, decay_steps, end_learning_rate, power]
    ) as scope:
        rate, step, steps, end, power = _inputs(
            "polynomial_decay", learning_rate, global_step, decay_steps, end_learning_rate, power
        )
        if cycle:
            multiplier = gather_ops.where(
                math_ops.equal(step, 0.0), fill_ops.ones_like(step), unary_ops.ceil(step / steps)
            )
            steps = steps * multiplier
        else:
            step = math_ops.minimum(step, steps)
        decayed = (rate - end) * math_ops.pow(1.0 - step / steps, power)
        return math_ops.add(decayed, end, name=scope)


@export("train.cosine_decay")
def cosine_decay(
    learning_rate: Any,
    global_step: Any,
    decay_steps: Any,
    alpha: Any = 0.0,
    name: str | None = None,
) -> Tensor:
    """learning_rate * ((1 - alpha) * 0.5 * (1 + cos(pi * min(step, decay_steps) / decay_steps))
    + alpha)."""
    _positive_steps("cosine_decay", decay_steps)
    with graph_lib.name_scope(
        name, "CosineDecay", [learning_rate, global_step, decay_steps]
    ) as scope:
        rate, step, steps, alpha = _inputs(
            "cosine_decay", learning_rate, global_step, decay_steps, alpha
        )
        done = math_ops.minimum(step, steps) / steps
        cosine = 0.5 * (1.0 + unary_ops.cos(math.pi * done))
        return math_ops.multiply(rate, (1.0 - alpha) * cosine + alpha, name=scope)


@export("train.cosine_decay_restarts")
def cosine_decay_restarts(
    learning_rate: Any,
    global_step: Any,
    first_decay_steps: Any,
    t_mul: Any = 2.0,
    m_mul: Any = 1.0,
    alpha: Any = 0.0,
    name: str | None = None,
) -> Tensor:
    """Cosine decay with warm restarts (SGDR): period i lasts first_decay_steps * t_mul ** i
    steps and starts from learning_rate * m_mul ** i; within a period, the rate follows
    `cosine_decay` of the fraction of the period done."""
    _positive_steps("cosine_decay_restarts", first_decay_steps)
    with graph_lib.name_scope(
        name, "SGDRDecay", [learning_rate, global_step, first_decay_steps]
    ) as scope:
        rate, step, steps, t_mul, m_mul, alpha = _inputs(
            "cosine_decay_restarts",
            learning_rate,
            global_step,
            first_decay_steps,
            t_mul,
            m_mul,
            alpha,
        )
        done = step / steps
        # equal periods (t_mul == 1): restart i begins at i periods; growing ones: the periods
        # before restart i last sum_{k<i} t_mul**k = (1 - t_mul**i) / (1 - t_mul) first periods.
        # The geometric branch divides by log(1) = 0 when t_mul == 1: its NaN is not selected.
        equal = math_ops.equal(t_mul, 1.0)
        geometric = unary_ops.floor(
            unary_ops.log(1.0 - done * (1.0 - t_mul)) / unary_ops.log(t_mul)
        )
        restart = gather_ops.where(equal, unary_ops.floor(done), geometric)
        finished = gather_ops.where(
            equal, restart, (1.0 - math_ops.pow(t_mul, restart)) / (1.0 - t_mul)
        )
        length = gather_ops.where(equal, fill_ops.ones_like(done), math_ops.pow(t_mul, restart))
        done = (done - finished) / length
        cosine = 0.5 * math_ops.pow(m_mul, restart) * (1.0 + unary_ops.cos(math.pi * done))
        return math_ops.multiply(rate, (1.0 - alpha) * cosine + alpha, name=scope)


@export("train.inverse_time_decay")
def inverse_time_decay(
    learning_rate: Any,
    global_step: Any,
    decay_steps: Any,
    decay_rate: Any,
    staircase: bool = False,
    name: str | None = None,
) -> Tensor:
    """learning_rate / (1 + decay_rate * global_step / decay_steps) (the ratio floored when
    `staircase`)."""
    _positive_steps("inverse_time_decay", decay_steps)
    with graph_lib.name_scope(
        name, "InverseTimeDecay", [learning_rate, global_step, decay_rate]
    ) as scope:
        rate, step, steps, decay = _inputs(
            "inverse_time_decay", learning_rate, global_step, decay_steps, decay_rate
        )
        denominator = 1.0 + decay * _fraction(step, steps, staircase)
        return math_ops.div(rate, denominator, name=scope)


@export("train.natural_exp_decay")
def natural_exp_decay(
    learning_rate: Any,
    global_step: Any,
    decay_steps: Any,
    decay_rate: Any,
    staircase: bool = False,
    name: str | None = None,
) -> Tensor:
    """learning_rate * exp(-decay_rate * global_step / decay_steps) (the ratio floored when
    `staircase`)."""
    _positive_steps("natural_exp_decay", decay_steps)
    with graph_lib.name_scope(
        name, "NaturalExpDecay", [learning_rate, global_step, decay_rate]
    ) as scope:
        rate, step, steps, decay = _inputs(
            "natural_exp_decay", learning_rate, global_step, decay_steps, decay_rate
        )
        exponent = -decay * _fraction(step, steps, staircase)
        return math_ops.multiply(rate, unary_ops.exp(exponent), name=scope)


@export("train.linear_cosine_decay")
def linear_cosine_decay(
    learning_rate: Any,
    global_step: Any,
    decay_steps: Any,
    num_periods: Any = 0.5,
    alpha: Any = 0.0,
    beta: Any = 0.001,
    name: str | None = None,
) -> Tensor:
    """learning_rate * ((alpha + linear) * cosine + beta), with step clipped to decay_steps,
    linear = 1 - step / decay_steps and cosine = 0.5 * (1 + cos(2 pi num_periods step /
    decay_steps))."""
    _positive_steps("linear_cosine_decay", decay_steps)
    with graph_lib.name_scope(name, "LinearCosineDecay", [learning_rate, global_step]) as scope:
        rate, step, steps, periods, alpha, beta = _inputs(
            "linear_cosine_decay", learning_rate, global_step, decay_steps, num_periods, alpha, beta
        )
        done = math_ops.minimum(step, steps) / steps
        cosine = 0.5 * (1.0 + unary_ops.cos(math.pi * 2.0 * periods * done))
        return math_ops.multiply(rate, (alpha + 1.0 - done) * cosine + beta, name=scope)


@export("train.piecewise_constant")
def piecewise_constant(
    x: Any, boundaries: Sequence[Any], values: Sequence[Any], name: str | None = None
) -> Tensor:
    """values[0] while x <= boundaries[0], values[i] while boundaries[i-1] < x <= boundaries[i],
    values[-1] after the last boundary. `values` (numbers or scalar Tensors) share one dtype,
    the result's; the boundaries take x's dtype, as int32 ones may for an int64 x (TF1's rule),
    or a float x's (sluice also takes int boundaries for a float step).

    Raises:
      ValueError: when there is not exactly one more value than boundaries.
      TypeError: when the values do not share one dtype, or a boundary does not fit x's dtype.
    """
    if len(values) != len(boundaries) + 1:
        raise ValueError(
            f"piecewise_constant: the length of boundaries should be 1 less than the length of "
            f"values, got {len(values)} values and {len(boundaries)} boundaries."
        )
    with graph_lib.name_scope(name, "PiecewiseConstant", [x, *boundaries, *values]) as scope:
        x = core_ops.convert_to_tensor(x)
        values = [core_ops.convert_to_tensor(v) for v in values]
        if len({v.dtype for v in values}) != 1:
            raise TypeError(
                f"piecewise_constant: values must share one dtype, got "
                f"{[v.dtype.name for v in values]}"
            )
        bounds = [_boundary(b, x.dtype) for b in boundaries]
        # the number of boundaries strictly below x is the index of its value
        above = [fill_ops.cast(math_ops.greater(x, b), dtypes.int32) for b in bounds]
        index = reduction_ops.reduce_sum(array_ops.stack(above)) if above else 0
        return gather_ops.gather(array_ops.stack(values), index, name=scope)


def _boundary(boundary: Any, dtype: Any) -> Tensor:
    b = core_ops.convert_to_tensor(boundary)
    promotes = (b.dtype == dtypes.int32 and dtype == dtypes.int64) or (
        dtypes.is_integer(b.dtype) and dtypes.is_floating(dtype)
    )
    if b.dtype != dtype and not promotes:
        raise TypeError(
            f"piecewise_constant: Boundaries ({b.dtype.name}) must have the same "
            f"dtype as x ({dtype.name})."
        )
    return fill_ops.cast(b, dtype) if b.dtype != dtype else b

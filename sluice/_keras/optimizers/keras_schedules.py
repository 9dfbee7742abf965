"""Keras 3's learning-rate schedules (`sl.optimizers.schedules`, `keras.optimizers.schedules`).

A schedule is a callable `step -> learning rate` with a config. Passed as `learning_rate=` to a
Keras optimizer, it is evaluated at the optimizer's step count (the number of updates applied
before this one: 0 at the first step) inside each update, so it works in `fit`, in a custom
`train_step` and in `stateless_apply`; `optimizer.learning_rate` reads its current value.

Each built-in's formula is written once, as graph code: the TF1 functions of
`sl.train.*_decay` where they compute the same thing (Keras's formulas are TF's), so
`schedule(step)` takes

* a graph Tensor or Variable (an int step in a TF1 graph): it adds the ops and returns a Tensor;
* a Python or NumPy number, a JAX array or a JAX tracer (inside an update, inside `jax.jit`):
  it builds the ops on a placeholder and runs them as JAX operations on the step
  (`framework.compiler.on_tracers`), returning a JAX value, as Keras on JAX returns one.

The result has the dtype of `initial_learning_rate` (float32 for a Python float); the step is
cast to it first, so fractional steps decay smoothly unless `staircase`.

>>> schedule = ExponentialDecay(0.1, decay_steps=10, decay_rate=0.5, staircase=True)
>>> round(float(schedule(25)), 6)   # 0.1 * 0.5 ** 2
0.025
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import numpy as np

from sluice._export import export
from sluice._keras.optimizers import schedules as tf1_schedules
from sluice.framework.compiler import on_tracers
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir import tracing
from sluice.framework.ir.graph import Tensor
from sluice.framework.ops.array import fill_ops, gather_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import math_ops
from sluice.framework.variables import Variable


@export("optimizers.schedules.LearningRateSchedule")
class LearningRateSchedule:
    """The base class of learning-rate schedules: override `__call__(step)` (the step is the
    optimizer's count of updates applied, an integer scalar) and, to save the schedule with an
    optimizer, `get_config()`.

    >>> class InverseStep(LearningRateSchedule):
    ...     def __init__(self, initial_learning_rate):
    ...         self.initial_learning_rate = initial_learning_rate
    ...     def __call__(self, step):
    ...         return self.initial_learning_rate / (step + 1)
    >>> optimizer = sl.optimizers.SGD(learning_rate=InverseStep(0.1))
    >>> float(optimizer.learning_rate)   # at step 0
    0.1
    """

    def __call__(self, step: Any) -> Any:
        raise NotImplementedError(
            f"Learning rate schedule '{type(self).__name__}' must override `__call__(self, step)`."
        )

    def get_config(self) -> dict:
        raise NotImplementedError(
            f"Learning rate schedule '{type(self).__name__}' must override `get_config()` in "
            "order to be serializable."
        )

    @classmethod
    def from_config(cls, config: dict) -> LearningRateSchedule:
        """The schedule `get_config()` describes."""
        return cls(**config)


def evaluate(graph_fn: Callable[[Tensor], Tensor], step: Any) -> Any:
    """`graph_fn` (graph code of the step) on `step`: graph ops on a graph tensor, or inside
    traced Keras code; else JAX operations on the step's value (see the module docstring)."""
    if isinstance(step, (Tensor, Variable)) or tracing.is_tracing():
        return graph_fn(step)
    if not isinstance(step, jax.Array):
        step = np.asarray(step)
        if step.dtype.kind not in "iuf" or step.shape:
            raise TypeError(f"A schedule's step must be a number, got {step!r}.")
    return on_tracers.call_on_tracers(graph_fn, (step,), {})


def _positive(what: str, steps: Any) -> None:
    if steps <= 0:
        raise ValueError(f"Argument `{what}` must be > 0. Received: {what}={steps}")


@export("optimizers.schedules.ExponentialDecay")
class ExponentialDecay(LearningRateSchedule):
    """initial_learning_rate * decay_rate ^ (step / decay_steps); the exponent is floored when
    `staircase` (see `sl.train.exponential_decay`).

    Raises:
      ValueError: `decay_steps` is not positive.
    """

    def __init__(
        self,
        initial_learning_rate: float,
        decay_steps: int,
        decay_rate: float,
        staircase: bool = False,
        name: str = "ExponentialDecay",
    ):
        _positive("decay_steps", decay_steps)
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = decay_steps
        self.decay_rate = decay_rate
        self.staircase = staircase
        self.name = name

    def __call__(self, step: Any) -> Any:
        return evaluate(
            lambda s: tf1_schedules.exponential_decay(
                self.initial_learning_rate,
                s,
                self.decay_steps,
                self.decay_rate,
                staircase=self.staircase,
                name=self.name,
            ),
            step,
        )

    def get_config(self) -> dict:
        return {
            "initial_learning_rate": self.initial_learning_rate,
            "decay_steps": self.decay_steps,
            "decay_rate": self.decay_rate,
            "staircase": self.staircase,
            "name": self.name,
        }


@export("optimizers.schedules.PiecewiseConstantDecay")
class PiecewiseConstantDecay(LearningRateSchedule):
    """values[0] while step <= boundaries[0], values[i] while boundaries[i-1] < step <=
    boundaries[i], values[-1] after the last boundary; the boundaries are cast to the step's
    dtype, the result has the values' dtype (see `sl.train.piecewise_constant`).

    Raises:
      ValueError: there is not exactly one more value than boundaries.
    """

    def __init__(
        self, boundaries: Sequence[Any], values: Sequence[Any], name: str = "PiecewiseConstant"
    ):
        if len(boundaries) != len(values) - 1:
            raise ValueError(
                "The length of boundaries should be 1 less than the length of values. "
                f"Received: boundaries={boundaries} of length {len(boundaries)}, and "
                f"values={values} of length {len(values)}."
            )
        self.boundaries = boundaries
        self.values = values
        self.name = name

    def __call__(self, step: Any) -> Any:
        def graph_fn(s: Any) -> Tensor:
            s = core_ops.convert_to_tensor(s)
            bounds = [
                fill_ops.cast(core_ops.convert_to_tensor(b), s.dtype) for b in self.boundaries
            ]
            return tf1_schedules.piecewise_constant(s, bounds, list(self.values), name=self.name)

        return evaluate(graph_fn, step)

    def get_config(self) -> dict:
        return {"boundaries": self.boundaries, "values": self.values, "name": self.name}


@export("optimizers.schedules.PolynomialDecay")
class PolynomialDecay(LearningRateSchedule):
    """(initial_learning_rate - end_learning_rate) * (1 - step / decay_steps) ^ power +
    end_learning_rate, the step clipped to decay_steps; with `cycle`, decay_steps grows to the
    first multiple of itself >= step (see `sl.train.polynomial_decay`).

    Raises:
      ValueError: `decay_steps` is not positive.
    """

    def __init__(
        self,
        initial_learning_rate: float,
        decay_steps: int,
        end_learning_rate: float = 0.0001,
        power: float = 1.0,
        cycle: bool = False,
        name: str = "PolynomialDecay",
    ):
        _positive("decay_steps", decay_steps)
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = decay_steps
        self.end_learning_rate = end_learning_rate
        self.power = power
        self.cycle = cycle
        self.name = name

    def __call__(self, step: Any) -> Any:
        return evaluate(
            lambda s: tf1_schedules.polynomial_decay(
                self.initial_learning_rate,
                s,
                self.decay_steps,
                self.end_learning_rate,
                power=self.power,
                cycle=self.cycle,
                name=self.name,
            ),
            step,
        )

    def get_config(self) -> dict:
        return {
            "initial_learning_rate": self.initial_learning_rate,
            "decay_steps": self.decay_steps,
            "end_learning_rate": self.end_learning_rate,
            "power": self.power,
            "cycle": self.cycle,
            "name": self.name,
        }


@export("optimizers.schedules.InverseTimeDecay")
class InverseTimeDecay(LearningRateSchedule):
    """initial_learning_rate / (1 + decay_rate * step / decay_steps); the ratio is floored
    when `staircase` (see `sl.train.inverse_time_decay`).

    Raises:
      ValueError: `decay_steps` is not positive.
    """

    def __init__(
        self,
        initial_learning_rate: float,
        decay_steps: int,
        decay_rate: float,
        staircase: bool = False,
        name: str = "InverseTimeDecay",
    ):
        _positive("decay_steps", decay_steps)
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = decay_steps
        self.decay_rate = decay_rate
        self.staircase = staircase
        self.name = name

    def __call__(self, step: Any) -> Any:
        return evaluate(
            lambda s: tf1_schedules.inverse_time_decay(
                self.initial_learning_rate,
                s,
                self.decay_steps,
                self.decay_rate,
                staircase=self.staircase,
                name=self.name,
            ),
            step,
        )

    def get_config(self) -> dict:
        return {
            "initial_learning_rate": self.initial_learning_rate,
            "decay_steps": self.decay_steps,
            "decay_rate": self.decay_rate,
            "staircase": self.staircase,
            "name": self.name,
        }


@export("optimizers.schedules.CosineDecay")
class CosineDecay(LearningRateSchedule):
    """Cosine decay, after an optional linear warmup.

    Without `warmup_target`: initial_learning_rate * ((1 - alpha) * c + alpha), with
    c = 0.5 * (1 + cos(pi * min(step, decay_steps) / decay_steps)) (`sl.train.cosine_decay`).
    With it, the step is first clipped to warmup_steps + decay_steps; while step <
    warmup_steps the rate rises linearly, initial_learning_rate + (warmup_target -
    initial_learning_rate) * step / warmup_steps; then it decays from warmup_target as above,
    at step - warmup_steps.

    Raises:
      ValueError: `decay_steps` is not positive.
    """

    def __init__(
        self,
        initial_learning_rate: float,
        decay_steps: int,
        alpha: float = 0.0,
        name: str = "CosineDecay",
        warmup_target: float | None = None,
        warmup_steps: int = 0,
    ):
        _positive("decay_steps", decay_steps)
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = decay_steps
        self.alpha = alpha
        self.name = name
        self.warmup_steps = warmup_steps
        self.warmup_target = warmup_target

    def _graph(self, step: Any) -> Tensor:
        if self.warmup_target is None:
            return tf1_schedules.cosine_decay(
                self.initial_learning_rate, step, self.decay_steps, self.alpha, name=self.name
            )
        with graph_lib.name_scope(self.name):
            initial, step, decay_steps, target, warmup = tf1_schedules._inputs(
                "CosineDecay",
                self.initial_learning_rate,
                step,
                self.decay_steps,
                self.warmup_target,
                self.warmup_steps,
            )
            step = math_ops.minimum(step, decay_steps + warmup)
            rising = (target - initial) * (step / warmup) + initial
            # the decay's step is negative during the warmup: that value is not selected
            decaying = tf1_schedules.cosine_decay(target, step - warmup, decay_steps, self.alpha)
            return gather_ops.where(math_ops.less(step, warmup), rising, decaying)

    def __call__(self, step: Any) -> Any:
        return evaluate(self._graph, step)

    def get_config(self) -> dict:
        return {
            "initial_learning_rate": self.initial_learning_rate,
            "decay_steps": self.decay_steps,
            "alpha": self.alpha,
            "name": self.name,
            "warmup_target": self.warmup_target,
            "warmup_steps": self.warmup_steps,
        }


@export("optimizers.schedules.CosineDecayRestarts")
class CosineDecayRestarts(LearningRateSchedule):
    """Cosine decay with warm restarts (SGDR): period i lasts first_decay_steps * t_mul ** i
    steps and starts at initial_learning_rate * m_mul ** i, decaying to alpha times that
    (see `sl.train.cosine_decay_restarts`).

    Raises:
      ValueError: `first_decay_steps` is not positive.
    """

    def __init__(
        self,
        initial_learning_rate: float,
        first_decay_steps: int,
        t_mul: float = 2.0,
        m_mul: float = 1.0,
        alpha: float = 0.0,
        name: str = "SGDRDecay",
    ):
        _positive("first_decay_steps", first_decay_steps)
        self.initial_learning_rate = initial_learning_rate
        self.first_decay_steps = first_decay_steps
        self._t_mul = t_mul
        self._m_mul = m_mul
        self.alpha = alpha
        self.name = name

    def __call__(self, step: Any) -> Any:
        return evaluate(
            lambda s: tf1_schedules.cosine_decay_restarts(
                self.initial_learning_rate,
                s,
                self.first_decay_steps,
                t_mul=self._t_mul,
                m_mul=self._m_mul,
                alpha=self.alpha,
                name=self.name,
            ),
            step,
        )

    def get_config(self) -> dict:
        return {
            "initial_learning_rate": self.initial_learning_rate,
            "first_decay_steps": self.first_decay_steps,
            "t_mul": self._t_mul,
            "m_mul": self._m_mul,
            "alpha": self.alpha,
            "name": self.name,
        }


BUILTIN = (
    LearningRateSchedule,
    ExponentialDecay,
    PiecewiseConstantDecay,
    PolynomialDecay,
    InverseTimeDecay,
    CosineDecay,
    CosineDecayRestarts,
)


# -- saving: `serialize`/`deserialize` live with Keras's serialization (sluice/_keras/saving/
# schedules.py), above this package; it registers them here for the optimizers' configs ----------
_CODEC: dict[str, Callable[..., Any]] = {}


def set_codec(serialize: Callable[[Any], dict], deserialize: Callable[[dict], Any]) -> None:
    """Registers how optimizers write a schedule into their config and read it back."""
    _CODEC["serialize"], _CODEC["deserialize"] = serialize, deserialize


def serialize(schedule: LearningRateSchedule) -> Any:
    """The schedule as an optimizer's config holds it (Keras's {"module", "class_name",
    "config", "registered_name"}); the object itself before the codec is registered."""
    write = _CODEC.get("serialize")
    return write(schedule) if write else schedule


def deserialize(config: dict) -> LearningRateSchedule:
    read = _CODEC.get("deserialize")
    if read is None:
        raise ValueError("Learning-rate schedules cannot be read before sluice is imported.")
    return read(config)

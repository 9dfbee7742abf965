"""Keras 3 spellings (`sl.optimizers.SGD`, `Adam`, `AdamW`, `RMSprop`, `Adagrad`).

Keras 3's argument names and defaults over the same `Optimizer` and the same optax factories as
the TF1 classes. Keras's update formulas equal these compositions: Adam's `epsilon` is "epsilon
hat" as in TF1; RMSprop's and Adagrad's epsilon sits inside the square root; `weight_decay` is
decoupled (var -= lr * weight_decay * var), as `optax.add_decayed_weights` before the learning
rate. `clipnorm` clips each gradient to that norm (g * clipnorm / max(norm(g), clipnorm)).
The optimizers Keras 3 adds (Nadam, Adamax, Adadelta, Ftrl, Lion, Adafactor) are in
`keras_extra`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import optax

from sluice._export import export
from sluice._keras.optimizers import (
    keras_rules,
    keras_schedules,
    schedules,
    stateless,
    transforms,
)
from sluice._keras.optimizers.optimizer import Optimizer
from sluice.framework import state_cells
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir import tracing
from sluice.framework.variables import Variable

# Keras's names for `get`: every Keras optimizer class, lower-cased ("adamw", "nadam", ...)
_BY_NAME: dict[str, type] = {}


class _KerasOptimizer(Optimizer):
    """Keras's common arguments (weight_decay, clipnorm, clipvalue, global_clipnorm, name) and
    its learning rates: a float, or a `keras.optimizers.schedules.LearningRateSchedule`
    evaluated at the optimizer's step count inside every update (the count is the state
    variable `<name>/iteration`; see `keras_rules.scheduled`)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__module__.startswith("sluice."):  # optimizers.get("nadam"), by Keras's names
            _BY_NAME[cls.__name__.lower()] = cls

    def __init__(
        self,
        learning_rate: Any,
        name: str,
        weight_decay: float | None = None,
        clipnorm: float | None = None,
        clipvalue: float | None = None,
        global_clipnorm: float | None = None,
    ):
        if sum(a is not None for a in (clipnorm, clipvalue, global_clipnorm)) > 1:
            raise ValueError(
                "Only one of `clipnorm`, `clipvalue` and `global_clipnorm` can be set. "
                f"Received: clipnorm={clipnorm}, clipvalue={clipvalue}, "
                f"global_clipnorm={global_clipnorm}"
            )
        super().__init__(learning_rate, name, clipvalue=clipvalue, global_clipnorm=global_clipnorm)
        self.weight_decay = weight_decay
        self.clipnorm = clipnorm
        self._iteration_variables: list[Variable] = []  # the schedule's step counts, by graph
        self._config = {
            "name": name,
            "learning_rate": learning_rate,
            "weight_decay": weight_decay,
            "clipnorm": clipnorm,
            "clipvalue": clipvalue,
            "global_clipnorm": global_clipnorm,
        }

    def get_config(self) -> dict:
        """The constructor's arguments; a schedule as Keras writes it (`schedules.serialize`)."""
        config = dict(self._config)
        if isinstance(self._learning_rate, keras_schedules.LearningRateSchedule):
            config["learning_rate"] = keras_schedules.serialize(self._learning_rate)
        return config

    @classmethod
    def from_config(cls, config: dict) -> Optimizer:
        config = dict(config)
        if isinstance(config.get("learning_rate"), dict):
            config["learning_rate"] = keras_schedules.deserialize(config["learning_rate"])
        return cls(**config)

    # -- the learning rate ---------------------------------------------------------------------
    @property
    def learning_rate(self) -> Any:
        """The learning rate: the number given (in `fit`, the Variable holding it), or a
        schedule's value at the current step count (0 before the first update). Inside traced
        Keras code, or for a TF1 graph's state, a scalar Tensor of the schedule at the step count.

        Setting it writes fit's Variable (the next step uses the value), or replaces the number
        before any update is built; a schedule's rate cannot be set (Keras's TypeError)."""
        rate = self._learning_rate
        if not isinstance(rate, keras_schedules.LearningRateSchedule):
            return rate
        iteration = self._iteration_variable()
        if iteration is None:
            return rate(0)
        if tracing.is_tracing() or state_cells.host_access(iteration) is None:
            g = graph_lib.get_default_graph()
            step = iteration.graph_variable(g).value()
            return schedules.schedule_value(rate, step, name="learning_rate")
        return rate(iteration.numpy())

    @learning_rate.setter
    def learning_rate(self, value: Any) -> None:
        if isinstance(self._learning_rate, keras_schedules.LearningRateSchedule):
            raise TypeError(
                "This optimizer was created with a `LearningRateSchedule` object as its "
                "`learning_rate` constructor argument, hence its learning rate is not settable. "
                "If you need the learning rate to be settable, you should instantiate the "
                "optimizer with a float `learning_rate` argument."
            )
        rate = self._learning_rate
        if isinstance(rate, Variable) and state_cells.host_access(rate) is not None:
            rate.assign(value)  # fit's rate Variable: the next step uses the new value
            return
        if self._states_built or stateless.built_state(self) is not None:
            raise ValueError(
                f"The learning rate of {self._name!r} is part of the updates it has built; set "
                "it before the first update (in fit: model.set_learning_rate, or a "
                "LearningRateScheduler callback)."
            )
        self._learning_rate = self._config["learning_rate"] = value

    def _iteration_variable(self) -> Variable | None:
        """The step count of the most recent updates built: a graph's, else `build`'s."""
        if self._iteration_variables:
            return self._iteration_variables[-1]
        built = stateless.built_state(self)
        return built.variables[0] if built is not None else None

    def _state_variable_made(self, param: str | None, field: str, variable: Variable) -> None:
        """A schedule's step count gets a state cell, so `learning_rate` reads it anywhere."""
        scheduled = isinstance(self._learning_rate, keras_schedules.LearningRateSchedule)
        if param is None and field == "iteration" and scheduled:
            path = variable.op.get_attr("shared_name")
            state_cells.attach(
                variable,
                state_cells.StateCell(
                    path, variable.dtype, variable.shape, lambda: np.int64(0), False
                ),
            )
            self._iteration_variables.append(variable)

    def transformation(self, learning_rate: Any = None) -> optax.GradientTransformation:
        """Clipping, then the update rule at `learning_rate` (default: the optimizer's own; a
        schedule is evaluated at the step count kept in the state)."""
        rate = self._learning_rate if learning_rate is None else learning_rate
        if isinstance(rate, keras_schedules.LearningRateSchedule):
            return keras_rules.scheduled(self._clipped, rate)
        return self._clipped(rate)

    def _clipped(self, learning_rate: Any) -> optax.GradientTransformation:
        transform = super().transformation(learning_rate)
        if self.clipnorm is not None:
            transform = optax.chain(keras_rules.clip_by_norm(self.clipnorm), transform)
        return transform

    def apply(self, grads: Any, trainable_variables: Any = None) -> Any:
        """Keras 3's `apply`: `apply_gradients(zip(grads, trainable_variables))` (default: the
        variables given to `build`); a None gradient leaves its variable as it is.

        Raises:
          ValueError: no variables (none given, and `build` not called), or a different number
            of gradients.
        """
        if trainable_variables is None:
            built = stateless.built_state(self)
            if built is None:
                raise ValueError(
                    f"{type(self).__name__}.apply needs the variables the gradients are for: "
                    "optimizer.apply(grads, trainable_variables), or build(variables) first."
                )
            trainable_variables = built.trainable
        grads, variables = list(grads), list(trainable_variables)
        if len(grads) != len(variables):
            raise ValueError(
                f"{type(self).__name__}.apply got {len(grads)} gradients for "
                f"{len(variables)} variables."
            )
        return self.apply_gradients(zip(grads, variables))


@export("optimizers.SGD")
class SGD(_KerasOptimizer):
    """Gradient descent with momentum: m = momentum*m - lr*g; var += m (nesterov: var +=
    momentum*m - lr*g).

    >>> x = np.random.default_rng(0).normal(size=(32, 4)).astype("float32")
    >>> model = sl.Sequential([sl.Input((4,)), sl.layers.Dense(1)])
    >>> model.compile(optimizer=sl.optimizers.SGD(0.01, momentum=0.9), loss="mse")
    >>> losses = model.fit(x, x.sum(axis=1), epochs=5, verbose=0).history["loss"]
    >>> losses[-1] < losses[0]
    True
    """

    def __init__(
        self,
        learning_rate: Any = 0.01,
        momentum: float = 0.0,
        nesterov: bool = False,
        weight_decay: float | None = None,
        clipnorm: float | None = None,
        clipvalue: float | None = None,
        global_clipnorm: float | None = None,
        name: str = "SGD",
    ):
        if not 0.0 <= momentum <= 1.0:
            raise ValueError(f"`momentum` must be a float between [0, 1], got {momentum}.")
        super().__init__(learning_rate, name, weight_decay, clipnorm, clipvalue, global_clipnorm)
        self.momentum, self.nesterov = momentum, nesterov
        self._config.update(momentum=momentum, nesterov=nesterov)

    def _transform(self, learning_rate: Any) -> optax.GradientTransformation:
        return transforms.sgd(learning_rate, self.momentum, self.nesterov, self.weight_decay)


@export("optimizers.Adam")
class Adam(_KerasOptimizer):
    """Adam with Keras's (and TF1's) epsilon-hat placement; see `sl.train.AdamOptimizer`."""

    def __init__(
        self,
        learning_rate: Any = 0.001,
        beta_1: float = 0.9,
        beta_2: float = 0.999,
        epsilon: float = 1e-07,
        amsgrad: bool = False,
        weight_decay: float | None = None,
        clipnorm: float | None = None,
        clipvalue: float | None = None,
        global_clipnorm: float | None = None,
        name: str = "adam",
    ):
        if amsgrad:
            raise NotImplementedError("amsgrad=True is not supported.")
        super().__init__(learning_rate, name, weight_decay, clipnorm, clipvalue, global_clipnorm)
        self.beta_1, self.beta_2, self.epsilon = beta_1, beta_2, epsilon
        self._config.update(beta_1=beta_1, beta_2=beta_2, epsilon=epsilon)

    def _transform(self, learning_rate: Any) -> optax.GradientTransformation:
        return transforms.adam(
            learning_rate, self.beta_1, self.beta_2, self.epsilon, self.weight_decay
        )


@export("optimizers.AdamW")
class AdamW(Adam):
    """Adam with decoupled weight decay (var -= lr * weight_decay * var each step)."""

    def __init__(
        self,
        learning_rate: Any = 0.001,
        weight_decay: float = 0.004,
        beta_1: float = 0.9,
        beta_2: float = 0.999,
        epsilon: float = 1e-07,
        amsgrad: bool = False,
        clipnorm: float | None = None,
        clipvalue: float | None = None,
        global_clipnorm: float | None = None,
        name: str = "adamw",
    ):
        if weight_decay is None:
            raise ValueError("AdamW needs a weight_decay (a float).")
        super().__init__(
            learning_rate,
            beta_1,
            beta_2,
            epsilon,
            amsgrad,
            weight_decay,
            clipnorm,
            clipvalue,
            global_clipnorm,
            name,
        )


@export("optimizers.RMSprop")
class RMSprop(_KerasOptimizer):
    """v = rho*v + (1-rho)*g^2 (v starts at zeros); inc = lr*g/sqrt(v + epsilon); with momentum,
    m = momentum*m + inc and var -= m, else var -= inc."""

    def __init__(
        self,
        learning_rate: Any = 0.001,
        rho: float = 0.9,
        momentum: float = 0.0,
        epsilon: float = 1e-07,
        centered: bool = False,
        weight_decay: float | None = None,
        clipnorm: float | None = None,
        clipvalue: float | None = None,
        global_clipnorm: float | None = None,
        name: str = "rmsprop",
    ):
        if weight_decay:
            raise NotImplementedError("weight_decay is not supported by RMSprop; use AdamW or SGD.")
        super().__init__(learning_rate, name, weight_decay, clipnorm, clipvalue, global_clipnorm)
        self.rho, self.momentum, self.epsilon, self.centered = rho, momentum, epsilon, centered
        self._config.update(rho=rho, momentum=momentum, epsilon=epsilon, centered=centered)

    def _transform(self, learning_rate: Any) -> optax.GradientTransformation:
        return transforms.rmsprop(
            learning_rate, self.rho, self.momentum, self.epsilon, self.centered, initial_scale=0.0
        )


@export("optimizers.Adagrad")
class Adagrad(_KerasOptimizer):
    """accum += g^2 (starting at initial_accumulator_value); var -= lr*g/sqrt(accum + epsilon)."""

    def __init__(
        self,
        learning_rate: Any = 0.001,
        initial_accumulator_value: float = 0.1,
        epsilon: float = 1e-07,
        weight_decay: float | None = None,
        clipnorm: float | None = None,
        clipvalue: float | None = None,
        global_clipnorm: float | None = None,
        name: str = "adagrad",
    ):
        super().__init__(learning_rate, name, weight_decay, clipnorm, clipvalue, global_clipnorm)
        self.initial_accumulator_value, self.epsilon = initial_accumulator_value, epsilon
        self._config.update(initial_accumulator_value=initial_accumulator_value, epsilon=epsilon)

    def _transform(self, learning_rate: Any) -> optax.GradientTransformation:
        return transforms.adagrad(
            learning_rate, self.initial_accumulator_value, self.epsilon, self.weight_decay
        )


def is_keras_optimizer(optimizer: Any) -> bool:
    """Whether `optimizer` is one of the Keras-spelled optimizers (`sl.optimizers.*`)."""
    return isinstance(optimizer, _KerasOptimizer)


def follows_schedule(optimizer: Any) -> bool:
    """Whether `optimizer`'s learning rate is a `LearningRateSchedule` (so not settable)."""
    return is_keras_optimizer(optimizer) and isinstance(
        optimizer._learning_rate, keras_schedules.LearningRateSchedule
    )


@export("optimizers.get")
def get(identifier: Any) -> Optimizer:
    """An optimizer from a name ("adam"), a config dict ({"class_name": ..., "config": ...}) or an
    Optimizer instance (returned as is)."""
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, str):
        cls = _BY_NAME.get(identifier.lower())
        if cls is None:
            raise ValueError(
                f"Unknown optimizer {identifier!r}; expected one of {sorted(_BY_NAME)}."
            )
        return cls()
    if isinstance(identifier, dict) and "class_name" in identifier:
        cls = _BY_NAME.get(str(identifier["class_name"]).lower())
        if cls is None:
            raise ValueError(f"Unknown optimizer class {identifier['class_name']!r}.")
        return cls.from_config(identifier.get("config", {}))
    raise ValueError(f"Could not interpret optimizer identifier: {identifier!r}.")

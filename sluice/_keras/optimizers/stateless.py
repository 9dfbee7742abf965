"""`Optimizer.build` and `Optimizer.stateless_apply`: one optimizer step as a pure function of
values, as Keras 3's JAX training loops use it.

    optimizer.build(model.trainable_variables)        # creates `optimizer.variables`
    new_trainable, new_optimizer_values = optimizer.stateless_apply(
        optimizer_values, grads, trainable_values)

`build(variables)` creates the optimizer's state once, as non-trainable state cells (usable
from any graph, as a layer's weights; first mirrored in a graph of the optimizer's own), in
Keras's order: `iteration` (int64, the number of steps applied so far), then `learning_rate`
when the rate is a number (in the variables' precision; a schedule is evaluated at `iteration`
instead), then the leaves of the optax state the optimizer's transformation starts from
(`<name>/<variable>/<field>` for a per-variable leaf such as `adam/dense/kernel/mu`,
`<name>/<field>` for a shared one such as `adam/count`), in optax's leaf order (field by field,
then the variables by name; Keras interleaves the slots variable by variable instead). Their
initial values are those `apply_gradients` gives its slots.

`stateless_apply` needs no graph: it unflattens the values into the optax state, runs the same
update rule as the `ApplyUpdates` op of `apply_gradients` (`update_ops.UpdateRule`: the
optimizer's transformation, gradient clipping included, `tx.update`, `optax.apply_updates`) at
the learning rate given (or the schedule's value at `iteration`), and returns the new values. It
runs under sluice's 64-bit scope, as the op does in a session, so a JAX loop takes the same
steps as `fit`. Nothing is read from or written to the variables: after the loop, write the
values back (`v.assign(value)`).
"""

from __future__ import annotations

import dataclasses
import weakref
from typing import Any, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from sluice._keras.optimizers.update_ops import UpdateRule, state_leaf_names
from sluice.framework import state_cells
from sluice.framework.ir.graph import Graph, Tensor
from sluice.framework.ir.x64 import x64_scope
from sluice.framework.variables import Variable


class VariableList(list):
    """The optimizer's variables: a list (Keras 3's `optimizer.variables` property) that can also
    be called (TF1's `optimizer.variables()` method), giving a plain list."""

    def __call__(self) -> list:
        return list(self)


# a pytree as a list is, so `optimizer.variables` goes into jax.jit as Keras's guide passes it
jax.tree_util.register_pytree_node(
    VariableList, lambda variables: (list(variables), None), lambda _, items: VariableList(items)
)


@dataclasses.dataclass(frozen=True)
class BuiltState:
    """What `build` made: the state variables, the variables they serve and the update rule."""

    variables: list  # [iteration, learning_rate (numeric rates), optax state leaves...]
    trainable: list  # the model variables, in the order the values are given
    rule: UpdateRule
    has_rate: bool  # whether variables[1] is the learning rate


# optimizer -> its BuiltState; weak, so the state goes with the optimizer
_BUILT: weakref.WeakKeyDictionary[Any, BuiltState] = weakref.WeakKeyDictionary()


def built_state(optimizer: Any) -> BuiltState | None:
    return _BUILT.get(optimizer)


def build(optimizer: Any, variables: Sequence[Any], initial_state: Any) -> None:
    """Creates the optimizer's state for `variables` (see the module docstring); a second call
    does nothing, as in Keras. `initial_state(transform, shapes)` gives the optax state's
    structure and a maker of each leaf's initial value (as for `apply_gradients`' slots)."""
    if optimizer in _BUILT:
        return
    variables = list(variables)
    if not variables:
        raise ValueError(f"{type(optimizer).__name__}.build needs the variables to optimize.")
    if len({id(v) for v in variables}) != len(variables):
        raise ValueError("A variable appears twice in the variables to build for.")
    names = _unique_names([_param_name(v) for v in variables])
    rate = optimizer._learning_rate  # the number or schedule given (`learning_rate` evaluates)
    has_rate = isinstance(rate, (int, float, np.number))
    if not has_rate and (isinstance(rate, (Tensor, Variable)) or not callable(rate)):
        raise ValueError(
            f"stateless_apply needs a learning rate that is a number or a schedule (a function of "
            f"the step); {type(optimizer).__name__}'s is {rate!r}."
        )
    shapes = {n: (tuple(v.shape.as_list()), np.dtype(v.dtype)) for n, v in zip(names, variables)}
    for n, (shape, _) in shapes.items():
        if any(d is None for d in shape):
            raise ValueError(f"The optimizer needs variables of known shape; {n} has {shape}.")
    state, makers = initial_state(optimizer.transformation, shapes)
    rate_dtype = np.result_type(*[dtype for _, dtype in shapes.values()])
    g, scope = Graph(), optimizer.get_name()
    state_cells.manage(g)  # its values are read outside graphs (`v.value`), as Keras's are
    made = [_state_variable(g, f"{scope}/iteration", lambda: np.int64(0))]
    if has_rate:
        made.append(
            _state_variable(g, f"{scope}/learning_rate", lambda: np.asarray(rate, rate_dtype))
        )
    for (param, field), make in zip(state_leaf_names(state, names), makers):
        path = f"{scope}/{param}/{field}" if param else f"{scope}/{field}"
        made.append(_state_variable(g, path, make))
    rule = UpdateRule(
        optimizer.transformation,
        names,
        jax.tree_util.tree_structure(state),
        takes_learning_rate=True,
    )
    _BUILT[optimizer] = BuiltState(made, variables, rule, has_rate)


def _param_name(v: Any) -> str:
    """A model variable's name: its graph name ("dense/kernel"), or a Keras variable's path."""
    return v.op.name if isinstance(v, Variable) else v.path


def _unique_names(names: list[str]) -> list[str]:
    """`names`, a repeated one suffixed "_1", "_2", ... (two models built in graphs of their own
    may both have a "dense/kernel")."""
    taken: set[str] = set()
    out = []
    for name in names:
        unique, i = name, 0
        while unique in taken:
            i += 1
            unique = f"{name}_{i}"
        taken.add(unique)
        out.append(unique)
    return out


def _state_variable(g: Graph, path: str, make_value: Any) -> Variable:
    """One variable of the optimizer's state: a state cell (usable from any graph, as a layer's
    weights are), first mirrored in `g`."""
    with g.as_default():
        variable = Variable(make_value, trainable=False, name=path)
    cell = state_cells.StateCell(path, variable.dtype, variable.shape, make_value, False)
    state_cells.attach(variable, cell)
    return variable


def stateless_apply(
    optimizer: Any,
    optimizer_variables: Sequence[Any],
    grads: Sequence[Any],
    trainable_variables: Sequence[Any],
) -> tuple[list, list]:
    """One step on values: `(new_trainable_values, new_optimizer_values)`.

    Args:
      optimizer_variables: the values of `optimizer.variables`, in order.
      grads: one gradient per trainable value.
      trainable_variables: the values of the variables the optimizer was built for, in order.

    Raises:
      ValueError: the optimizer is not built, a list has the wrong length, a gradient is None.
    """
    built = _BUILT.get(optimizer)
    name = type(optimizer).__name__
    if built is None:
        raise ValueError(
            f"To call `stateless_apply`, {name} must be built (i.e. its variables must have been "
            "created). You can build it via `optimizer.build(trainable_variables)`."
        )
    if len(optimizer_variables) != len(built.variables):
        raise ValueError(
            "Argument `optimizer_variables` must be a list of tensors corresponding 1:1 to "
            f"{name}().variables. Received list with length {len(optimizer_variables)}, but "
            f"expected {len(built.variables)} variables."
        )
    if len(trainable_variables) != len(built.trainable) or len(grads) != len(built.trainable):
        raise ValueError(
            "Arguments `grads` and `trainable_variables` must be lists corresponding 1:1 to the "
            f"trainable variables the optimizer was built with ({len(built.trainable)}); "
            f"received {len(grads)} gradients and {len(trainable_variables)} values."
        )
    missing = [_param_name(v) for v, g in zip(built.trainable, grads) if g is None]
    if missing:
        raise ValueError(f"stateless_apply got no gradient (None) for {missing}.")
    values = [_as_array(x, "optimizer value") for x in optimizer_variables]
    params = [_as_array(x, "trainable value") for x in trainable_variables]
    with x64_scope():
        params = [jnp.asarray(p, np.dtype(v.dtype)) for p, v in zip(params, built.trainable)]
        grads = [jnp.asarray(g, p.dtype) for g, p in zip(grads, params)]
        iteration, rest = values[0], values[1:]
        if built.has_rate:
            rate, leaves = rest[0], rest[1:]
        else:
            rate, leaves = optimizer._learning_rate(iteration), rest
        rate = jnp.asarray(rate, jnp.result_type(*params))
        new_params, new_leaves = built.rule(rate, grads, params, leaves)
        new_values = [iteration + 1] + ([rest[0]] if built.has_rate else []) + new_leaves
    return new_params, new_values


def _as_array(x: Any, what: str) -> Any:
    if isinstance(x, Variable):
        raise TypeError(
            f"stateless_apply takes values, got the variable {x.op.name!r} as a {what}: pass "
            "its value (`optimizer.variables` and the model's variables hold them)."
        )
    return jnp.asarray(x)

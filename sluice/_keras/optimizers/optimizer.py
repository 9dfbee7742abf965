"""`Optimizer`: a thin adapter that applies an optax transformation to graph variables.

`apply_gradients` builds, under the optimizer's name scope:
  - one non-trainable Variable per leaf of the optax state (initial value: `tx.init` evaluated on
    zeros of the variables' shapes), named `<scope>/<variable name>/<field>` for per-variable
    leaves (`Adam/dense/kernel/mu`) and `<scope>/<field>` for shared ones (`Adam/count`);
  - one `ApplyUpdates` op computing new parameters and new state from the gradients, the
    current values and the learning rate;
  - one assignment per variable, grouped into the returned op (which then increments the
    global step, when one is given).
Being Variables in GLOBAL_VARIABLES, the optimizer's state is initialised by
`global_variables_initializer()` and saved and restored by `Saver` with the model.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from sluice._export import export
from sluice._keras.optimizers import stateless, transforms
from sluice._keras.optimizers.update_ops import UpdateRule, state_leaf_names
from sluice._keras.optimizers.weight_constraints import constrained
from sluice._module_paths import saved_module
from sluice.framework.autodiff.gradients import gradients
from sluice.framework.graph_def import attr_codec
from sluice.framework.ir import dtypes
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Operation, Tensor
from sluice.framework.ir.x64 import with_x64
from sluice.framework.ops.array import fill_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import indexed_slices
from sluice.framework.ops.math.indexed_slices import IndexedSlices
from sluice.framework.partitioned_variables import mark_as_part, slice_info
from sluice.framework.variables import SaveSliceInfo, Variable, trainable_variables

GradsAndVars = list[tuple[Any, Variable]]

# Every Optimizer class by "module.QualName": an ApplyUpdates op saved in a graph_def names its
# optimizer's class, and only a class of this table is rebuilt on import (nothing is imported).
_OPTIMIZER_CLASSES: dict[str, type] = {}


def _slice_like(slot: Variable, primary: Variable) -> None:
    """A slot of a part of a partitioned variable is the same part of the slot of the whole
    (TF1's slot_creator): `Adagrad/emb/part_1/sum_of_squares` is saved within
    `Adagrad/emb/sum_of_squares`, so optimizer state restores into another partitioning too."""
    info = slice_info(primary)
    if info is None or slot.shape != primary.shape:
        return
    part = f"/{primary.op.name}/"
    name = f"/{slot.op.name}/"
    if part in name:
        full_name = name.replace(part, f"/{info.full_name}/", 1).strip("/")
    else:
        full_name = f"{info.full_name}/{slot.op.name}"
    shapes = (info.full_shape, info.var_offset, info.var_shape)
    mark_as_part(slot, SaveSliceInfo(full_name, *shapes))


def _class_key(cls: type) -> str:
    """ "module.QualName" of an Optimizer class, as saved graphs name it (sluice's own classes by
    their module before issue 26 moved them: "sluice.optimizers.tf1.AdamOptimizer")."""
    return f"{saved_module(cls.__module__)}.{cls.__qualname__}"


@export("optimizers.Optimizer", "train.Optimizer")
class Optimizer:
    """Base class of every optimizer; subclasses only say which optax transformation to apply.

    Args:
      learning_rate: a float, a scalar Tensor (a placeholder, or `sl.train.exponential_decay(...)`),
        or an optax schedule (`count -> rate`, driven by the optimizer's own step count, which
        then lives in its state).
      name: the name scope of the ops and state variables the optimizer creates.
      clipvalue: clips every gradient element to [-clipvalue, clipvalue] first.
      global_clipnorm: rescales all gradients so their global norm is at most this.

    Subclasses implement `_transform(learning_rate) -> optax.GradientTransformation`.

    An `IndexedSlices` gradient (of a gather or embedding lookup) is applied as the subclass's
    `sparse_update` says, after TF1's `_apply_sparse`: "rows" updates only the rows it names and
    their state (GradientDescent, Momentum, Adagrad, RMSProp); "dense" applies it as a dense
    gradient (Adam, whose TF1 sparse update still decays every row's moments).

    >>> w = sl.Variable(5.0)
    >>> loss = sl.square(w - 2.0)
    >>> opt = sl.train.AdamOptimizer(0.1)
    >>> train_op = opt.minimize(loss, global_step=sl.train.get_or_create_global_step())
    >>> with sl.Session() as sess:
    ...     sess.run(sl.global_variables_initializer())
    ...     for _ in range(100):
    ...         sess.run(train_op)
    ...     print(round(float(sess.run(w)), 1))
    2.0
    """

    sparse_update = "dense"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _OPTIMIZER_CLASSES[_class_key(cls)] = cls

    def __new__(cls, *args: Any, **kwargs: Any) -> "Optimizer":
        self = super().__new__(cls)
        # The constructor's arguments, so that a saved graph can rebuild the same update rule
        # (`_rule_spec`); a call that does not bind fails in __init__ with Python's own error.
        signature = inspect.signature(cls.__init__)
        try:
            bound = signature.bind(None, *args, **kwargs).arguments
        except TypeError:
            self._init_arguments = None
            return self
        arguments = {}
        for key, value in list(bound.items())[1:]:
            kind = signature.parameters[key].kind
            if kind is inspect.Parameter.VAR_KEYWORD:
                arguments.update(value)
            elif kind is not inspect.Parameter.VAR_POSITIONAL:
                arguments[key] = value
        self._init_arguments = arguments
        return self

    def __init__(
        self,
        learning_rate: Any,
        name: str,
        *,
        clipvalue: float | None = None,
        global_clipnorm: float | None = None,
    ):
        if learning_rate is None:
            raise ValueError(f"{type(self).__name__} needs a learning rate.")
        self._learning_rate = learning_rate
        self._name = name
        self._clipvalue = clipvalue
        self._global_clipnorm = global_clipnorm
        self._state_variables: list[Variable] = []
        self._slots: dict[tuple[str, str], Variable] = {}
        self._states_built: dict[tuple, list[Variable]] = {}  # see `_build_update`

    # -- what subclasses provide ---------------------------------------------------------------
    def _transform(self, learning_rate: Any) -> optax.GradientTransformation:
        raise NotImplementedError

    def transformation(self, learning_rate: Any = None) -> optax.GradientTransformation:
        """The optax transformation applied (gradient clipping, then the update rule)."""
        rate = self._learning_rate if learning_rate is None else learning_rate
        return transforms.with_clipping(
            self._transform(rate), self._clipvalue, self._global_clipnorm
        )

    # -- TF1 API -------------------------------------------------------------------------------
    def get_name(self) -> str:
        return self._name

    @property
    def learning_rate(self) -> Any:
        return self._learning_rate

    def compute_gradients(
        self,
        loss: Any,
        var_list: list[Variable] | None = None,
        gate_gradients: int = 1,
        aggregation_method: Any = None,
        colocate_gradients_with_ops: bool = False,
        grad_loss: Any = None,
    ) -> GradsAndVars:
        """Gradients of `loss` for each variable of `var_list` (default: trainable variables).

        Returns:
          A list of (gradient or None, variable) pairs.
        """
        loss = core_ops.convert_to_tensor(loss)
        if not dtypes.is_floating(loss.dtype):
            raise ValueError(f"The loss {loss.name} must be floating point, got {loss.dtype.name}.")
        var_list = list(var_list) if var_list is not None else trainable_variables()
        if not var_list:
            raise ValueError("No variables to optimize.")
        for v in var_list:
            if not isinstance(v, Variable):
                raise TypeError(f"var_list must hold sl.Variable objects, got {v!r}.")
        grads = gradients(
            loss,
            var_list,
            grad_ys=grad_loss,
            colocate_gradients_with_ops=colocate_gradients_with_ops,
        )
        return list(zip(grads, var_list))

    def apply_gradients(
        self, grads_and_vars: Any, global_step: Variable | None = None, name: str | None = None
    ) -> Operation:
        """An op that applies one optimizer step; it also adds 1 to `global_step` when given.

        Raises:
          ValueError: no variable has a gradient, or a gradient does not fit its variable.
        """
        pairs = [(g, v) for g, v in grads_and_vars]
        for _, v in pairs:
            if not isinstance(v, Variable):
                raise TypeError(
                    f"apply_gradients expects (gradient, sl.Variable) pairs, got {v!r}."
                )
        used = [(self._as_gradient(g), v) for g, v in pairs if g is not None]
        if used:  # a layer shared with another model: its weights' mirrors in this graph
            g = graph_lib.graph_of([getattr(t, "values", t) for t, _ in used])
            used = [(t, v.graph_variable(g)) for t, v in used]
        if not used:
            raise ValueError(
                "No gradients provided for any variable: check that the loss depends on "
                f"{[v.op.name for _, v in pairs]}."
            )
        names = [v.op.name for _, v in used]
        if len(set(names)) != len(names):
            raise ValueError(f"A variable appears twice in grads_and_vars: {names}.")
        for g, v in used:
            if g.dtype != v.dtype or not g.shape.is_compatible_with(v.shape):
                raise ValueError(
                    f"The gradient for {v.op.name} is {g.dtype.name}{g.shape}, but the "
                    f"variable is {v.dtype.name}{v.shape}."
                )
        g = graph_lib.graph_of([getattr(t, "values", t) for t, _ in used])
        with g.as_default(), g.name_scope(name or self._name):
            train_op = self._build_update([t for t, _ in used], [v for _, v in used], names)
            if global_step is not None:
                with g.control_dependencies([train_op]):
                    train_op = global_step.assign_add(
                        np.ones([], global_step.dtype),
                        name="increment_global_step",
                        read_value=False,
                    )
        # As TF1: programs (the PTB model's import_ops, Supervisor users) find it there.
        train_ops = g.get_collection_ref(graph_lib.GraphKeys.TRAIN_OP)
        if train_op not in train_ops:
            train_ops.append(train_op)
        return train_op

    def minimize(
        self,
        loss: Any,
        global_step: Variable | None = None,
        var_list: list[Variable] | None = None,
        gate_gradients: int = 1,
        aggregation_method: Any = None,
        colocate_gradients_with_ops: bool = False,
        name: str | None = None,
        grad_loss: Any = None,
    ) -> Operation:
        """`compute_gradients` then `apply_gradients`: an op doing one training step."""
        grads_and_vars = self.compute_gradients(
            loss,
            var_list=var_list,
            grad_loss=grad_loss,
            colocate_gradients_with_ops=colocate_gradients_with_ops,
        )
        return self.apply_gradients(grads_and_vars, global_step=global_step, name=name)

    @property
    def variables(self) -> stateless.VariableList:
        """The Variables holding the optimizer's state (created by `build`, then those of
        `apply_gradients`): Keras 3's property, also callable as TF1's `variables()`."""
        built = stateless.built_state(self)
        return stateless.VariableList((built.variables if built else []) + self._state_variables)

    @property
    def built(self) -> bool:
        return stateless.built_state(self) is not None

    def build(self, variables: list) -> None:
        """Creates the state for `variables` before a JAX loop (Keras 3; see `stateless`)."""
        stateless.build(self, variables, _initial_state)

    def stateless_apply(self, optimizer_variables, grads, trainable_variables) -> tuple:
        """One step on values: (new trainable values, new optimizer values) (see `stateless`)."""
        return stateless.stateless_apply(self, optimizer_variables, grads, trainable_variables)

    def get_slot_names(self) -> list[str]:
        """The per-variable state fields, e.g. ["mu", "nu"] for Adam (optax's names)."""
        return sorted({field for _, field in self._slots})

    def get_slot(self, var: Variable, name: str) -> Variable | None:
        """The state Variable `name` kept for `var`, or None."""
        return self._slots.get((var.op.name, name))

    # -- building ------------------------------------------------------------------------------
    def _as_gradient(self, g: Any) -> Tensor | IndexedSlices:
        if isinstance(g, IndexedSlices) and self.sparse_update == "rows":
            return g
        return core_ops.convert_to_tensor(g)

    def _learning_rate_input(self, var_list: list[Variable]) -> Tensor | None:
        rate = self._learning_rate
        if callable(rate) and not isinstance(rate, (Tensor, Variable)):
            return None  # an optax schedule: the transformation counts its own steps
        if isinstance(rate, (int, float, np.number)):  # in the variables' precision
            rate = core_ops.constant(rate, dtype=np.result_type(*[v.dtype for v in var_list]))
        rate = core_ops.convert_to_tensor(rate, name="learning_rate")
        if not dtypes.is_floating(rate.dtype) or rate.shape.rank not in (None, 0):
            raise ValueError(
                f"The learning rate must be a floating scalar, got {rate.dtype.name}{rate.shape}."
            )
        return rate

    def _build_update(
        self, grads: list[Tensor], var_list: list[Variable], names: list[str]
    ) -> Operation:
        rate = self._learning_rate_input(var_list)
        if rate is None:

            def transform(_: Any) -> optax.GradientTransformation:
                return self.transformation()

        else:
            transform = self.transformation
        for v in var_list:
            if not v.shape.is_fully_defined():
                raise ValueError(
                    f"The optimizer needs variables of known shape; {v.op.name} has "
                    f"shape {v.shape}."
                )
        shapes = {n: (tuple(v.shape.as_list()), v.dtype) for n, v in zip(names, var_list)}
        state, initial_values = _initial_state(transform, shapes)
        treedef = jax.tree_util.tree_structure(state)
        # the same variables updated again in this graph (a step traced anew) keep their state,
        # as TF1's slots are one per variable
        key = (graph_lib.get_default_graph(), tuple(var_list), rate is None)
        state_vars = self._states_built.get(key)
        if state_vars is None:
            state_vars = self._new_state(state, names, var_list, initial_values)
            self._states_built[key] = state_vars
        grads, sparse = _rows_to_update(grads, var_list, state, names)
        rule = UpdateRule(
            transform,
            names,
            treedef,
            takes_learning_rate=rate is not None,
            sparse_rows=sparse,
            spec=self._rule_spec(rate is not None, shapes, sparse),
        )
        inputs = ([rate] if rate is not None else []) + [getattr(g, "values", g) for g in grads]
        inputs += [v.value() for v in var_list] + [v.value() for v in state_vars]
        inputs += [grads[k].indices for k in sparse]
        op = core_ops.apply_op("ApplyUpdates", inputs, {"rule": rule}, name="update")
        assigns = [
            v.assign(constrained(v, new), read_value=False)
            for v, new in zip(var_list + state_vars, op.outputs)
        ]
        return core_ops.group(*assigns, name="apply")

    def _new_state(
        self, state: Any, names: list[str], var_list: list[Variable], initial_values: list
    ) -> list[Variable]:
        """One Variable per leaf of the optax state of `var_list`."""
        state_vars = []
        by_name = dict(zip(names, var_list))
        for (param, field), make_value in zip(state_leaf_names(state, names), initial_values):
            # a slot lives on its variable's device (shared state on the default one)
            home = (
                graph_lib.colocate_with(by_name[param])
                if param is not None
                else contextlib.nullcontext()
            )
            with home:
                var = Variable(
                    make_value, trainable=False, name=f"{param}/{field}" if param else field
                )
            state_vars.append(var)
            if param is not None:
                self._slots[(param, field)] = var
                _slice_like(var, by_name[param])
            self._state_variable_made(param, field, var)
        self._state_variables.extend(state_vars)
        return state_vars

    def _state_variable_made(self, param: str | None, field: str, variable: Variable) -> None:
        """Called for each state Variable `apply_gradients` makes (`param` None for a shared
        leaf such as "count"); subclasses may keep some (Keras's schedule step count)."""

    def _rule_spec(
        self,
        takes_learning_rate: bool,
        shapes: dict[str, tuple],
        sparse: dict[int, tuple[int, ...]],
    ) -> dict:
        """What rebuilds this update rule in another process: the class, the constructor's
        arguments (the learning rate is the op's input when it is a Tensor), the parameters'
        names, shapes and dtypes, and the rows updated sparsely. {"error": why} if it cannot
        be saved (an optax schedule, a Tensor argument): the graph_def export names the op."""
        key = _class_key(type(self))
        if self._init_arguments is None or _OPTIMIZER_CLASSES.get(key) is not type(self):
            return {"error": f"{key} was not built from its constructor's arguments"}
        arguments = {}
        for name, value in self._init_arguments.items():
            if name == "learning_rate" and takes_learning_rate:
                value = None  # the op's first input
            try:
                arguments[name] = attr_codec.encode(value)
            except attr_codec.UnserializableAttrError as err:
                return {"error": f"{key}'s argument {name}={value!r} cannot be saved ({err})"}
        return {
            "optimizer": key,
            "arguments": arguments,
            "param_names": list(shapes),
            "param_specs": [
                [list(shape), attr_codec.encode_dtype(dtype)] for shape, dtype in shapes.values()
            ],
            "takes_learning_rate": takes_learning_rate,
            "sparse_rows": [[k, list(owned)] for k, owned in sparse.items()],
        }

    def get_config(self) -> dict:
        return {"name": self._name, "learning_rate": self._learning_rate}

    @classmethod
    def from_config(cls, config: dict) -> Optimizer:
        return cls(**config)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} name={self._name!r} learning_rate={self._learning_rate!r}>"


def _rows_to_update(
    grads: list, var_list: list[Variable], state: Any, names: list[str]
) -> tuple[list, dict[int, tuple[int, ...]]]:
    """The gradients, IndexedSlices made dense where rows cannot be updated alone (a scalar
    variable, a state leaf not of the variable's shape), and {position of a variable updated by
    rows: positions of its state leaves}."""
    leaves = jax.tree_util.tree_leaves(state)
    owners = state_leaf_names(state, names)
    grads, sparse = list(grads), {}
    for k, (g, v) in enumerate(zip(grads, var_list)):
        if not isinstance(g, IndexedSlices):
            continue
        owned = tuple(j for j, (param, _) in enumerate(owners) if param == names[k])
        shape = tuple(v.shape.as_list())
        if shape and all(tuple(leaves[j].shape) == shape for j in owned):
            sparse[k] = owned
        else:
            grads[k] = indexed_slices.dense(g)
    return grads, sparse


@with_x64  # JAX evaluates optax's state at graph construction (see `ir.x64`)
def _initial_state(
    transform: Callable[[Any], optax.GradientTransformation], shapes: dict[str, tuple]
) -> tuple[Any, list[Callable[[], Tensor]]]:
    """The structure of `transform(...).init(zeros of shapes)` and, per leaf, a function building
    its initial value in the graph: a Fill when the leaf repeats one value (zeros, ones, 0.1), so
    no state-sized constant is embedded in the graph and no state-sized array is copied to the
    host; a Const otherwise."""

    def init() -> Any:
        params = {n: jnp.zeros(shape, dtype) for n, (shape, dtype) in shapes.items()}
        return transform(jnp.ones([], jnp.float32)).init(params)

    def summary() -> list:
        out = []
        for leaf in jax.tree_util.tree_leaves(init()):
            first = leaf.reshape(-1)[0] if leaf.size else jnp.zeros([], leaf.dtype)
            out.append((first, jnp.all(leaf == first)))
        return out

    structure = jax.eval_shape(init)
    full = None
    makers: list[Callable[[], Tensor]] = []
    for i, (spec, (first, uniform)) in enumerate(
        zip(jax.tree_util.tree_leaves(structure), jax.jit(summary)())
    ):
        value = np.asarray(first)
        if bool(uniform) and not spec.shape:
            makers.append(lambda v=value: core_ops.constant(v, dtype=v.dtype))
        elif bool(uniform):
            makers.append(
                lambda s=spec, v=value: fill_ops.fill(
                    list(s.shape), core_ops.constant(v, dtype=s.dtype)
                )
            )
        else:  # rare: an optax state that does not start as one repeated value
            if full is None:
                full = jax.tree_util.tree_leaves(jax.jit(init)())
            array = np.asarray(full[i])
            makers.append(lambda v=array: core_ops.constant(v, dtype=v.dtype))
    return structure, makers


def _encode_rule(rule: UpdateRule) -> dict:
    spec = rule.spec or {"error": "the rule was not built by an Optimizer"}
    if "error" in spec:
        raise attr_codec.UnserializableAttrError(
            f"an update rule that cannot be saved: {spec['error']}"
        )
    return spec


@with_x64
def _decode_rule(spec: dict) -> UpdateRule:
    """The UpdateRule `_rule_spec` describes, rebuilt from a registered optimizer class."""
    fields = {
        "optimizer",
        "arguments",
        "param_names",
        "param_specs",
        "takes_learning_rate",
        "sparse_rows",
    }
    if not isinstance(spec, dict) or set(spec) != fields:
        raise ValueError(f"an update rule spec has the fields {sorted(fields)}")
    cls = _OPTIMIZER_CLASSES.get(spec["optimizer"]) if isinstance(spec["optimizer"], str) else None
    if cls is None:
        raise ValueError(f"no optimizer class {spec['optimizer']!r} is defined in this process")
    if not isinstance(spec["arguments"], dict) or not isinstance(spec["takes_learning_rate"], bool):
        raise ValueError("arguments must be an object and takes_learning_rate a bool")
    arguments = {k: attr_codec.decode(v) for k, v in spec["arguments"].items()}
    if spec["takes_learning_rate"]:
        arguments["learning_rate"] = 1.0  # a stand-in: the op's first input is the rate
    optimizer = cls(**arguments)
    names, specs = spec["param_names"], spec["param_specs"]
    if (
        not isinstance(names, list)
        or not isinstance(specs, list)
        or len(names) != len(specs)
        or not all(isinstance(n, str) for n in names)
    ):
        raise ValueError("param_names and param_specs must be lists of one length")
    shapes = {
        n: (tuple(attr_codec.decode_shape(shape).as_list()), attr_codec.decode_dtype(dtype))
        for n, (shape, dtype) in zip(names, specs)
    }
    if spec["takes_learning_rate"]:
        transform = optimizer.transformation
    else:

        def transform(_: Any) -> optax.GradientTransformation:
            return optimizer.transformation()

    state = jax.eval_shape(
        lambda: transform(jnp.ones([], jnp.float32)).init(
            {n: jnp.zeros(shape, dtype) for n, (shape, dtype) in shapes.items()}
        )
    )
    sparse = {}
    for row in spec["sparse_rows"]:
        k, owned = row
        sparse[int(k)] = tuple(int(j) for j in owned)
    return UpdateRule(
        transform,
        names,
        jax.tree_util.tree_structure(state),
        takes_learning_rate=spec["takes_learning_rate"],
        sparse_rows=sparse,
        spec=spec,
    )


attr_codec.register_attr_type("update_rule", UpdateRule, _encode_rule, _decode_rule)

"""`RNNCell`, the TF1 cell contract, and `BasicRNNCell`.

A cell maps (inputs, state) to (output, new_state) for ONE time step. `dynamic_rnn` owns the
loop and calls the cell once while it builds the loop body; the cell never sees frames.

Life cycle (TF1's Layer-based cells): the first call enters the cell's variable scope (by
default a fresh `<current scope>/<snake_case class name>`, e.g. `rnn/basic_lstm_cell`), calls
`build(inputs_shape)`, which creates the weights with `add_variable`, and then `call`.
Later calls re-enter the same scope and reuse the same weights. The weights' dtype is the
inputs' dtype, as in TF1. A cell made with `reuse=True` (or called in a reusing variable scope)
takes the variables an earlier cell made under the same scope name instead of making its own:
the TF1 way to build a training and an inference graph on one set of weights.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from sluice._export import export
from sluice._tf1.cells import nest
from sluice._tf1.cells import scopes as vs
from sluice._tf1.cells.cell_config import get_activation, serialize_activation
from sluice._tf1.cells.initializers import zeros_initializer
from sluice._tf1.cells.variable_store import get_variable
from sluice.framework.control_flow.tensor_array import is_tensor_array
from sluice.framework.ir import dtypes
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.default_session import get_default_session
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.tensor_shape import TensorShape, as_shape
from sluice.framework.ops.array import fill_ops, join_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.core.shape_rules import constant_value
from sluice.framework.ops.math import math_ops, matmul_ops, unary_ops
from sluice.framework.ops.nn import nn_ops
from sluice.framework.partitioned_variables import PartitionedVariable
from sluice.framework.variables import Variable


class TrackableReference(NamedTuple):
    """One dependency of a cell in a TF1 object-based checkpoint: its local name, the object."""

    name: str
    ref: Any


WEIGHTS_NAME = "kernel"
CELL_CLASSES: dict[str, type] = {}
BIAS_NAME = "bias"


def size_shape(size: Any) -> TensorShape:
    """A state or output size (an int or a shape) as a TensorShape, without the batch."""
    return TensorShape([size]) if isinstance(size, int) else as_shape(size)


@export("nn.rnn_cell.RNNCell", "contrib.rnn.RNNCell")
class RNNCell:
    """An RNN cell: one step of a recurrence, with weights made on the first call.

    Subclasses define `state_size`, `output_size`, `build(inputs_shape)` (creating weights
    with `add_variable`; `self.dtype` is known by then) and
    `call(inputs, state) -> (output, new_state)`, as TF1 cells do.

    Args:
      name: the base of the cell's variable scope (default: the class name in snake case).
      dtype: the weights' dtype (default: the dtype of the first inputs).
      reuse: as TF1's cells: None makes the weights on the first call, in a fresh scope
        `<current scope>/<name>` (`<name>_1`, ... when taken); True takes the variables that
        already exist in `<current scope>/<name>` (an error if there are none); AUTO_REUSE
        takes them or makes them. A cell called again always uses its own weights.
      trainable: whether the weights go to the TRAINABLE_VARIABLES collection.
    """

    # The built-in cells' gates (tanh, sigmoid) need floating-point inputs, as in TF1.
    _float_inputs_only = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        CELL_CLASSES[cls.__name__] = cls  # for configs that name a wrapped cell

    def __init__(
        self,
        name: str | None = None,
        dtype: Any = None,
        reuse: Any = None,
        trainable: bool = True,
    ):
        if not (reuse is None or isinstance(reuse, bool) or reuse == vs.AUTO_REUSE):
            raise ValueError(
                f"{type(self).__name__}: reuse must be True, False, None or AUTO_REUSE, got "
                f"{reuse!r}."
            )
        self._base_name = name or vs.snake_case(type(self).__name__)
        # TF1 names a cell when it is made (basic_rnn_cell, basic_rnn_cell_1, ...); its weights'
        # scope is chosen on the first call, from the base name.
        self._name = name or vs.unique_object_name(self._base_name)
        self._dtype = None if dtype is None else dtypes.as_dtype(dtype)
        self._reuse = reuse
        self._trainable = trainable
        self._scope: vs.VariableScope | None = None
        self._variables: list[Variable] = []
        self._named_weights: list[TrackableReference] = []
        self._make_weight: Callable | None = None  # set by `build_with_weights`
        self.built = False

    # -- the contract ----------------------------------------------------------------------------
    @property
    def state_size(self) -> Any:
        """The size(s) of the state: an int, a TensorShape, or a nested structure of them."""
        raise NotImplementedError

    @property
    def output_size(self) -> Any:
        """The size(s) of the output, like `state_size`."""
        raise NotImplementedError

    def build(self, inputs_shape: TensorShape) -> None:
        """Creates the weights for inputs of static shape `inputs_shape` (the first input's
        shape when the inputs are a structure)."""
        self.built = True

    def call(self, inputs: Any, state: Any) -> tuple[Any, Any]:
        raise NotImplementedError

    def __call__(self, inputs: Any, state: Any, scope: Any = None) -> tuple[Any, Any]:
        """Runs one step: returns (output, new_state).

        Args:
          inputs: a [batch, depth] Tensor (a structure of them for some wrappers).
          state: a structure of Tensors matching `state_size`.
          scope: on the first call, the variable scope of the weights instead of the default
            `<current scope>/<cell name>` (a name or a `VariableScope`).
        """
        inputs = nest.map_structure(core_ops.convert_to_tensor, inputs)
        state = to_tensors(state)
        self.check_inputs(inputs)
        if self._scope is None:
            with self._first_scope(scope) as captured:
                self._scope = captured
                self._maybe_build(inputs)
                return self.call(inputs, state)
        # Once built, the cell's variables exist: a `call` that asks for them again gets them.
        with vs.variable_scope(self._scope, reuse=True if self.built else self._reuse):
            self._maybe_build(inputs)
            return self.call(inputs, state)

    def _first_scope(self, scope: Any = None) -> Any:
        """TF1's Layer._set_scope: a reusing cell takes its base name as it is (to find the
        variables an earlier cell made there), a new one a fresh scope (`<name>`, `<name>_1`,
        ... under the current scope)."""
        if self._reuse:
            return vs.variable_scope(
                scope if scope is not None else self._base_name, reuse=self._reuse
            )
        return vs.variable_scope(scope, default_name=self._base_name)

    def check_inputs(self, inputs: Any) -> None:
        """Raises ValueError for inputs this cell cannot take (the built-in cells: any that are
        not floating point); `dynamic_rnn` asks before it builds its loop."""
        if self._float_inputs_only:
            check_float_inputs(self, inputs)

    def _maybe_build(self, inputs: Any) -> None:
        if self.built:
            return
        first = nest.flatten(inputs)[0]
        if self._dtype is None:
            self._dtype = first.dtype
        self.build(first.shape)
        self.built = True

    # -- config ----------------------------------------------------------------------------------
    def get_config(self) -> dict:
        """The constructor arguments (TF1 cells are Keras layers): `from_config` of it makes a
        new cell of the same kind (with weights of its own, made on its first call)."""
        return {
            "name": self._name,
            "trainable": self._trainable,
            "dtype": None if self._dtype is None else self._dtype.name,
        }

    @classmethod
    def from_config(cls, config: dict) -> RNNCell:
        return cls(**config)

    # -- weights ---------------------------------------------------------------------------------
    def add_variable(
        self,
        name: str,
        shape: Any,
        dtype: Any = None,
        initializer: Callable | None = None,
        trainable: bool = True,
        partitioner: Callable | None = None,
    ) -> Any:
        """Creates the weight `<cell scope>/<name>` (call from `build`); `dtype` defaults to
        the cell's, `initializer` to glorot uniform. With a `partitioner` the weight is a
        `PartitionedVariable` of parts `<name>/part_<i>` (TF1's Layer.add_weight), and each
        part is one of the cell's variables."""
        dtype = self._dtype if dtype is None else dtype
        if self._make_weight is not None:  # the weights of a Keras RNN layer (see below)
            if partitioner is not None:
                raise ValueError(
                    f"{type(self).__name__} {self._name!r} in a Keras RNN layer: its weight "
                    f"{name!r} cannot be partitioned (the layer's weights are whole)."
                )
            trainable = trainable and self._trainable
            var = self._make_weight(f"{self._name}/{name}", shape, dtype, initializer, trainable)
            self._variables.append(var)
            self._named_weights.append(TrackableReference(name, var))
            return var
        if self._scope is None:  # `build` called before the first call: choose the scope now
            with self._first_scope() as captured:
                self._scope = captured
        # TF1's Layer.add_weight: the weights live in the cell's own scope wherever `build` is
        # called from, so two cells built side by side get two sets of weights.
        with vs.variable_scope(
            self._scope, reuse=True if self.built else self._reuse, auxiliary_name_scope=False
        ):
            var = get_variable(
                name,
                shape,
                dtype=dtype,
                initializer=initializer,
                trainable=trainable and self._trainable,
                partitioner=partitioner,
            )
        if isinstance(var, PartitionedVariable):
            self._variables.extend(var)
        elif isinstance(var, Variable):  # a custom getter may return a Tensor made from one
            self._variables.append(var)
        self._named_weights.append(TrackableReference(name, var))
        return var

    def get_weights(self) -> list[np.ndarray]:
        """The weights' values in the default session (TF1's `Layer.get_weights` in graph
        mode, where Keras's session is the default one)."""
        return list(_default_session(self, "get_weights").run(self.variables))

    def set_weights(self, weights: list[Any]) -> None:
        """Loads `weights` (arrays, in the order of `variables`) into the default session.

        Raises:
          ValueError: another number of arrays than of weights, a shape that differs, or no
            default session.
        """
        variables = self.variables
        if len(weights) != len(variables):
            raise ValueError(
                f"{type(self).__name__}.set_weights: the cell has {len(variables)} weights, "
                f"given {len(weights)} arrays."
            )
        session = _default_session(self, "set_weights")
        for var, value in zip(variables, weights):
            value = np.asarray(value, dtype=var.dtype.as_numpy_dtype)
            if not var.shape.is_compatible_with(value.shape):
                raise ValueError(
                    f"{type(self).__name__}.set_weights: weight {var.op.name} has shape "
                    f"{var.shape}, the array given has shape {value.shape}."
                )
            var.load(value, session)

    @property
    def _checkpoint_dependencies(self) -> list[TrackableReference]:
        """What TF1's object-based checkpoints save of this cell, by local name: its own
        weights (`kernel`, `bias`, ...); a cell made of cells names those instead (a wrapper's
        `cell`, a MultiRNNCell's `cell-0`, `cell-1`, ...)."""
        return list(self._named_weights)

    @property
    def name(self) -> str:
        return self._name

    @property
    def scope_name(self) -> str | None:
        """The full name of the cell's variable scope, once it has been called."""
        return None if self._scope is None else self._scope.name

    @property
    def dtype(self) -> Any:
        return self._dtype

    @property
    def variables(self) -> list[Variable]:
        """The cell's weights (and those of the cells it wraps), in creation order."""
        return list(self._variables)

    @property
    def weights(self) -> list[Variable]:
        return self.variables

    @property
    def trainable_variables(self) -> list[Variable]:
        return [v for v in self.variables if v.trainable]

    @property
    def trainable_weights(self) -> list[Variable]:
        return self.trainable_variables

    @property
    def non_trainable_variables(self) -> list[Variable]:
        return [v for v in self.variables if not v.trainable]

    @property
    def non_trainable_weights(self) -> list[Variable]:
        return self.non_trainable_variables

    # -- states ----------------------------------------------------------------------------------
    def zero_state(self, batch_size: Any, dtype: Any) -> Any:
        """Zeros shaped [batch_size, size] for every size in `state_size`.

        Args:
          batch_size: an int or a scalar int Tensor.
          dtype: the dtype of the state.
        """
        with graph_lib.get_default_graph().name_scope(f"{type(self).__name__}ZeroState"):
            return _zero_state_tensors(self.state_size, batch_size, dtype)

    def get_initial_state(self, inputs: Any = None, batch_size: Any = None, dtype: Any = None):
        """Zeros for the state, sized by `batch_size` and `dtype` or by `inputs` ([batch, ...]),
        whose batch size may be unknown until run time (TF1's contract)."""
        if inputs is not None:
            inputs = core_ops.convert_to_tensor(inputs)
            static_batch = inputs.shape[0] if inputs.shape.rank else None
            if batch_size is None:
                batch_size = static_batch if static_batch is not None else fill_ops.shape(inputs)[0]
            elif static_batch != _static_batch_size(batch_size):
                # As TF1: an input of unknown batch size given a known batch_size (or one known
                # given a batch_size tensor of unknown value) is refused too.
                raise ValueError(
                    f"batch size from input tensor is different from the input param. Input "
                    f"tensor batch: {static_batch}, batch_size: {batch_size}"
                )
            if dtype is not None and dtypes.as_dtype(dtype) != inputs.dtype:
                raise ValueError(
                    f"dtype from input tensor is different from the input param. Input tensor "
                    f"dtype: {inputs.dtype.name}, dtype: {dtypes.as_dtype(dtype).name}"
                )
            dtype = inputs.dtype
        if batch_size is None or dtype is None:
            raise ValueError(
                "batch_size and dtype cannot be None while constructing initial state: "
                f"batch_size={batch_size}, dtype={dtype}"
            )
        return self.zero_state(batch_size, dtype)


def is_tf1_cell(cell: Any) -> bool:
    """Whether `cell` is a TF1 cell (`sl.nn.rnn_cell.RNNCell`), not a Keras one."""
    return isinstance(cell, RNNCell)


def build_with_weights(
    cell: RNNCell, inputs_shape: Any, dtype: Any, make_weight: Callable[..., Any]
) -> None:
    """Builds `cell` for one step's inputs of `inputs_shape` with its weights made by
    `make_weight(name, shape, dtype, initializer, trainable)` (`name`: the cell's name and the
    weight's, "lstm_cell/kernel"; `initializer`: a TF1 initializer or None for the default)
    instead of
    `get_variable`: how a Keras `RNN` layer makes a TF1 cell's weights its own, as TF1's cells,
    Keras layers there, have their weights in the layer. `dtype`: the weights' dtype when the
    cell has none. A cell already built keeps its weights.

    A cell of cells (MultiRNNCell, a wrapper) makes its cells' weights in its first call, not
    in `build`: it is called once here, on zeros of one row (ops nothing runs), so every cell
    it holds makes its weights now, through `make_weight` too, and not in the layer's loop."""
    if cell.built:
        return
    tree = _cells_in(cell)
    for c in tree:
        if c._dtype is None:
            c._dtype = dtypes.as_dtype(dtype)
        c._make_weight = make_weight
    try:
        shape = as_shape(inputs_shape)
        if len(tree) == 1:
            cell.build(shape)
            cell.built = True
        else:
            rows = fill_ops.zeros([1] + shape.as_list()[1:], cell.dtype)
            cell(rows, cell.zero_state(1, cell.dtype))
    finally:
        for c in tree:
            c._make_weight = None


def _cells_in(cell: RNNCell) -> list[RNNCell]:
    """`cell` and the TF1 cells it holds (a MultiRNNCell's, a wrapper's), depth first."""
    out = [cell]
    for _, ref in cell._checkpoint_dependencies:
        if isinstance(ref, RNNCell):
            out.extend(_cells_in(ref))
    return out


def _default_session(cell: RNNCell, what: str) -> Any:
    session = get_default_session()
    if session is None:
        raise ValueError(
            f"{type(cell).__name__}.{what} reads and writes the weights in the default session; "
            "call it inside `with sess.as_default():` (or a `with sl.Session() as sess:` block)."
        )
    return session


def _static_batch_size(batch_size: Any) -> int | None:
    """`batch_size` as a Python int where it is known while the graph is built, else None."""
    if isinstance(batch_size, Tensor):
        batch_size = constant_value(batch_size)
    return None if batch_size is None else int(batch_size)


def _zero_state_tensors(state_size: Any, batch_size: Any, dtype: Any) -> Any:
    static_batch = batch_size if isinstance(batch_size, int) else None
    if isinstance(batch_size, Tensor):
        value = constant_value(batch_size)
        static_batch = None if value is None else int(value)

    def zeros(size: Any) -> Tensor:
        dims = size_shape(size)
        if not dims.is_fully_defined():
            raise ValueError(f"zero_state: the state size {size} is not fully known.")
        z = fill_ops.zeros([batch_size] + dims.as_list(), dtype=dtype)
        z.set_shape([static_batch] + dims.as_list())
        return z

    return nest.map_structure(zeros, state_size)


def check_float_inputs(cell: RNNCell, inputs: Any) -> None:
    """Raises ValueError for inputs that are not floating point (TF1's message)."""
    for t in nest.flatten(inputs):
        if not dtypes.is_floating(t.dtype):
            raise ValueError(
                f"{type(cell).__name__}: RNN cell only supports floating point inputs, but saw "
                f"dtype: {t.dtype.name} ({t.name})."
            )


def input_depth(cell: RNNCell, inputs_shape: TensorShape) -> int:
    """The static depth of [batch, depth] inputs; raises when it is unknown."""
    depth = inputs_shape[-1] if inputs_shape.rank else None
    if depth is None:
        raise ValueError(
            f"{type(cell).__name__}: expected inputs.shape[-1] to be known, saw "
            f"shape: {inputs_shape}."
        )
    return int(depth)


def to_tensors(structure: Any) -> Any:
    """`structure` with each leaf a Tensor, except TensorArrays, which stay as they are: a
    cell's state may hold one (TF1's dynamic_rnn passes it through the loop untouched)."""
    return nest.map_structure(
        lambda x: x if is_tensor_array(x) else core_ops.convert_to_tensor(x), structure
    )


def state_dtype(state: Any) -> Any:
    """The dtype shared by every Tensor of `state`."""
    kinds = {t.dtype for t in nest.flatten(state)}
    if len(kinds) != 1:
        raise TypeError(f"The state mixes dtypes {sorted(k.name for k in kinds)}.")
    return kinds.pop()


def linear(inputs: list[Tensor], kernel: Any, bias: Any) -> Tensor:
    """concat(inputs, 1) @ kernel + bias: the one fused matmul of every TF1 cell."""
    x = inputs[0] if len(inputs) == 1 else join_ops.concat(inputs, 1)
    return nn_ops.bias_add(matmul_ops.matmul(x, kernel), bias)


@export("nn.rnn_cell.BasicRNNCell", "contrib.rnn.BasicRNNCell")
class BasicRNNCell(RNNCell):
    """h' = activation(concat([x, h]) @ kernel + bias); output = h'.

    Weights: `kernel` [depth + num_units, num_units] (glorot uniform), `bias` [num_units] (zeros).

    Args:
      num_units: the size of the state and the output.
      activation: a function or its name; default tanh.
      reuse, name, dtype, trainable: see `RNNCell`.
    """

    def __init__(
        self,
        num_units: int,
        activation: Callable | str | None = None,
        reuse: Any = None,
        name: str | None = None,
        dtype: Any = None,
        **kwargs: Any,
    ):
        super().__init__(name=name, dtype=dtype, reuse=reuse, **kwargs)
        self._num_units = int(num_units)
        self._activation = get_activation(activation) or unary_ops.tanh

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "num_units": self._num_units,
            "activation": serialize_activation(self._activation),
            "reuse": self._reuse,
        }

    _float_inputs_only = True

    @property
    def state_size(self) -> int:
        return self._num_units

    @property
    def output_size(self) -> int:
        return self._num_units

    def build(self, inputs_shape: TensorShape) -> None:
        depth = input_depth(self, inputs_shape)
        self._kernel = self.add_variable(WEIGHTS_NAME, [depth + self._num_units, self._num_units])
        self._bias = self.add_variable(
            BIAS_NAME, [self._num_units], initializer=zeros_initializer()
        )
        self.built = True

    def call(self, inputs: Tensor, state: Tensor) -> tuple[Tensor, Tensor]:
        output = self._activation(linear([inputs, state], self._kernel, self._bias))
        return output, output


def clip(x: Tensor, limit: float) -> Tensor:
    """x clipped to [-limit, limit] (TF1 `clip_by_value`)."""
    lo = core_ops.convert_to_tensor(-limit, dtype=x.dtype)
    hi = core_ops.convert_to_tensor(limit, dtype=x.dtype)
    return math_ops.minimum(math_ops.maximum(x, lo), hi)

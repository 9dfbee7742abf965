"""`Variable`: state that lives in the session across `run` calls (TF1 `tf.Variable`)."""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import functools
import inspect
import json
import threading
from typing import Any, Iterator, Sequence

import jax.numpy as jnp
import numpy as np

from sluice._export import export
from sluice.framework import state_cells
from sluice.framework.ir import dtypes
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.default_session import get_default_session
from sluice.framework.ir.graph import GraphKeys, Operation, Tensor
from sluice.framework.ir.tensor_shape import TensorShape, as_shape
from sluice.framework.ops.array import fill_ops, gather_ops
from sluice.framework.ops.core import core_ops  # noqa: F401  (its op)
from sluice.framework.ops.state import initialized_value_ops  # noqa: F401  (its op)


def _host_values(variable: Any) -> Any:
    """How to read and write a Keras weight's value outside graphs, or None where its `value()`
    and `assign` build ops: a TF1 variable; or any graph being built that uses the weight (its
    own, or one holding its mirror: a layer's call makes the mirrors of its weights first)."""
    if variable._state_cell is None:
        return None
    entered = graph_lib.entered_default_graph()
    if entered is not None and (
        entered is variable.graph or variable._state_cell.mirror_in(entered) is not None
    ):
        return None
    return state_cells.host_access(variable)


class _AutocastState(threading.local):
    def __init__(self) -> None:
        self.dtype: dtypes.DType | None = None


_AUTOCAST = _AutocastState()


@contextlib.contextmanager
def autocast_scope(dtype: Any) -> Iterator[None]:
    """Inside, a Keras weight of a floating dtype that graph code reads (converts to a tensor)
    is read cast to `dtype` (Keras 3's `AutocastScope`: a layer of a mixed policy computes in
    float16 with float32 weights); `dtype` None: no cast. TF1 variables are never cast."""
    previous = _AUTOCAST.dtype
    _AUTOCAST.dtype = None if dtype is None else dtypes.as_dtype(dtype)
    try:
        yield
    finally:
        _AUTOCAST.dtype = previous


def autocast_dtype() -> dtypes.DType | None:
    """The dtype of the innermost `autocast_scope`, None outside any."""
    return _AUTOCAST.dtype


def _autocast_target(variable: Any) -> dtypes.DType | None:
    target = _AUTOCAST.dtype
    if (
        target is None
        or variable._state_cell is None
        or not variable._state_cell.autocast
        or not dtypes.is_floating(variable._dtype)
        or variable._dtype == target
    ):
        return None
    return target


class _ValueOrRead:
    """`variable.value`: TF1's method (`v.value()`, a read op); for a Keras weight used outside
    any graph, Keras 3's attribute (`v.value`, the current value as a `jax.Array`)."""

    def __init__(self, read: Any):
        self._read = read
        self.__doc__ = read.__doc__

    def __get__(self, variable: Any, owner: type) -> Any:
        if variable is None:
            return self
        access = _host_values(variable)
        if access is not None:
            return jnp.asarray(access.read(variable))
        return self._read.__get__(variable, owner)


@contextlib.contextmanager
def init_scope(g: graph_lib.Graph) -> Iterator[None]:
    """Leaves any cond branch or while frame and clears control dependencies, so that a
    variable created inside a loop body (a cell's weights) is created once, outside it."""
    saved = g.control_flow_context
    g.control_flow_context = None
    try:
        with g.control_dependencies(None):
            yield
    finally:
        g.control_flow_context = saved


class SaveSliceInfo:
    """Where a part of a partitioned variable sits in the full variable (TF1's
    `Variable.SaveSliceInfo`).

    Args:
      full_name: the full variable's name (its checkpoint key), e.g. "emb".
      full_shape: the full variable's shape, a list of ints.
      var_offset: the part's offset in it, one int per axis.
      var_shape: the part's shape.

    >>> info = SaveSliceInfo("emb", [10, 3], [4, 0], [3, 3])
    >>> info.spec
    '10 3 4,3:0,3'
    """

    def __init__(
        self,
        full_name: str | None = None,
        full_shape: Sequence[int] | None = None,
        var_offset: Sequence[int] | None = None,
        var_shape: Sequence[int] | None = None,
        save_slice_info_def: Any = None,
        import_scope: str | None = None,
    ):
        del import_scope
        if save_slice_info_def is not None:
            full_name = save_slice_info_def["full_name"]
            full_shape = save_slice_info_def["full_shape"]
            var_offset = save_slice_info_def["var_offset"]
            var_shape = save_slice_info_def["var_shape"]
        self.full_name = full_name
        self.full_shape = [int(d) for d in full_shape or ()]
        self.var_offset = [int(d) for d in var_offset or ()]
        self.var_shape = [int(d) for d in var_shape or ()]

    @property
    def spec(self) -> str:
        """TF1's slice spec: the full shape, then "offset,length" per axis joined by ":"."""
        full = " ".join(str(d) for d in self.full_shape) + " "
        return full + ":".join(f"{o},{s}" for o, s in zip(self.var_offset, self.var_shape))

    def to_proto(self, export_scope: str | None = None) -> dict:
        """The fields as a dict (TF1's SaveSliceInfoDef)."""
        del export_scope
        return {
            "full_name": self.full_name,
            "full_shape": list(self.full_shape),
            "var_offset": list(self.var_offset),
            "var_shape": list(self.var_shape),
        }

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, SaveSliceInfo) and self.to_proto() == other.to_proto()

    def __hash__(self) -> int:
        return hash(self.spec + (self.full_name or ""))

    def __repr__(self) -> str:
        return f"SaveSliceInfo({self.full_name!r}, {self.spec!r})"


@export("VariableSynchronization")
class VariableSynchronization(enum.Enum):
    """TF1's `tf.VariableSynchronization`: when a distributed variable's replicas agree. sluice
    keeps one value per variable; ON_READ makes `get_variable`'s `trainable=None` mean False."""

    AUTO = 0
    NONE = 1
    ON_WRITE = 2
    ON_READ = 3


@export("VariableAggregation")
class VariableAggregation(enum.Enum):
    """TF1's `tf.VariableAggregation`: how replicas' updates combine (kept for TF1 signatures;
    sluice keeps one value per variable)."""

    NONE = 0
    SUM = 1
    MEAN = 2
    ONLY_FIRST_REPLICA = 3
    ONLY_FIRST_TOWER = 3


class _CreatedThroughCreators(type):
    """`Variable(...)` goes through the creators of the enclosing `variable_creator_scope`s
    (TF1's VariableMetaclass): each is `creator(next_creator, **kwargs)`, the innermost first,
    the last `next_creator` building the variable. Subclasses (`ResourceVariable(...)`) are
    built directly, as in TF1."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if cls is not Variable or kwargs.get("variable_def") is not None:
            return super().__call__(*args, **kwargs)
        creators = graph_lib.get_default_graph().variable_creators()
        if not creators:
            return super().__call__(*args, **kwargs)
        bound = inspect.signature(Variable.__init__).bind(None, *args, **kwargs)
        named = {k: v for k, v in bound.arguments.items() if k not in ("self", "unused_tf_kwargs")}
        named.update(bound.arguments.get("unused_tf_kwargs", {}))
        named.setdefault("synchronization", VariableSynchronization.AUTO)  # as TF1 passes them
        named.setdefault("aggregation", VariableAggregation.NONE)

        def build(**given: Any) -> Any:
            return type.__call__(cls, **given)

        make = build
        for creator in creators:
            make = functools.partial(_call_creator, creator, make)
        return make(**named)


def _call_creator(creator: Any, next_creator: Any, **kwargs: Any) -> Any:
    return creator(next_creator, **kwargs)


@export("Variable")
class Variable(metaclass=_CreatedThroughCreators):
    """A mutable tensor kept by the session.

    Args:
      initial_value: a value or Tensor (or a callable returning one) giving the initial value.
      trainable: adds the variable to the TRAINABLE_VARIABLES collection (None: True, unless
        `synchronization` is TF1's ON_READ).
      collections: collections to add it to (default: GLOBAL_VARIABLES).
      validate_shape: when False, the shape may change on assignment.
      name: the variable's name; `v.name` is `name:0`.
      dtype: converts the initial value to this dtype.
      shape: a static shape, when it should differ from the initial value's.
      caching_device: the device of the variable's reads (`value()`, `read_value()`), as TF1's.

    >>> v = Variable(1.0, name="v")
    >>> inc = v.assign_add(2.0)
    >>> with sl.Session() as sess:
    ...     sess.run(v.initializer)
    ...     print(sess.run(inc), sess.run(v))
    3.0 3.0
    """

    _state_cell = None  # set on the mirrors of a StateCell (see `state_cells`)
    _save_slice_info = None  # a part of a PartitionedVariable: where it sits in the whole
    SaveSliceInfo = SaveSliceInfo
    _is_resource = False  # built with use_resource=True: TF1's ResourceVariable
    _caching_device = None  # TF1: where the variable's reads are placed

    def __new__(cls, *args: Any, **kwargs: Any) -> "Variable":
        # TF1: `Variable(..., use_resource=True)` is a ResourceVariable
        proto = kwargs.get("variable_def")
        if cls is Variable and (
            _use_resource(kwargs.get("use_resource")) or getattr(proto, "is_resource", False)
        ):
            cls = ResourceVariable
        return super().__new__(cls)

    def __init__(
        self,
        initial_value: Any = None,
        trainable: bool | None = None,
        collections: list[str] | None = None,
        validate_shape: bool = True,
        name: str | None = None,
        dtype: Any = None,
        shape: Any = None,
        constraint: Any = None,
        use_resource: bool | None = None,
        variable_def: "VariableDef | None" = None,
        import_scope: str | None = None,
        **unused_tf_kwargs: Any,
    ):
        if variable_def is not None:  # TF1: the variable of a VariableDef, in the default graph
            if initial_value is not None:
                raise ValueError("variable_def and initial_value are mutually exclusive.")
            self._init_from_graph(_ops_of_proto(variable_def, import_scope))
            return
        if initial_value is None:
            raise ValueError("A Variable needs an initial_value.")
        if trainable is None:  # TF1: an ON_READ-synchronized variable is not trainable
            sync = unused_tf_kwargs.get("synchronization")
            trainable = getattr(sync, "name", sync) != "ON_READ"
        g = graph_lib.get_default_graph()
        self._graph = g
        self._trainable = trainable
        self._constraint = constraint
        self._caching_device = unused_tf_kwargs.get("caching_device")
        self._is_resource = _use_resource(use_resource) or isinstance(self, ResourceVariable)
        with init_scope(g), g.name_scope(name or "Variable") as scope:
            with g.name_scope("Initializer"):
                value = initial_value() if callable(initial_value) else initial_value
                self._initial_value = core_ops.convert_to_tensor(value, dtype=dtype)
            self._dtype = self._initial_value.dtype
            static = self._initial_value.shape if shape is None else as_shape(shape)
            if validate_shape and not static.is_fully_defined():
                raise ValueError(
                    f"Variable {scope[:-1]!r}: the initial value has shape {static}, which is not "
                    "fully defined; pass validate_shape=False or a fully known shape."
                )
            self._shape = static if validate_shape else TensorShape(None)
            self._shared_name = scope[:-1]
            attrs = {"shared_name": self._shared_name, "dtype": self._dtype, "shape": self._shape}
            if self._is_resource:  # its node_def says VarHandleOp, not TF1's VariableV2
                attrs["use_resource"] = True
            self._handle = g.create_op("VarHandleOp", [], attrs, name=scope).outputs[0]
            self._initializer_op = self._assign_op(
                "AssignVariableOp", self._initial_value, "Assign", validate_shape
            ).op
            with g.name_scope("Read"):
                self._snapshot = self._read()
        for key in collections if collections is not None else [GraphKeys.GLOBAL_VARIABLES]:
            g.add_to_collection(key, self)
        if trainable and GraphKeys.TRAINABLE_VARIABLES not in (collections or []):
            g.add_to_collection(GraphKeys.TRAINABLE_VARIABLES, self)

    @classmethod
    def from_graph_ops(
        cls,
        handle: Tensor,
        initializer: Operation,
        initial_value: Tensor,
        snapshot: Tensor,
        trainable: bool,
    ) -> "Variable":
        """A Variable over ops already in a graph (an imported meta graph), in no collection.

        Raises:
          ValueError: `handle` is not a VarHandleOp's output.
        """
        if handle.op.type != "VarHandleOp":
            raise ValueError(
                f"A Variable's handle is a VarHandleOp's output, got {handle.name} "
                f"({handle.op.type})."
            )
        # global_variables_initializer() runs the initializer; it must assign this variable
        if initializer.type != "AssignVariableOp" or initializer.inputs[0] is not handle:
            raise ValueError(
                f"The initializer of {handle.op.name} must be an AssignVariableOp "
                f"of its handle, got {initializer.name} ({initializer.type})."
            )
        resource = bool(handle.op.attrs.get("use_resource", False))
        target = ResourceVariable if resource and cls is Variable else cls
        v = target.__new__(target)
        v._init_from_graph((handle, initializer, initial_value, snapshot, trainable))
        return v

    def _init_from_graph(self, ops: tuple) -> None:
        handle, initializer, initial_value, snapshot, trainable = ops
        self._graph = handle.graph
        self._trainable = bool(trainable)
        self._constraint = None  # a Python function: not part of a saved graph (as in TF1)
        self._is_resource = bool(handle.op.attrs.get("use_resource", False))
        self._initial_value = initial_value
        self._dtype = handle.op.get_attr("dtype")
        self._shape = handle.op.get_attr("shape")
        self._shared_name = handle.op.get_attr("shared_name")
        self._handle = handle
        self._initializer_op = initializer
        self._snapshot = snapshot

    # -- TF1's VariableDef ---------------------------------------------------------------------
    def to_proto(self, export_scope: str | None = None) -> "VariableDef | None":
        """The variable's VariableDef: the names of its ops in the graph, without the leading
        `export_scope/` (None when the variable is outside `export_scope`, as TF1)."""
        names = [
            self._handle.name,
            self._initial_value.name,
            self._initializer_op.name,
            self._snapshot.name,
        ]
        if export_scope:
            prefix = export_scope.rstrip("/") + "/"
            if not self._handle.name.startswith(prefix):
                return None
            names = [n[len(prefix) :] if n.startswith(prefix) else n for n in names]
        return VariableDef(*names, is_resource=self._is_resource, trainable=self._trainable)

    @classmethod
    def from_proto(cls, variable_def: "VariableDef", import_scope: str | None = None) -> "Variable":
        """The Variable over the ops `variable_def` names in the default graph (under
        `import_scope/`), in no collection: TF1's `Variable.from_proto`.

        Raises:
          KeyError: the graph has no op or tensor of a name the VariableDef gives.
        """
        handle, initializer, initial_value, snapshot, trainable = _ops_of_proto(
            variable_def, import_scope
        )
        return cls.from_graph_ops(handle, initializer, initial_value, snapshot, trainable)

    # -- identity ------------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._handle.name

    @property
    def op(self) -> Operation:
        return self._handle.op

    @property
    def handle(self) -> Tensor:
        return self._handle

    @property
    def graph(self) -> graph_lib.Graph:
        return self._graph

    @property
    def dtype(self):
        return self._dtype

    @property
    def shape(self) -> TensorShape:
        return self._shape

    def get_shape(self) -> TensorShape:
        return self._shape

    @property
    def trainable(self) -> bool:
        return self._trainable

    @property
    def device(self) -> str:
        return self._handle.op.device

    @property
    def initializer(self) -> Operation:
        return self._initializer_op

    @property
    def initial_value(self) -> Tensor:
        return self._initial_value

    @property
    def constraint(self) -> Any:
        return self._constraint

    def graph_variable(self, graph: graph_lib.Graph | None = None) -> "Variable":
        """This variable as `graph` (default: the default graph) sees it: itself in its own
        graph; for a Keras weight used from another graph, its mirror there (see
        `sluice.framework.state_cells`)."""
        return for_graph(self, graph)

    def _here(self) -> "Variable":
        """The variable to build ops on: for a Keras weight used inside `with g.as_default()`
        of another graph `g`, its mirror there; else itself (ops on it go to its graph)."""
        if self._state_cell is None:
            return self
        entered = graph_lib.entered_default_graph()
        return self if entered is None else for_graph(self, entered)

    # -- reads ---------------------------------------------------------------------------------
    def _read(self) -> Tensor:
        if self._state_cell is not None and self._here() is not self:
            return self._here()._read()
        attrs = {"dtype": self._dtype, "shape": self._shape}
        if self._caching_device is None:
            return self._graph.create_op(
                "ReadVariableOp", [self._handle], attrs, name="ReadVariableOp"
            ).outputs[0]
        with self._graph.device(self._caching_device):
            return self._graph.create_op(
                "ReadVariableOp", [self._handle], attrs, name="ReadVariableOp"
            ).outputs[0]

    @_ValueOrRead
    def value(self) -> Tensor:
        """A read of the current value, ordered after the current control dependencies.

        For a Keras weight outside any graph (Keras 3's `variable.value`), an attribute: the
        current value as a `jax.Array`."""
        return self._read()

    # -- Keras 3's values outside graphs -------------------------------------------------------
    @property
    def path(self) -> str:
        """Keras 3's name of the weight: its state cell's path ("dense/kernel")."""
        cell = state_cells.cell_of(self)
        return cell.path if cell is not None else self._shared_name

    def numpy(self) -> np.ndarray:
        """The current value of a Keras weight, as a NumPy array the caller may change."""
        access = state_cells.host_access(self)
        if access is None:
            raise TypeError(
                f"{self.name} is a TF1 variable: its value belongs to a session; use "
                "sess.run(variable) (Keras weights give their value with numpy())."
            )
        return np.array(access.read(self))

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        value = self.numpy()
        return value if dtype is None else value.astype(dtype)

    def _host_write(self, value: Any, how: str) -> Any:
        """Writes a Keras weight outside any graph (Keras 3's `assign` of a value); returns
        NotImplemented when `assign` should build an op instead (TF1, or a tensor value)."""
        if isinstance(value, (Tensor, Variable)):
            return NotImplemented
        access = _host_values(self)
        if access is None:
            return NotImplemented
        value = np.asarray(value, dtype=self._dtype)
        if how != "assign":
            current = np.asarray(access.read(self))
            value = current + value if how == "assign_add" else current - value
        if not self._shape.is_compatible_with(value.shape):
            raise ValueError(
                f"Cannot assign a value of shape {value.shape} to {self.path} of shape "
                f"{self._shape}."
            )
        access.write(self, value)
        return self

    def read_value(self) -> Tensor:
        return self._read()

    def sparse_read(self, indices: Any, name: str | None = None) -> Tensor:
        """The rows of the variable at `indices` (TF1's `ResourceVariable.sparse_read`): a
        gather of a read, whose gradient is an IndexedSlices."""
        with graph_lib.name_scope(name, "Gather", [self, indices]):
            return gather_ops.gather(self._read(), indices)

    def _ref(self) -> Tensor:
        """TF1's reference tensor of the variable. sluice has no reference tensors: this is the
        read made when the variable was built (what `sess.run` of the variable fetches)."""
        return self._snapshot

    def initialized_value(self) -> Tensor:
        """The value once the variable has one, else its initial value, without assigning it
        (TF 1.15): `sl.Variable(w.initialized_value() * 2)` initializes in any order, and a
        trained `w` is not reset by evaluating it."""
        with init_scope(self._graph):
            attrs = {"dtype": self._dtype, "shape": self._shape}
            return self._graph.create_op(
                "ReadVariableOrInitialValue",
                [self._handle, self._initial_value],
                attrs,
                name="initialized_value",
            ).outputs[0]

    def _as_tensor(self, dtype: Any = None) -> Tensor:
        target = _autocast_target(self)
        if target is not None and (dtype is None or dtypes.as_dtype(dtype) == target):
            return fill_ops.cast(self._read(), target)
        if dtype is not None and dtypes.as_dtype(dtype) != self._dtype:
            raise TypeError(
                f"Variable {self.name} has dtype {self._dtype.name}, but "
                f"{dtypes.as_dtype(dtype).name} was requested."
            )
        return self._read()

    @property
    def snapshot(self) -> Tensor:
        """The read made when the variable was built: what `sess.run(v)` fetches."""
        return self._snapshot

    def _as_graph_element(self) -> Tensor:
        return self._snapshot

    def _set_save_slice_info(self, save_slice_info: SaveSliceInfo) -> None:
        """Marks this variable as a part of a partitioned one (TF1's private setter)."""
        self._save_slice_info = save_slice_info

    def _get_save_slice_info(self) -> SaveSliceInfo | None:
        return self._save_slice_info

    # -- writes --------------------------------------------------------------------------------
    def _assign_op(
        self, op_type: str, value: Any, name: str, validate_shape: bool = True
    ) -> Tensor:
        if self._state_cell is not None and self._here() is not self:
            return self._here()._assign_op(op_type, value, name, validate_shape)
        value = core_ops.convert_to_tensor(value, dtype=self._dtype)
        attrs = {"dtype": self._dtype, "shape": self._shape, "validate_shape": validate_shape}
        return self._graph.create_op(op_type, [self._handle, value], attrs, name=name).outputs[0]

    def assign(
        self,
        value: Any,
        use_locking: bool = False,
        name: str | None = None,
        read_value: bool = True,
    ):
        """Writes `value`; returns the new value (a Tensor), or the op when read_value=False."""
        written = self._host_write(value, "assign")
        if written is not NotImplemented:
            return written
        out = self._assign_op("AssignVariableOp", value, name or "Assign")
        return out if read_value else out.op

    def assign_add(
        self,
        delta: Any,
        use_locking: bool = False,
        name: str | None = None,
        read_value: bool = True,
    ):
        written = self._host_write(delta, "assign_add")
        if written is not NotImplemented:
            return written
        out = self._assign_op("AssignAddVariableOp", delta, name or "AssignAdd")
        return out if read_value else out.op

    def assign_sub(
        self,
        delta: Any,
        use_locking: bool = False,
        name: str | None = None,
        read_value: bool = True,
    ):
        written = self._host_write(delta, "assign_sub")
        if written is not NotImplemented:
            return written
        out = self._assign_op("AssignSubVariableOp", delta, name or "AssignSub")
        return out if read_value else out.op

    def is_initialized(self) -> Tensor:
        return self._graph.create_op(
            "VarIsInitializedOp", [self._handle], name="IsInitialized"
        ).outputs[0]

    # -- session helpers -----------------------------------------------------------------------
    def eval(self, session: Any = None) -> Any:
        return self._snapshot.eval(session=session)

    def load(self, value: Any, session: Any = None) -> None:

        session = session or get_default_session()
        if session is None:
            raise ValueError("Variable.load() needs a session.")
        session._load_variable(self, value)

    def __repr__(self) -> str:
        return f"<sl.Variable '{self.name}' shape={self._shape} dtype={self._dtype.name}>"

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other: Any) -> bool:
        return self is other

    def __bool__(self) -> bool:
        raise TypeError(f"Using a sl.Variable ({self.name}) as a Python bool is not allowed.")


# TF1's process-wide default of `use_resource` (`enable_resource_variables`): TF1's API, kept as
# TF1 keeps it; a variable's own `use_resource=` and its variable_scope's come first.
_default_use_resource = [False]


def _use_resource(use_resource: bool | None) -> bool:
    return _default_use_resource[0] if use_resource is None else bool(use_resource)


@export("variable_creator_scope")
@contextlib.contextmanager
def variable_creator_scope(variable_creator: Any) -> Iterator[None]:
    """`sl.Variable(...)` (and `get_variable`) in the block calls
    `variable_creator(next_creator, **kwargs)` instead of building the variable (TF1's
    `tf.variable_creator_scope`): the creator may change the keyword arguments (`name`,
    `initial_value`, `trainable`, ..., `synchronization`, `aggregation`) and must call
    `next_creator(**kwargs)` for the variable. Nested scopes call the innermost creator first.

    Raises:
      RuntimeError: (on leaving) the scopes were not left in the order entered.

    >>> names = []
    >>> def creator(next_creator, **kwargs):
    ...     names.append(kwargs["name"])
    ...     return next_creator(**kwargs)
    >>> with sl.variable_creator_scope(creator):
    ...     v = sl.Variable(1.0, name="w")
    >>> names
    ['w']
    """
    with graph_lib.get_default_graph().variable_creator_scope(variable_creator):
        yield


@export("enable_resource_variables")
def enable_resource_variables() -> None:
    """Variables built without `use_resource=` are ResourceVariables from now on (TF1)."""
    _default_use_resource[0] = True


@export("disable_resource_variables")
def disable_resource_variables() -> None:
    """Variables built without `use_resource=` are TF1's reference variables again."""
    _default_use_resource[0] = False


@export("resource_variables_enabled")
def resource_variables_enabled() -> bool:
    """Whether variables built without `use_resource=` are ResourceVariables."""
    return _default_use_resource[0]


@export("ResourceVariable")
class ResourceVariable(Variable):
    """TF1's `ResourceVariable`: a Variable built with `use_resource=True` (by `Variable`,
    `get_variable` or a `variable_scope(use_resource=True)`) is an instance.

    Every sluice variable runs as a resource (reads are ops ordered by control dependencies);
    the class says what TF1 code asked for: `isinstance(v, sl.ResourceVariable)`, and the
    `node_def.op` device functions read (`VarHandleOp` here, TF1's `VariableV2` otherwise).

    >>> v = sl.Variable(1.0, use_resource=True)
    >>> isinstance(v, sl.ResourceVariable), v.op.node_def.op
    (True, 'VarHandleOp')
    >>> isinstance(sl.Variable(1.0), sl.ResourceVariable)
    False
    """

    def __init__(self, *args: Any, **kwargs: Any):
        if kwargs.get("variable_def") is None:
            kwargs["use_resource"] = True
        super().__init__(*args, **kwargs)


@export("VariableDef")
@dataclasses.dataclass(frozen=True)
class VariableDef:
    """TF1's VariableDef: the graph names of a variable's ops (`Variable.to_proto`,
    `Variable.from_proto`). Serialised as JSON, as sluice's GraphDef is."""

    variable_name: str
    initial_value_name: str
    initializer_name: str
    snapshot_name: str
    is_resource: bool = False
    trainable: bool = True

    def SerializeToString(self) -> bytes:  # noqa: N802  (TF1's protocol buffer spelling)
        return json.dumps(dataclasses.asdict(self), sort_keys=True).encode("utf-8")

    @classmethod
    def FromString(cls, data: bytes | str) -> "VariableDef":  # noqa: N802
        fields = json.loads(data)
        if not isinstance(fields, dict) or set(fields) - {f.name for f in dataclasses.fields(cls)}:
            raise ValueError(f"Not a VariableDef: {str(data)[:200]!r}.")
        return cls(**fields)


def _ops_of_proto(variable_def: VariableDef, import_scope: str | None) -> tuple:
    if not isinstance(variable_def, VariableDef):
        raise TypeError(f"Expected a VariableDef, got {variable_def!r}.")
    g = graph_lib.get_default_graph()
    prefix = import_scope.rstrip("/") + "/" if import_scope else ""

    def lookup(name: str, find: Any) -> Any:
        try:
            return find(prefix + name)
        except (KeyError, ValueError) as err:
            raise KeyError(
                f"VariableDef of {variable_def.variable_name!r}: the default graph has no "
                f"{prefix + name!r} ({err})."
            ) from None

    handle = lookup(variable_def.variable_name, g.get_tensor_by_name)
    initializer = lookup(variable_def.initializer_name, g.get_operation_by_name)
    initial_value = lookup(variable_def.initial_value_name, g.get_tensor_by_name)
    snapshot = lookup(variable_def.snapshot_name, g.get_tensor_by_name)
    return handle, initializer, initial_value, snapshot, variable_def.trainable


_FORWARDED_OPERATORS = (
    "__add__ __radd__ __sub__ __rsub__ __mul__ __rmul__ __truediv__ __rtruediv__ __floordiv__ "
    "__rfloordiv__ __mod__ __rmod__ __pow__ __rpow__ __matmul__ __rmatmul__ __neg__ __abs__ "
    "__lt__ __le__ __gt__ __ge__ __and__ __rand__ __or__ __ror__ __xor__ __rxor__ __invert__ "
    "__getitem__"
).split()


def mirror(cell: state_cells.StateCell, g: graph_lib.Graph) -> Variable:
    """The graph Variable standing for `cell` in `g`, created on first use at the root of `g`
    (outside any loop, cond or control dependency), named by the cell's path."""
    existing = cell.mirror_in(g)
    if existing is not None:
        return existing
    with g.as_default(), init_scope(g), g.name_scope(None):
        variable = Variable(
            cell.initial_value, trainable=cell.trainable, name=cell.path, dtype=cell.dtype
        )
    return state_cells.bind(variable, cell)


def for_graph(variable: Variable, g: graph_lib.Graph | None = None) -> Variable:
    """`variable` itself in its own graph; in another graph (default: the default graph), the
    mirror of its cell there. A plain (TF1) variable used from another graph is an error."""
    g = g if g is not None else graph_lib.get_default_graph()
    if g is variable.graph:
        return variable
    cell = state_cells.cell_of(variable)
    if cell is None:
        raise ValueError(
            f"Variable {variable.name} belongs to another graph than the one being built; a "
            "TF1 variable is used only in its own graph (Keras weights may be used in any)."
        )
    return mirror(cell, g)


def _forward(operator: str):
    def method(self, *args):
        return getattr(Tensor, operator)(self._read(), *args)

    method.__name__ = operator
    return method


for _operator in _FORWARDED_OPERATORS:
    setattr(Variable, _operator, _forward(_operator))


@export("global_variables")
def global_variables(scope: str | None = None) -> list[Variable]:
    return graph_lib.get_collection(GraphKeys.GLOBAL_VARIABLES, scope)


@export("trainable_variables")
def trainable_variables(scope: str | None = None) -> list[Variable]:
    return graph_lib.get_collection(GraphKeys.TRAINABLE_VARIABLES, scope)


@export("local_variables")
def local_variables(scope: str | None = None) -> list[Variable]:
    return graph_lib.get_collection(GraphKeys.LOCAL_VARIABLES, scope)


@export("variables_initializer", "initializers.variables")
def variables_initializer(var_list: list[Variable], name: str = "init") -> Operation:
    return core_ops.group(*[v.initializer for v in var_list], name=name)


@export("global_variables_initializer", "initializers.global_variables")
def global_variables_initializer() -> Operation:
    """One op that runs every global variable's initializer."""
    return variables_initializer(global_variables(), name="init")


@export("local_variables_initializer", "initializers.local_variables")
def local_variables_initializer() -> Operation:
    return variables_initializer(local_variables(), name="init_local")


@export("is_variable_initialized")
def is_variable_initialized(variable: Variable) -> Tensor:
    return variable.is_initialized()

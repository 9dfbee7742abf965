"""The graph IR: `Graph`, `Operation`, `Tensor`, name scopes, control dependencies, collections.

Every op is created through `Graph.create_op`, which looks the op type up in the registry, routes
inputs through the current control-flow context (cond branch or while frame), infers the dtype and
shape of every output, and raises at construction when they do not fit.
"""

from __future__ import annotations

import contextlib
import re
import threading
from typing import Any, Callable, Iterable, Iterator, Protocol

import numpy as np

from sluice._export import export
from sluice.framework.ir import concrete, dtypes, errors, registry, string_values
from sluice.framework.ir.default_session import get_default_session
from sluice.framework.ir.device_spec import DeviceScope, DeviceSpec, as_spec, canonical_name
from sluice.framework.ir.tensor_shape import TensorShape, as_shape
from sluice.framework.ir.x64 import with_x64

_REPR_MAX_ELEMENTS = 1000  # a concrete tensor's repr shows values up to this many elements
_VALID_NAME = re.compile(r"^[A-Za-z0-9.][A-Za-z0-9_.\-/>]*$")


@export("GraphKeys")
class GraphKeys:
    GLOBAL_VARIABLES = "variables"
    TRAINABLE_VARIABLES = "trainable_variables"
    LOCAL_VARIABLES = "local_variables"
    METRIC_VARIABLES = "metric_variables"
    MODEL_VARIABLES = "model_variables"
    MOVING_AVERAGE_VARIABLES = "moving_average_variables"
    UPDATE_OPS = "update_ops"
    TRAIN_OP = "train_op"
    GLOBAL_STEP = "global_step"
    LOSSES = "losses"
    REGULARIZATION_LOSSES = "regularization_losses"
    SAVERS = "savers"
    SUMMARIES = "summaries"
    INIT_OP = "init_op"  # the ops a Scaffold/Supervisor picks or builds once per graph
    LOCAL_INIT_OP = "local_init_op"
    READY_OP = "ready_op"
    READY_FOR_LOCAL_INIT_OP = "ready_for_local_init_op"
    SUMMARY_OP = "summary_op"
    WHILE_CONTEXT = "while_context"
    COND_CONTEXT = "cond_context"
    # TF1: variables to concatenate (its embedding columns' shards); sluice only keeps the list
    CONCATENATED_VARIABLES = "concatenated_variables"


class GraphElementConvertible(Protocol):
    """TF1's protocol for objects that stand for a graph element (a Variable stands for its
    snapshot): `Graph.as_graph_element`, feeds and fetches call `obj._as_graph_element()`."""

    def _as_graph_element(self) -> Tensor | Operation:
        """The Tensor or Operation this object stands for."""
        ...


@export("Tensor")
class Tensor:
    """One output of an Operation: a symbolic value with a static dtype and (partial) shape."""

    __slots__ = ("_op", "_value_index", "_dtype", "_static_shape", "__weakref__")

    # Tensors are hashed and compared by identity, as in TF1 (`==` is not elementwise).
    __array_priority__ = 100

    def __init__(self, op: "Operation", value_index: int, dtype: np.dtype, shape: TensorShape):
        self._op = op
        self._value_index = value_index
        self._dtype = dtypes.as_dtype(dtype)
        self._static_shape = shape

    @property
    def _shape(self) -> TensorShape:
        return self._static_shape

    @_shape.setter
    def _shape(self, shape: TensorShape) -> None:
        # builders refine shapes in place (`t._shape = ...`): a session's plan may depend on them
        if shape != self._static_shape:
            self._static_shape = shape
            self._op._graph._note_mutation(self._op)

    @property
    def op(self) -> "Operation":
        return self._op

    @property
    def value_index(self) -> int:
        return self._value_index

    @property
    def graph(self) -> "Graph":
        return self._op.graph

    @property
    def name(self) -> str:
        return f"{self._op.name}:{self._value_index}"

    @property
    def dtype(self) -> dtypes.DType:
        return self._dtype

    @property
    def shape(self) -> TensorShape:
        return self._static_shape

    @property
    def device(self) -> str:
        return self._op.device

    def get_shape(self) -> TensorShape:
        return self._shape

    def set_static_shape(self, shape: Any) -> None:
        """Replaces the static shape, even with a less specific one. For builders only: a loop
        variable's shape invariant may relax what its initial value says. Users call
        `set_shape`, which refines and checks."""
        self._shape = as_shape(shape)

    def set_shape(self, shape: Any) -> None:
        """Refines the static shape; raises if `shape` contradicts what is known."""
        try:
            self._shape = self._shape.merge_with(as_shape(shape))
        except ValueError:
            raise ValueError(
                f"Tensor {self.name!r} has shape {self._shape}, which is not compatible with "
                f"the requested shape {as_shape(shape)}."
            ) from None

    def consumers(self) -> list["Operation"]:
        return [op for op in self.graph.get_operations() if self in op.inputs]

    def eval(self, feed_dict: dict | None = None, session: Any = None) -> Any:
        session = session or get_default_session()
        if session is None:
            raise ValueError("Tensor.eval() needs a session: pass one or use `with Session():`.")
        return session.run(self, feed_dict=feed_dict)

    # -- values of concrete tensors (`ir.concrete`: every input is a constant) -------------------
    def numpy(self) -> np.ndarray:
        """The value of a concrete tensor, as a NumPy array the caller may change (a NumPy
        scalar for a 0-d tensor, as TensorFlow's `numpy()` gives).

        Raises:
          TypeError: the value depends on a run (a feed, a variable, a random op); run it with
            `Session.run`.
        """
        value = np.array(concrete.concrete_value(self))
        return value[()] if value.ndim == 0 else value

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        value = np.asarray(concrete.concrete_value(self), dtype=dtype)
        if copy is False:
            view = value.view()
            view.flags.writeable = False  # the kept value itself: read-only
            return view
        return np.array(value)

    def __float__(self) -> float:
        return float(self._scalar("float"))

    def __int__(self) -> int:
        return int(self._scalar("int"))

    def __index__(self) -> int:
        if not (np.issubdtype(self._dtype, np.integer) or self._dtype == np.bool_):
            raise TypeError(
                f"Tensor {self.name} of dtype {self._dtype.name} cannot be used as an index; "
                "only integer tensors can."
            )
        return int(self._scalar("index"))

    def _scalar(self, what: str) -> Any:
        value = np.asarray(concrete.concrete_value(self))
        if value.size != 1:
            raise TypeError(
                f"Only a tensor of one element converts to {what}; {self.name} has shape "
                f"{self._shape}."
            )
        return value.reshape(())[()]

    def __repr__(self) -> str:
        text = f"<sl.Tensor '{self.name}' shape={self._shape} dtype={self._dtype.name}"
        n = self._shape.num_elements()
        if n is not None and n <= _REPR_MAX_ELEMENTS and concrete.is_concrete(self):
            try:
                text += f", numpy={np.asarray(concrete.concrete_value(self))!r}"
            except (errors.OpError, ValueError, TypeError, IndexError, ZeroDivisionError):
                pass  # a kernel that fails on these values: the repr stays symbolic
        return text + ">"

    __str__ = __repr__

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other: Any) -> bool:
        return self is other

    def __ne__(self, other: Any) -> bool:
        return self is not other

    def __bool__(self) -> bool:
        raise TypeError(
            f"Using a sl.Tensor ({self.name}) as a Python bool is not allowed: the value is only "
            "known when the graph runs. Use sl.cond / sl.while_loop for data-dependent control."
        )

    def __iter__(self) -> Iterator["Tensor"]:
        shape = self._shape
        if shape.rank is None or shape.rank == 0 or shape[0] is None:
            raise TypeError(
                f"Tensor {self.name} with shape {shape} is not iterable: its first dimension must "
                "be statically known."
            )
        for i in range(shape[0]):
            yield self[i]

    def __len__(self) -> int:
        if self._shape.rank is None or self._shape.rank == 0 or self._shape[0] is None:
            raise TypeError(f"len() of Tensor {self.name} with shape {self._shape} is unknown.")
        return self._shape[0]

    @classmethod
    def override_operator(cls, operator: str, func: Any) -> None:
        """Installs a Python operator (`__add__`, ...); op modules call this when imported."""
        setattr(cls, operator, func)


@export("Operation")
class Operation:
    """A node of the graph: an op type, inputs, control inputs, attributes and outputs."""

    # Set by `Graph.create_op` only when a device scope or `colocate_with` is active.
    _device = ""  # the requested device, a canonical name ("" = none)
    _colocation: tuple[str, ...] = ()  # "loc:@name" groups; () = its own group
    # Set by `Graph.create_op` inside `gradient_override_map`: the name of the gradient that
    # replaces the op type's (TF1's "_gradient_op_type" attr, kept apart from the kernel's attrs).
    _gradient_op_type: str | None = None
    # Set by `Graph.create_op` inside `Graph.original_op(op)`: the forward op whose gradient
    # built this one (TF1's `_original_op`).
    _original_op: "Operation | None" = None
    # Set by `_set_attr` for "_"-prefixed names: annotations no kernel takes.
    _annotations: dict[str, Any] | None = None

    def __init__(
        self,
        graph: "Graph",
        op_def: registry.OpDef,
        name: str,
        inputs: list[Tensor],
        control_inputs: list["Operation"],
        attrs: dict[str, Any],
    ):
        self._graph = graph
        self._op_def = op_def
        self._name = name
        self._inputs = list(inputs)
        self._control_inputs = list(control_inputs)
        self._attrs = dict(attrs)
        self._outputs: list[Tensor] = []
        self._id = graph._next_id()
        self._control_flow_context = graph.control_flow_context

    @property
    def name(self) -> str:
        return self._name

    @property
    def id(self) -> int:
        """The op's creation number in its graph: ops sort by it in the order they were built."""
        return self._id

    @property
    def type(self) -> str:
        return self._op_def.name

    @property
    def control_flow_context(self) -> Any:
        """The cond branch or while frame the op was built in (None: the top level). An Enter
        belongs to the frame it enters, though it is built in the outer context."""
        return self._control_flow_context

    @control_flow_context.setter
    def control_flow_context(self, ctx: Any) -> None:
        self._control_flow_context = ctx

    @property
    def op_def(self) -> registry.OpDef:
        return self._op_def

    @property
    def graph(self) -> "Graph":
        return self._graph

    @property
    def inputs(self) -> tuple[Tensor, ...]:
        return tuple(self._inputs)

    @property
    def control_inputs(self) -> list["Operation"]:
        """The ops this op waits for, a new list each time (as TF1's)."""
        return list(self._control_inputs)

    @property
    def outputs(self) -> tuple[Tensor, ...]:
        return tuple(self._outputs)

    @property
    def attrs(self) -> dict[str, Any]:
        return dict(self._attrs)

    @property
    def device(self) -> str:
        """The requested device, in canonical form (`/device:GPU:0` for `/gpu:0`; "" if none):
        what the device scopes asked for, not where the op runs."""
        return self._device

    def _set_device(self, device: DeviceSpec | str | None) -> None:
        self._device = canonical_name(device)
        self._graph._note_mutation(self)

    # Registered by `sluice.framework.graph_def` when imported (the IR stage cannot import it).
    _node_def_builder: Callable[["Operation"], Any] | None = None

    @staticmethod
    def register_node_def_builder(builder: Callable[["Operation"], Any]) -> None:
        """Sets the function `node_def` calls (`sluice.framework.graph_def` registers it)."""
        Operation._node_def_builder = builder

    @property
    def node_def(self) -> Any:
        """The op as TF1's NodeDef (`name`, `op`, `input`, `device`, `attr`): what a TF1 device
        function reads (`node_def.op in PS_OPS`). A variable built without `use_resource`
        reports TF1's `VariableV2` there (its `type` stays `VarHandleOp`)."""
        if Operation._node_def_builder is None:
            raise RuntimeError("node_def needs `import sluice.framework.graph_def` first.")
        return Operation._node_def_builder(self)

    def colocation_groups(self) -> list[str]:
        """The colocation groups, `"loc:@<op name>"` (TF1): the ops of one group share a device.
        An op built in no `colocate_with` is the root of its own group."""
        return list(self._colocation) or [f"loc:@{self._name}"]

    def get_attr(self, name: str) -> Any:
        if name == "_gradient_op_type" and self._gradient_op_type is not None:
            return self._gradient_op_type
        if self._annotations and name in self._annotations:
            return self._annotations[name]
        try:
            return self._attrs[name]
        except KeyError:
            raise ValueError(
                f"Operation {self._name!r} ({self.type}) has no attr {name!r}."
            ) from None

    def run(self, feed_dict: dict | None = None, session: Any = None) -> None:
        session = session or get_default_session()
        if session is None:
            raise ValueError("Operation.run() needs a session: pass one or use `with Session():`.")
        session.run(self, feed_dict=feed_dict)

    # -- changes after construction: only control-flow builders make them ----------------------
    # A loop's back edge (a Merge's second input, set once its NextIteration exists), a pivot's
    # control edge, an outside control edge routed through a loop constant. A change to an op
    # that a session may already have planned bumps `Graph.mutation_version`.
    def add_control_input(self, op: "Operation") -> None:
        if op.graph is not self._graph:
            raise ValueError(
                f"Control input {op.name!r} is from a different graph than {self._name!r}."
            )
        if op not in self._control_inputs:
            self._control_inputs.append(op)
            self._graph._note_mutation(self)

    def remove_control_input(self, op: "Operation") -> None:
        self._control_inputs.remove(op)
        self._graph._note_mutation(self)

    def update_input(self, index: int, tensor: Tensor) -> None:
        """Replaces one data input: a loop Merge's back edge, connected once its NextIteration
        exists (the loop builders, `while_loop` and the backward loops of `gradients`)."""
        if tensor.graph is not self._graph:
            raise ValueError("Cannot connect tensors from different graphs.")
        self._inputs[index] = tensor
        self._graph._note_mutation(self)

    # TF1's private spelling, which TF1's own hand-wired loops call (`merge.op._update_input`)
    _update_input = update_input

    def _set_attr(self, name: str, attr_value: Any) -> None:
        """TF1's spelling, which takes an `AttrValue` protocol buffer (or a plain value). A name
        starting with "_" is an annotation for graph rewrites (TF1's `_lower_using_switch_merge`
        and the like), kept apart from the attrs the kernel takes."""
        which = attr_value.WhichOneof("value") if hasattr(attr_value, "WhichOneof") else None
        value = getattr(attr_value, which) if which else attr_value
        if name.startswith("_"):
            self._annotations = {**(self._annotations or {}), name: value}
        else:
            self.set_attr(name, value)

    def set_attr(self, name: str, value: Any) -> None:
        """Sets an attr learned after the op was built: a TensorArray's element shape, which
        its first write tells (`sluice.framework.control_flow.tensor_array`)."""
        self._attrs[name] = value
        self._graph._note_mutation(self)

    def __repr__(self) -> str:
        return f"<sl.Operation '{self._name}' type={self.type}>"

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other: Any) -> bool:
        return self is other


class _BuildState(threading.local):
    """What the `with` blocks of one thread have entered in a graph: name scope, control
    dependencies, control-flow context, devices, colocation. Per thread, as in TF1, so ops and
    variables another thread builds meanwhile do not take this thread's scopes."""

    def __init__(self) -> None:
        self.name_stack = ""
        self.control_dependencies_stack: list[list[Operation] | None] = []
        self.control_flow_context: Any = None
        self.device_stack: list[DeviceScope] = []
        self.colocation_stack: list[Operation] = []
        self.original_op: Operation | None = None
        self.variable_creator_stack: list[tuple[int, Any]] = []


def _per_thread(field: str) -> property:
    def get(graph: "Graph") -> Any:
        return getattr(graph._building, field)

    def set_(graph: "Graph", value: Any) -> None:
        setattr(graph._building, field, value)

    return property(get, set_)


@export("Graph")
class Graph:
    """A dataflow graph: ops, a name scope stack, control dependencies and collections.

    >>> g = Graph()
    >>> with g.as_default():
    ...     pass
    """

    _name_stack = _per_thread("name_stack")
    _control_dependencies_stack = _per_thread("control_dependencies_stack")
    _control_flow_context = _per_thread("control_flow_context")
    _device_stack = _per_thread("device_stack")
    _colocation_stack = _per_thread("colocation_stack")
    _original_op_now = _per_thread("original_op")
    # TF1's name: (priority, creator) pairs, innermost last (TF1 code saves and restores it)
    _variable_creator_stack = _per_thread("variable_creator_stack")

    def __init__(self):
        self._ops_by_name: dict[str, Operation] = {}
        self._ops: list[Operation] = []
        self._names_in_use: dict[str, int] = {}
        self._collections: dict[str, list] = {}
        self._building = _BuildState()
        self._last_id = 0
        self._finalized = False
        self._seed: int | None = None
        self._version = 0  # bumped by every new op
        # Sessions key their plans on this: bumped only when an op that a plan may hold changes
        # (see `_note_mutation`), so adding ops never invalidates what already runs.
        self._mutation_version = 0
        self._last_planned_id = 0  # ops up to this id may be in some session's plan
        self._gradient_override_map: dict[str, str] = {}  # op type -> gradient name
        # What other layers keep per graph (a Keras model's session, the state cells mirrored
        # here, layer call records), by key: held by the graph, so it is freed with the graph.
        # (A weak map keyed by the graph would keep the graph alive whenever a value refers to
        # it, as a session or a tensor does.)
        self.attachments: dict[str, Any] = {}
        self._unfetchable: set[Operation] = set()  # `prevent_fetching`
        self._unfeedable: set[Tensor] = set()  # `prevent_feeding`

    # -- identity and defaults -----------------------------------------------------------------
    @property
    def seed(self) -> int | None:
        """The graph-level random seed (TF1's `tf.set_random_seed`)."""
        return self._seed

    @seed.setter
    def seed(self, value: int | None) -> None:
        self._seed = None if value is None else int(value)

    @property
    def version(self) -> int:
        """Bumped by every new op."""
        return self._version

    @property
    def mutation_version(self) -> int:
        """Bumped when an op that may already be in a session's plan is changed: an input
        replaced, a control input added or removed, an output shape refined, a device set.
        New ops do not bump it: they cannot be in the pruned graph of fetches that existed before
        them unless an existing op is changed to reach them."""
        return self._mutation_version

    def mark_planned(self) -> None:
        """A session has pruned this graph: changes to the ops built so far now count."""
        self._last_planned_id = self._last_id

    def _note_mutation(self, op: "Operation") -> None:
        # an op built after the last plan (still being wired by its builder) is in no plan
        if op._id <= self._last_planned_id:
            self._mutation_version += 1

    @contextlib.contextmanager
    def as_default(self) -> Iterator["Graph"]:
        _default_graph_stack.push(self)
        try:
            yield self
        finally:
            _default_graph_stack.pop(self)

    def finalize(self) -> None:
        self._finalized = True

    def unsafe_unfinalize(self) -> None:
        """Opens a finalized graph again: only for a MonitoredSession that finalized it, on
        close (as TF1 does)."""
        self._finalized = False

    @property
    def finalized(self) -> bool:
        return self._finalized

    @property
    def last_op_id(self) -> int:
        """The id of the last op built (TF1 derives an op-level seed from it)."""
        return self._last_id

    def _next_id(self) -> int:
        self._last_id += 1
        return self._last_id

    # -- names ---------------------------------------------------------------------------------
    def unique_name(self, name: str, mark_as_used: bool = True) -> str:
        """`name` under the current scope, suffixed `_1`, `_2`, ... when already taken."""
        if self._name_stack:
            name = f"{self._name_stack}/{name}"
        key = name.lower()
        count = self._names_in_use.get(key, 0)
        if mark_as_used:
            self._names_in_use[key] = count + 1
        if count > 0:
            base_key = key
            while key in self._names_in_use:
                key = f"{base_key}_{count}"
                count += 1
            if mark_as_used:
                self._names_in_use[key] = 1
            name = f"{name}_{count - 1}"
        return name

    def get_name_scope(self) -> str:
        return self._name_stack

    @contextlib.contextmanager
    def name_scope(self, name: str | None) -> Iterator[str]:
        """Opens a name scope; returns the scope string ending in '/' (TF1 semantics).

        A name ending in '/' re-enters that exact scope; None or "" resets to the top level.
        """
        old = self._name_stack
        if not name:
            new = ""
        elif name.endswith("/"):
            new = name[:-1]
        else:
            if not _VALID_NAME.match(name):
                raise ValueError(f"{name!r} is not a valid scope name.")
            new = self.unique_name(name)
        self._name_stack = new
        try:
            yield f"{new}/" if new else ""
        finally:
            self._name_stack = old

    # -- control dependencies ------------------------------------------------------------------
    @contextlib.contextmanager
    def control_dependencies(self, control_inputs: Iterable[Any] | None) -> Iterator[None]:
        """Ops created inside run only after `control_inputs`; None clears outer dependencies."""
        if control_inputs is None:
            self._control_dependencies_stack.append(None)
        else:
            ops = []
            for c in control_inputs:
                op = as_operation(c)
                if op.graph is not self:
                    raise ValueError(f"Control input {op.name!r} is from a different graph.")
                ops.append(op)
            self._control_dependencies_stack.append(ops)
        try:
            yield
        finally:
            self._control_dependencies_stack.pop()

    def current_control_dependencies(self) -> list[Operation]:
        """The ops that an op built now gets as control inputs (the open
        `control_dependencies` blocks)."""
        return self._current_control_dependencies()

    def _current_control_dependencies(self) -> list[Operation]:
        ops: list[Operation] = []
        for frame in reversed(self._control_dependencies_stack):
            if frame is None:
                break
            ops.extend(op for op in frame if op not in ops)
        return ops

    # -- devices and colocation ----------------------------------------------------------------
    @contextlib.contextmanager
    def device(self, device_name_or_function: Any) -> Iterator[None]:
        """Requests a device for the ops built in the block (TF1's `tf.device`).

        Args:
          device_name_or_function: a device name or DeviceSpec, merged with the enclosing scopes
            (its fields override theirs; `""` changes nothing); None, which clears the
            enclosing scopes; or a device function `fn(op) -> name | DeviceSpec | None`, called
            on each new op once it is built.

        Scopes apply innermost first, each to what the inner ones gave: a name fills the
        fields still unset, a function's result replaces it, and None stops the walk.

        >>> g = Graph()
        >>> with g.as_default(), g.device("/job:worker"), g.device("/gpu:1"):
        ...     sl.constant(1.0).device
        '/job:worker/device:GPU:1'
        """
        outer = self._device_stack[-1] if self._device_stack else None
        self._device_stack.append(DeviceScope(device_name_or_function, outer))
        try:
            yield
        finally:
            self._device_stack.pop()

    @contextlib.contextmanager
    def colocate_with(self, op: Any, ignore_existing: bool = False) -> Iterator[None]:
        """Puts the ops built in the block in `op`'s colocation group (TF1's `tf.colocate_with`).

        New ops get `op`'s groups (`colocation_groups()`) and its requested device; the device
        scopes around the block do not apply to them.

        Args:
          op: an Operation, a Tensor (its op) or a Variable (its op); None with
            `ignore_existing` to build with no colocation.
          ignore_existing: drop the colocations of the enclosing `colocate_with` blocks.

        Raises:
          ValueError: `op` is None without `ignore_existing`, or from another graph.

        >>> g = Graph()
        >>> with g.as_default():
        ...     with g.device("/gpu:0"):
        ...         x = sl.constant(1.0, name="x")
        ...     with g.colocate_with(x):
        ...         y = sl.identity(x)
        >>> y.device, y.op.colocation_groups()
        ('/device:GPU:0', ['loc:@x'])
        """
        if op is None and not ignore_existing:
            raise ValueError(
                "colocate_with(None) clears colocation only with ignore_existing=True."
            )
        target = getattr(op, "op", op)  # a Tensor's or a Variable's op
        if target is not None and not isinstance(target, Operation):
            raise TypeError(f"colocate_with takes an Operation, Tensor or Variable, got {op!r}.")
        if target is not None and target.graph is not self:
            raise ValueError(f"colocate_with: {target.name!r} is from a different graph.")
        saved_devices, saved_colocation = self._device_stack, self._colocation_stack
        self._device_stack = []  # colocation is stronger than device scopes, as in TF1
        if ignore_existing:
            self._colocation_stack = []
        if target is not None:
            self._colocation_stack = self._colocation_stack + [target]
        try:
            yield
        finally:
            self._device_stack, self._colocation_stack = saved_devices, saved_colocation

    def _apply_device_functions(self, op: Operation) -> None:
        """Sets a new op's requested device and colocation from the scopes around it."""
        if self._device_stack:
            static = self._device_stack[-1].static
            if static is not None:
                op._device = static
            else:
                for scope in reversed(self._device_stack):  # innermost first, as TF1
                    if scope.is_break:
                        break
                    if scope.function is not None:
                        op._device = canonical_name(scope.function(op))
                    elif scope.spec.to_string():
                        op._device = scope.spec.make_merged_spec(as_spec(op._device)).to_string()
        if self._colocation_stack:
            groups = {g for target in self._colocation_stack for g in target.colocation_groups()}
            op._colocation = tuple(sorted(groups))
            for target in reversed(self._colocation_stack):
                if target.device:
                    op._device = target.device
                    break

    # -- control-flow context ------------------------------------------------------------------
    @property
    def control_flow_context(self) -> Any:
        """The cond branch or while frame new ops are built in (None: the top level)."""
        return self._control_flow_context

    @control_flow_context.setter
    def control_flow_context(self, ctx: Any) -> None:
        self._control_flow_context = ctx

    @contextlib.contextmanager
    def in_control_flow_context(self, ctx: Any) -> Iterator[None]:
        """Builds ops in `ctx` (a cond branch, a while frame, or None) for the block's duration."""
        saved = self._control_flow_context
        self._control_flow_context = ctx
        try:
            yield
        finally:
            self._control_flow_context = saved

    @contextlib.contextmanager
    def original_op(self, op: Operation) -> Iterator[None]:
        """Ops built in the block record `op` as their `_original_op`: the forward op whose
        gradient they compute (TF1's `Graph._original_op`, which `gradients` opens)."""
        saved = self._original_op_now
        self._original_op_now = op
        try:
            yield
        finally:
            self._original_op_now = saved

    # -- variable creators ---------------------------------------------------------------------
    @contextlib.contextmanager
    def variable_creator_scope(self, creator: Any, priority: int = 100) -> Iterator[None]:
        """`sl.Variable(...)` calls in the block go through `creator(next_creator, **kwargs)`
        (TF1's `tf.variable_creator_scope`): the innermost creator is called first; creators of
        a higher `priority` are called before those of a lower one.

        Raises:
          RuntimeError: (on leaving) the scopes were not left in the order entered.
        """
        old = self._variable_creator_stack
        new = sorted([*old, (priority, creator)], key=lambda item: item[0])  # stable: by entry
        self._variable_creator_stack = new
        try:
            yield
        finally:
            if self._variable_creator_stack is not new:
                raise RuntimeError("Exiting variable_creator_scope without proper nesting.")
            self._variable_creator_stack = old

    def variable_creators(self) -> list:
        """The creators of the enclosing `variable_creator_scope`s, outermost first."""
        return [creator for _, creator in self._variable_creator_stack]

    # -- gradient overrides --------------------------------------------------------------------
    @contextlib.contextmanager
    def gradient_override_map(self, op_type_map: dict[str, str]) -> Iterator[None]:
        """Ops of the mapped types built in the block take their gradient from the function
        registered (`sl.RegisterGradient`) under the mapped name (TF1's override map).

        >>> @sl.RegisterGradient("DoctestSquareGrad")
        ... def _(op, grad):
        ...     return 5.0 * grad
        >>> x = sl.constant(3.0)
        >>> with sl.get_default_graph().gradient_override_map({"Square": "DoctestSquareGrad"}):
        ...     y = sl.square(x)
        >>> print(sl.Session().run(sl.gradients(y, x)[0]))
        5.0
        """
        if not isinstance(op_type_map, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in op_type_map.items()
        ):
            raise TypeError(
                f"op_type_map must be a dictionary mapping strings to strings, got {op_type_map!r}."
            )
        saved = dict(self._gradient_override_map)
        self._gradient_override_map.update(op_type_map)
        try:
            yield
        finally:
            self._gradient_override_map = saved

    # -- op creation ---------------------------------------------------------------------------
    @with_x64  # shape inference and constant folding call JAX (see `ir.x64`)
    def create_op(
        self,
        op_type: str,
        inputs: Iterable[Tensor],
        attrs: dict[str, Any] | None = None,
        name: str | None = None,
        control_inputs: Iterable[Operation] = (),
    ) -> Operation:
        """Builds one op: resolves the registry entry, captures inputs into the current
        control-flow context, infers output dtypes and shapes, and records the op."""
        if self._finalized:
            raise RuntimeError("Graph is finalized and cannot be modified.")
        op_def = registry.get_op_def(op_type)
        inputs = list(inputs)
        for i, t in enumerate(inputs):
            if not isinstance(t, Tensor):
                raise TypeError(f"Input {i} of a {op_type} op must be a Tensor, got {t!r}.")
            if t.graph is not self:
                raise ValueError(
                    f"Tensor {t.name!r} is from a different graph than the {op_type} op being "
                    "built: all inputs of an op must be in one graph."
                )
        ctx = self._control_flow_context
        verbatim = bool(name) and name.endswith("/")  # a scope name opened by the caller
        if ctx is not None:
            # the name the op will get, for the error when an input may not be used here
            consumer = name[:-1] if verbatim else self.unique_name(name or op_type, False)
            inputs = [ctx.capture(t, consumer) for t in inputs]
        if verbatim:
            full_name = name[:-1]
            self._names_in_use.setdefault(full_name.lower(), 1)
        else:
            full_name = self.unique_name(name or op_type)
        if ctx is None:
            for t in inputs:
                if t.op.control_flow_context is not None:
                    t.op.control_flow_context.check_use_at_top_level(t, full_name)
        controls = self._current_control_dependencies()
        for c in control_inputs:
            if c not in controls:
                controls.append(c)
        input_ops = {t.op for t in inputs}
        controls = [c for c in controls if c not in input_ops]
        op = Operation(self, op_def, full_name, inputs, controls, attrs or {})
        if op_type in self._gradient_override_map:
            op._gradient_op_type = self._gradient_override_map[op_type]
        if self._original_op_now is not None:
            op._original_op = self._original_op_now
        try:
            specs = op_def.infer(op)
        except (ValueError, TypeError) as err:
            seen = ", ".join(f"{t.name}: {t.dtype.name}{t.shape}" for t in inputs) or "no inputs"
            raise type(err)(f"{op_type} op '{full_name}' (inputs {seen}): {err}") from None
        op._outputs = [
            Tensor(op, i, dtype, as_shape(shape)) for i, (dtype, shape) in enumerate(specs)
        ]
        _require_string_kernel(op)
        if self._device_stack or self._colocation_stack:
            self._apply_device_functions(op)
        self._ops.append(op)
        self._ops_by_name[full_name] = op
        self._version += 1
        if ctx is not None:
            ctx.add_op(op)
        return op

    def add_built_op(
        self,
        op: Operation,
        outputs: list[Tensor],
        device: str = "",
        colocation: tuple[str, ...] = (),
        gradient_op_type: str | None = None,
    ) -> None:
        """Records an op built outside `create_op`: the graph_def importer wires inputs and
        contexts as the file says, so nothing is captured or inferred again here."""
        if self._finalized:
            raise RuntimeError("Graph is finalized and cannot be modified.")
        op._outputs = list(outputs)
        op._device, op._colocation = device, colocation
        if gradient_op_type is not None:
            op._gradient_op_type = gradient_op_type
        scope = ""
        for part in op.name.split("/"):  # the op's name and its scopes are taken
            scope = f"{scope}/{part}" if scope else part
            self._names_in_use.setdefault(scope.lower(), 1)
        self._ops.append(op)
        self._ops_by_name[op.name] = op
        self._version += 1

    def discard_built_ops(self, ops: Iterable[Operation]) -> None:
        """Removes ops nothing else uses yet: what an import built before it failed."""
        gone = set(ops)
        self._ops = [op for op in self._ops if op not in gone]
        for op in gone:
            self._ops_by_name.pop(op.name, None)
        self._version += 1

    # Registered by `sluice.framework.graph_def` when imported (the IR stage cannot import it).
    _graph_def_exporter: Callable[..., Any] | None = None

    @staticmethod
    def register_graph_def_exporter(exporter: Callable[[Graph], Any]) -> None:
        """Sets the function `as_graph_def` calls (`sluice.framework.graph_def` registers it)."""
        Graph._graph_def_exporter = exporter

    def as_graph_def(self, from_version: int | None = None, add_shapes: bool = False) -> Any:
        """The graph as a `GraphDef` (sluice's JSON form; see `sluice.framework.graph_def`).
        Every node keeps its output dtypes and shapes, so `add_shapes` changes nothing."""
        del from_version, add_shapes
        if Graph._graph_def_exporter is None:
            raise RuntimeError("as_graph_def needs `import sluice.framework.graph_def` first.")
        return Graph._graph_def_exporter(self)

    # -- lookups -------------------------------------------------------------------------------
    def get_operations(self) -> list[Operation]:
        return list(self._ops)

    def get_operation_by_name(self, name: str) -> Operation:
        if not isinstance(name, str):
            raise TypeError(f"Operation names are strings (or similar), not {type(name).__name__}.")
        try:
            return self._ops_by_name[name]
        except KeyError:
            if ":" in name:  # TF1's messages, which scripts match
                raise ValueError(
                    f"Name {name!r} appears to refer to a Tensor, not a Operation."
                ) from None
            raise KeyError(f"The name {name!r} refers to an Operation not in the graph.") from None

    def get_tensor_by_name(self, name: str) -> Tensor:
        if not isinstance(name, str):
            raise TypeError(f"Tensor names are strings (or similar), not {type(name).__name__}.")
        op_name, _, index = name.rpartition(":")
        if not op_name or not index.isdigit():
            raise ValueError(
                f"The name {name!r} looks like an (invalid) Operation name, not a "
                'Tensor. Tensor names must be of the form "<op_name>:<output_index>".'
            )
        op = self._ops_by_name.get(op_name)
        if op is None:
            raise KeyError(
                f"The name {name!r} refers to a Tensor which does not exist. The "
                f"operation, {op_name!r}, does not exist in the graph."
            )
        if int(index) >= len(op.outputs):
            raise KeyError(
                f"The name {name!r} refers to a Tensor which does not exist. The "
                f"operation, {op_name!r}, exists but only has {len(op.outputs)} "
                "outputs."
            )
        return op.outputs[int(index)]

    def as_graph_element(self, obj: Any) -> Tensor | Operation:
        if isinstance(obj, (Tensor, Operation)):
            if obj.graph is not self:
                raise ValueError(f"{obj!r} is not an element of this graph.")
            return obj
        if hasattr(obj, "_as_graph_element"):
            return self.as_graph_element(obj._as_graph_element())
        if isinstance(obj, str):
            return self.get_tensor_by_name(obj) if ":" in obj else self.get_operation_by_name(obj)
        raise TypeError(f"Cannot interpret {obj!r} as a Tensor or Operation of this graph.")

    # -- what a session may feed and fetch (TF1) --------------------------------------------------
    def prevent_fetching(self, op: Operation) -> None:
        """Marks `op` as not fetchable (TF1): `Session.run` refuses it and its outputs."""
        self._unfetchable.add(op)

    def is_fetchable(self, tensor_or_op: Tensor | Operation) -> bool:
        """Whether `Session.run` may fetch it: not an op marked by `prevent_fetching`, nor one
        inside a while loop, which has a value per iteration (a loop's Exit is its result). A
        value inside a cond branch may be fetched (TF1 refuses it): it is dead, and the run
        raises, when the branch is not taken."""
        op = tensor_or_op if isinstance(tensor_or_op, Operation) else tensor_or_op.op
        if op in self._unfetchable:
            return False
        context = op.control_flow_context
        return context is None or context.may_fetch(op)

    def prevent_feeding(self, tensor: Tensor) -> None:
        """Marks `tensor` as not feedable (TF1): `Session.run` refuses a feed of it."""
        self._unfeedable.add(tensor)

    def is_feedable(self, tensor: Tensor) -> bool:
        """Whether `Session.run` may feed it. As TF1: not a tensor marked by `prevent_feeding`,
        nor one made inside a while loop (an Enter's too), which has a value per iteration."""
        if tensor in self._unfeedable:
            return False
        context = tensor.op.control_flow_context
        return context is None or context.may_feed(tensor)

    # -- collections ---------------------------------------------------------------------------
    def add_to_collection(self, name: str, value: Any) -> None:
        self._collections.setdefault(name, []).append(value)

    def add_to_collections(self, names: Iterable[str], value: Any) -> None:
        for name in set(names):
            self.add_to_collection(name, value)

    def get_collection(self, name: str, scope: str | None = None) -> list:
        items = list(self._collections.get(name, []))
        if scope is None:
            return items
        pattern = re.compile(scope)
        return [x for x in items if hasattr(x, "name") and pattern.match(x.name)]

    def get_collection_ref(self, name: str) -> list:
        return self._collections.setdefault(name, [])

    def clear_collection(self, name: str) -> None:
        self._collections.pop(name, None)

    def get_all_collection_keys(self) -> list[str]:
        return list(self._collections)


def _require_string_kernel(op: Operation) -> None:
    """An op on string tensors needs a string kernel (see `registry.register_string_kernel`);
    control-flow primitives pass strings through.

    Raises:
      TypeError: `op` takes or makes a string tensor and has no string kernel."""
    if op.op_def.control_flow or not string_values.on_strings(op):
        return
    if registry.string_kernel(op.type) is None:
        where = [f"input {i}" for i, t in enumerate(op.inputs) if t.dtype == dtypes.string]
        where += [f"output {i}" for i, t in enumerate(op.outputs) if t.dtype == dtypes.string]
        raise TypeError(
            f"{op.type} op '{op.name}' does not support string tensors ({', '.join(where)} "
            f"{'is' if len(where) == 1 else 'are'} string); sluice computes strings on the host "
            "with the ops of sl.strings, identity, reshape, concat, stack, gather, fill, equal."
        )


def as_operation(obj: Any) -> Operation:
    """The Operation a control input stands for: itself, a Tensor's op, or a Variable's op."""
    if isinstance(obj, Operation):
        return obj
    if isinstance(obj, Tensor):
        return obj.op
    if hasattr(obj, "op") and isinstance(obj.op, Operation):  # Variables
        return obj.op
    raise TypeError(f"Control input must be an Operation or Tensor, got {obj!r}.")


class _DefaultGraphStack(threading.local):
    def __init__(self):
        self.stack: list[Graph] = []
        self.global_default: Graph | None = None

    def push(self, g: Graph) -> None:
        self.stack.append(g)

    def pop(self, g: Graph) -> None:
        if not self.stack or self.stack[-1] is not g:
            raise RuntimeError("Nesting violated for the default graph stack.")
        self.stack.pop()

    def get(self) -> Graph:
        if self.stack:
            return self.stack[-1]
        if self.global_default is None:
            self.global_default = Graph()
        return self.global_default

    def reset(self) -> None:
        if self.stack:
            raise AssertionError(
                "Do not reset the default graph inside a `with graph.as_default()`."
            )
        self.global_default = Graph()


_default_graph_stack = _DefaultGraphStack()


@export("get_default_graph")
def get_default_graph() -> Graph:
    return _default_graph_stack.get()


def entered_default_graph() -> Graph | None:
    """The graph of the innermost `with graph.as_default()`, or None outside any."""
    stack = _default_graph_stack.stack
    return stack[-1] if stack else None


@export("reset_default_graph")
def reset_default_graph() -> None:
    _default_graph_stack.reset()


def graph_of(values: Iterable[Any]) -> Graph:
    """The graph that holds every Tensor in `values` (the default graph if there are none)."""
    found: Graph | None = None
    for v in values:
        is_graph_element = isinstance(v, (Tensor, Operation)) or hasattr(v, "_as_graph_element")
        g = getattr(v, "graph", None) if is_graph_element else None
        if g is None:
            continue
        if found is None:
            found = g
        elif g is not found:
            raise ValueError(
                f"{v!r} must be from the same graph as the other inputs; all inputs of an op "
                "must be in one graph."
            )
    if found is None:
        return get_default_graph()
    default = get_default_graph()
    if found is not default and _default_graph_stack.stack:
        raise ValueError(
            f"Tensors from graph {found!r} are used while another graph is the default "
            "(`with graph.as_default()`): an op cannot mix graphs."
        )
    return found


@export("name_scope")
def name_scope(name: str | None, default_name: str | None = None, values: Any = None):
    """TF1 `tf.name_scope(name, default_name, values)` on the inputs' graph."""
    g = graph_of(values or [])
    return g.name_scope(name if name is not None else default_name)


@export("control_dependencies")
def control_dependencies(control_inputs: Iterable[Any] | None):
    return get_default_graph().control_dependencies(control_inputs)


@export("device")
def device(device_name_or_function: DeviceSpec | str | Callable | None):
    """TF1's `tf.device` on the default graph: see `Graph.device`."""
    return get_default_graph().device(device_name_or_function)


@export("colocate_with")
def colocate_with(op: Any, ignore_existing: bool = False):
    """TF1's `tf.colocate_with` on the default graph: see `Graph.colocate_with`."""
    return get_default_graph().colocate_with(op, ignore_existing)


@export("add_to_collection")
def add_to_collection(name: str, value: Any) -> None:
    get_default_graph().add_to_collection(name, value)


@export("get_collection")
def get_collection(name: str, scope: str | None = None) -> list:
    return get_default_graph().get_collection(name, scope)


@export("get_collection_ref")
def get_collection_ref(name: str) -> list:
    return get_default_graph().get_collection_ref(name)


@export("set_random_seed", "random.set_random_seed")
def set_random_seed(seed: int | None) -> None:
    get_default_graph().seed = seed

"""What layer calls leave behind, besides ops: names, histories, masks, call context.

  * each output Tensor remembers the `Node` (layer, arguments) that produced it, so that
    `Model(inputs, outputs)` can find its layers and replay them (with training=True for fit);
  * an output Tensor may carry a Keras mask (`get_mask`), which the next layer receives as
    `mask=` when its `call` accepts one;
  * while a layer's `call` runs, the layers it calls are its children (`parent_layer`), and
    `training` not given to a call is inherited from the calls around it (`outer_training`);
  * updates (BatchNormalization's moving statistics) and activity losses made during a call
    go to the innermost open `CallCollector` (`collect`), which the training step runs;
  * calls, forward passes and collections are traces (`sluice.framework.ir.tracing`): what
    Keras code builds inside them runs later, per step (a SeedGenerator advances a Variable).

The histories and masks are kept in weak maps keyed by Tensor, outside the graph IR.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import weakref
from collections.abc import Iterator
from typing import Any

from sluice._tf1.cells import nest
from sluice.framework import state_cells
from sluice.framework.ir import dtypes
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir import tracing as trace_scope
from sluice.framework.ir.graph import Graph, Operation, Tensor
from sluice.framework.variables import Variable

# Per graph, in its `attachments` (freed with the graph; a weak map keyed by the tensors would
# keep them, and their graph, alive: a node and a mask refer back to the graph):
_HISTORY = "keras.history"  # {Tensor: the Node whose call made it}
_MASKS = "keras.masks"  # {Tensor: its Keras mask}
_GRAPH_LAYER_NAMES: weakref.WeakKeyDictionary[Graph, set[str]] = weakref.WeakKeyDictionary()


def layer_names(g: Graph) -> set[str]:
    """The names of the top-level layers of graph `g` (so far)."""
    return _GRAPH_LAYER_NAMES.setdefault(g, set())


def unique_name(base: str, taken: set[str]) -> str:
    """`base`, or `base_1`, `base_2`, ... : the first one not in `taken` (which it joins)."""
    name, i = base, 0
    while name in taken:
        i += 1
        name = f"{base}_{i}"
    taken.add(name)
    return name


def shape_tuple(t: Any) -> tuple | None:
    """The static shape of a Tensor as a tuple with None for unknown dims (None: unknown rank)."""
    shape = t.shape
    return None if shape.rank is None else tuple(shape.as_list())


def graph_of(values: list) -> Graph:
    """The one graph of the Tensors (and Variables) in `values`, whatever the default graph is
    (a model's tensors live in the model's graph); the default graph when there are none."""
    graphs = {id(v.graph): v.graph for v in values if _in_one_graph(v)}
    if len(graphs) > 1:
        raise ValueError(
            "These tensors come from different graphs (different models); a layer's inputs must "
            f"all be in one graph: {[v for v in values if isinstance(v, (Tensor, Variable))]}."
        )
    return next(iter(graphs.values())) if graphs else graph_lib.get_default_graph()


def _in_one_graph(v: Any) -> bool:
    """A Tensor, or a TF1 Variable (a Keras weight, which has a state cell, is in any graph)."""
    return isinstance(v, Tensor) or (isinstance(v, Variable) and state_cells.cell_of(v) is None)


def get_mask(t: Any) -> Tensor | None:
    """The Keras mask a layer attached to `t` (e.g. Embedding(mask_zero=True)), or None."""
    return t.graph.attachments.get(_MASKS, {}).get(t) if isinstance(t, Tensor) else None


def set_mask(t: Tensor, mask: Tensor | None) -> None:
    if mask is None:
        t.graph.attachments.get(_MASKS, {}).pop(t, None)
    else:
        t.graph.attachments.setdefault(_MASKS, {})[t] = mask


@dataclasses.dataclass(eq=False)
class Node:
    """One call of a layer on symbolic tensors: `outputs = layer(*args, **kwargs)`."""

    layer: Any  # the Layer
    args: tuple
    kwargs: dict
    outputs: Any

    @property
    def input_tensors(self) -> list[Tensor]:
        return [t for t in nest.flatten((self.args, self.kwargs)) if isinstance(t, Tensor)]


def producing_node(t: Any) -> Node | None:
    """The Node whose call produced `t`, or None for a Tensor no layer made."""
    return t.graph.attachments.get(_HISTORY, {}).get(t) if isinstance(t, Tensor) else None


def record_node(node: Node) -> None:
    """Makes each output Tensor of `node` remember it."""
    for t in nest.flatten(node.outputs):
        if isinstance(t, Tensor):
            t.graph.attachments.setdefault(_HISTORY, {})[t] = node


# -- what a call is inside of -----------------------------------------------------------------
@dataclasses.dataclass
class Frame:
    # the Layer being called; None: a model's own forward pass, whose layers are not its children
    layer: Any
    training: bool | None


class CallCollector:
    """Collects the update ops and loss tensors that layers add during calls (see `collect`)."""

    def __init__(self) -> None:
        self.updates: list[Operation] = []
        self.losses: list[Tensor] = []
        self.loss_owners: list[Any] = []  # the layer that added each loss (None: not a layer)


class _CallState(threading.local):
    def __init__(self) -> None:
        self.frames: list[Frame] = []
        self.collectors: list[CallCollector] = []


_STATE = _CallState()


@contextlib.contextmanager
def collect() -> Iterator[CallCollector]:
    """Gathers `add_update` ops and `add_loss` tensors of every layer called inside."""
    collector = CallCollector()
    _STATE.collectors.append(collector)
    try:
        with trace_scope.tracing():
            yield collector
    finally:
        _STATE.collectors.remove(collector)


@contextlib.contextmanager
def forward_pass(training: bool | None) -> Iterator[None]:
    """A model's forward pass: layers called inside default to `training`."""
    _STATE.frames.append(Frame(None, training))
    try:
        with trace_scope.tracing():
            yield
    finally:
        _STATE.frames.pop()


@contextlib.contextmanager
def calling(layer: Any, training: bool | None) -> Iterator[None]:
    """The call of `layer`: the layers it calls are its children and inherit `training`."""
    _STATE.frames.append(Frame(layer, training))
    try:
        with trace_scope.tracing():
            yield
    finally:
        _STATE.frames.pop()


_GRAPHS_WITH_LOSSES: weakref.WeakSet[Graph] = weakref.WeakSet()


def has_losses(graph: Graph) -> bool:
    """Whether any layer called in `graph` added a loss term (`add_loss`, an activity
    regularizer): a model's evaluation step then runs its own forward pass, whose terms it
    collects, instead of reusing the model's inference outputs."""
    return graph in _GRAPHS_WITH_LOSSES


def add_to_collector(update: Any = None, loss: Any = None, owner: Any = None) -> None:
    """Hands an update op or a loss term (added by layer `owner`) to the innermost open
    collector (if any)."""
    if loss is not None and isinstance(loss, Tensor):
        _GRAPHS_WITH_LOSSES.add(loss.graph)
    if _STATE.collectors:
        if update is not None:
            _STATE.collectors[-1].updates.append(update)
        if loss is not None:
            _STATE.collectors[-1].losses.append(loss)
            _STATE.collectors[-1].loss_owners.append(owner)


def tracing() -> bool:
    """Whether a layer call, a model's forward pass or a step is being built now (graph code
    runs; a call on arrays inside it is part of that graph, not computed at once): the
    framework's trace scope, which `calling`, `forward_pass` and `collect` enter."""
    return trace_scope.is_tracing()


def outer_training() -> bool | None:
    for frame in reversed(_STATE.frames):
        if frame.training is not None:
            return frame.training
    return None


def parent_layer() -> Any:
    return _STATE.frames[-1].layer if _STATE.frames else None


# -- the order of variable ops in a trace -----------------------------------------------------
# ops that read a variable without changing it; every other op on a variable handle writes it
_READS = frozenset({"ReadVariableOp", "VarIsInitializedOp", "ReadVariableOrInitialValue"})
# ops whose effect is outside the graph: a step runs them as tf.function does
_HOST_EFFECTS = frozenset({"Print", "PrintV2", "Assert"})


def _handle(op: Operation) -> Tensor | None:
    """The variable handle `op` reads or writes (through Identity ops), or None."""
    if not op.inputs or op.inputs[0].dtype != dtypes.resource:
        return None
    handle = op.inputs[0]
    while handle.op.type == "Identity":
        handle = handle.op.inputs[0]
    return handle


def order_state_ops(g: Graph, first_op_id: int) -> list[Operation]:
    """Orders the variable ops built since `first_op_id` by variable, as built (TensorFlow's
    automatic control dependencies in `tf.function`): a read built after a write sees the new
    value, a write waits for the reads built before it. Returns the writes and host effects
    among them: what a traced step, or a call on values, runs. Ops inside a `cond` branch or a
    `while_loop` body are left as they are, and so are a variable's own initializer and first
    read."""
    last_write: dict[Tensor, Operation] = {}
    reads_since: dict[Tensor, list[Operation]] = {}
    updates: list[Operation] = []
    for op in g.get_operations():
        if op.id < first_op_id or op.control_flow_context is not None:
            continue
        handle = _handle(op)
        if handle is None:
            if op.type in _HOST_EFFECTS:
                updates.append(op)
            continue
        if op.name.startswith(handle.op.name + "/"):
            continue  # the variable's own initializer or first read, built in its name scope
        data_inputs = {t.op for t in op.inputs}
        if op.type in _READS:
            before = [last_write[handle]] if handle in last_write else []
            reads_since.setdefault(handle, []).append(op)
        else:
            before = ([last_write[handle]] if handle in last_write else []) + reads_since.pop(
                handle, []
            )
            last_write[handle] = op
            updates.append(op)
        for earlier in before:
            if earlier not in data_inputs:
                op.add_control_input(earlier)
    return updates

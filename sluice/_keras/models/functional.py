"""The graph walk of a functional model: which layer calls lead from its inputs to its outputs.

Each output Tensor of a layer call remembers its `Node` (see `sluice._keras.layers.tracking`);
`nodes_between` walks back from the outputs through those nodes to the inputs and returns
the calls in an order that can replay them (`Model._replay`, with training=True for fit).

Tensors computed from the inputs by graph ops that no layer made (`x + y`, `x * 2`, `x[:, 0]`,
`sl.concat`, `sl.ops.mean`) become calls too, as in Keras: each such op, with the constants it
reads, is wrapped in a `GraphOpLayer` whose node is recorded as having made the op's outputs
(so a second model over the same tensors finds the same layer).
"""

from __future__ import annotations

from sluice._keras.layers import tracking
from sluice._keras.layers.core.input_layer import InputLayer
from sluice._keras.layers.graph_op_layer import GraphOpLayer
from sluice.framework.ir.graph import Operation, Tensor


class _Dependence:
    """Which graph tensors are computed from `sources` (memoised over one walk)."""

    def __init__(self, sources: set):
        self.sources = sources
        self.known: dict[int, bool] = {}  # id(op) -> depends

    def __call__(self, t: Tensor) -> bool:
        if t in self.sources:
            return True
        stack = [t.op]
        while stack:  # post-order without recursion: an op is decided after its inputs
            op = stack[-1]
            if id(op) in self.known:
                stack.pop()
                continue
            pending = [x.op for x in op.inputs
                       if x not in self.sources and id(x.op) not in self.known]  # fmt: skip
            if pending:
                stack.extend(pending)
                continue
            stack.pop()
            self.known[id(op)] = any(x in self.sources or self.known[id(x.op)] for x in op.inputs)
        return self.known[id(t.op)]


def _constant_ops(tensors: list[Tensor]) -> list[Operation]:
    """The ops computing `tensors` (which depend on no model input), inputs first."""
    order: list[Operation] = []
    seen: set[int] = set()
    stack = [(t.op, False) for t in tensors]
    while stack:
        op, expanded = stack.pop()
        if expanded:
            order.append(op)
            continue
        if id(op) in seen:
            continue
        seen.add(id(op))
        stack.append((op, True))
        stack.extend((x.op, False) for x in reversed(op.inputs) if id(x.op) not in seen)
    return order


def _op_node(op: Operation, depends: _Dependence) -> tracking.Node:
    """A `GraphOpLayer` call standing for `op`, whose inputs computed from the model's inputs
    already have nodes; the op's other inputs (constants) are re-created by the layer."""
    constant_inputs = [x for x in op.inputs if not depends(x)]
    inputs = list(dict.fromkeys(x for x in op.inputs if depends(x)))
    ops = _constant_ops(constant_inputs) + [op]
    for const_op in ops:
        _check_not_another_input(const_op.outputs[0] if const_op.outputs else None)
    layer = GraphOpLayer.from_ops(ops, inputs, list(op.outputs))
    layer.built = True
    outputs = list(op.outputs) if len(op.outputs) > 1 else op.outputs[0]
    node = tracking.Node(layer, (inputs if len(inputs) > 1 else inputs[0],), {}, outputs)
    layer.record_call(node, op.graph, tracking.parent_layer())
    tracking.record_node(node)
    return node


def _check_not_another_input(t: Tensor | None) -> None:
    node = tracking.producing_node(t)
    if node is not None and isinstance(node.layer, InputLayer):
        raise ValueError(
            f"Tensor {t.name} comes from an Input that is not one of the model's inputs; "
            "pass that Input to Model(inputs=...)."
        )


def nodes_between(inputs: list[Tensor], outputs: list[Tensor]) -> list[tracking.Node]:
    """The layer calls leading from `inputs` to `outputs`, in an order that can replay them.

    Raises:
      ValueError: a tensor comes from an Input that is not among `inputs`, or from an op that
        cannot be replayed (a variable made outside layers, random numbers, control flow), or
        the layers form a cycle.
    """
    sources = set(inputs)
    depends = _Dependence(sources)
    order: list[tracking.Node] = []
    done: set[int] = set()
    active: set[int] = set()

    def visit(t: Tensor) -> None:
        if t in sources:
            return
        node = tracking.producing_node(t)
        if node is None and depends(t):
            for x in t.op.inputs:  # the op's own inputs get their nodes first
                if depends(x):
                    visit(x)
            node = _op_node(t.op, depends)
        _check_not_another_input(t)
        if node is None:
            return  # a constant, used as is
        if id(node) in done:
            return
        if id(node) in active:
            raise ValueError("The layers form a cycle.")
        active.add(id(node))
        for x in node.input_tensors:
            visit(x)
        active.discard(id(node))
        done.add(id(node))
        order.append(node)

    for t in outputs:
        visit(t)
    return order

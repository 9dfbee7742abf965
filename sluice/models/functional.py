"""The graph walk of a functional model: which layer calls lead from its inputs to its outputs.

Each output Tensor of a layer call remembers its `Node` (see `sluice.layers.tracking`);
`nodes_between` walks back from the outputs through those nodes to the inputs and returns
the calls in an order that can replay them (`Model._replay`, with training=True for fit).
"""

from __future__ import annotations

from sluice.framework.ir.graph import Tensor
from sluice.layers import tracking
from sluice.layers.input_layer import InputLayer


def _depends_on(t: Tensor, sources: set) -> bool:
    """Whether graph tensor `t` is computed from any tensor in `sources` (graph walk)."""
    seen, stack = set(), [t]
    while stack:
        x = stack.pop()
        if x in sources:
            return True
        if id(x.op) in seen:
            continue
        seen.add(id(x.op))
        stack.extend(x.op.inputs)
    return False


def nodes_between(inputs: list[Tensor], outputs: list[Tensor]) -> list[tracking.Node]:
    """The layer calls leading from `inputs` to `outputs`, in an order that can replay them."""
    sources = set(inputs)
    order: list[tracking.Node] = []
    done: set[int] = set()
    active: set[int] = set()

    def visit(t: Tensor) -> None:
        if t in sources:
            return
        node = tracking.producing_node(t)
        if node is None or isinstance(node.layer, InputLayer):
            if _depends_on(t, sources) or node is not None:
                raise ValueError(
                    f"Tensor {t.name} is computed from the model's inputs by graph ops that no "
                    "layer made (or comes from another Input); a functional model can only replay "
                    "layers. Wrap the ops in sl.layers.Lambda(fn), or pass that Input to Model."
                )
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

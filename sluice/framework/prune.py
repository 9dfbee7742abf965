"""What a run needs: the fetch walk and placeholder check that both engines share.

`prune(fetches, targets, feeds)` keeps the ops the fetches and targets need, walking inputs and
control inputs back from them and stopping at fed tensors. An op whose every output is fed is
replaced by the feeds, its control edges too (TF1's feed rewrite), so a placeholder used only
in `control_dependencies` is satisfied by its feed. A placeholder that is still needed and not
fed is the user's error, raised before any engine runs.

Both engines take a `Pruned` and return one value per fetch, `DEAD` for a fetch that lies on a
branch that was not taken.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

from sluice.framework.ir import errors
from sluice.framework.ir.graph import Operation, Tensor

DEAD = object()  # what an engine returns for a dead fetch (and the interpreter's dead token)


@dataclasses.dataclass(frozen=True, eq=False)
class Pruned:
    """The ops one (fetches, targets, feeds) signature runs, in creation order."""

    fetches: tuple[Tensor, ...]
    targets: tuple[Operation, ...]
    feeds: tuple[Tensor, ...]
    ops: tuple[Operation, ...]
    fed_ops: frozenset[Operation]  # ops whose every output is fed (never run)


def prune(
    fetches: Sequence[Tensor], targets: Sequence[Operation], feeds: Sequence[Tensor]
) -> Pruned:
    """The ops `fetches` and `targets` need when `feeds` are given; raises InvalidArgumentError
    for a needed placeholder that is not fed."""
    fed = set(feeds)
    fed_ops = frozenset(t.op for t in feeds if all(o in fed for o in t.op.outputs))
    needed: set[Operation] = set()
    stack = [t.op for t in fetches if t not in fed] + list(targets)
    while stack:
        op = stack.pop()
        if op in needed:
            continue
        needed.add(op)
        stack.extend(t.op for t in op.inputs if t not in fed)
        stack.extend(c for c in op.control_inputs if c not in fed_ops)
    ops = tuple(sorted(needed, key=lambda op: op.id))
    for op in ops:
        if op.type == "Placeholder":
            raise errors.InvalidArgumentError(
                None,
                op,
                f"You must feed a value for placeholder tensor '{op.name}' with dtype "
                f"{op.get_attr('dtype').name} and shape {op.get_attr('shape')}",
            )
    return Pruned(tuple(fetches), tuple(targets), tuple(feeds), ops, fed_ops)

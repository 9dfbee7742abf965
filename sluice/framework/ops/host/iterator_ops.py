"""Iterator ops: `IteratorGetNext` (a host source) and `MakeIterator` (a host sink).

A dataset is a Python object that makes NumPy elements (see `sluice.data`); the graph holds only
a token for it, as `py_func` holds its function's token, for as long as the graph lives. Each
session keeps its own position in each iterator (`Session.host_resources`, under the iterator's
shared name), as TF1 keeps iterator state in a session's resource manager:

- `MakeIterator` (an initializable iterator's `initializer`) takes the graph tensors the dataset
  captured (`Dataset.from_tensor_slices(x_placeholder)`) as inputs; after the step computes
  them, it starts the dataset over with their values, stopping the previous position's thread.
- `IteratorGetNext` has no inputs: before a step that needs it, the session asks the iterator
  for its next element and feeds it (`OutOfRangeError` at the end). A one-shot iterator's op
  carries its dataset's token and starts the dataset at its first use.

Resource contract: `factory(captured_values) -> resource` with `get_next() -> [array per
output]` and `close()`.
"""

from __future__ import annotations

import weakref
from typing import Any, Callable, Sequence

from sluice.framework.ir import errors
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Operation, Tensor
from sluice.framework.ir.registry import not_differentiable, register_op
from sluice.framework.ops.host.host_callback import new_token
from sluice.framework.ops.host.host_ops import (
    HostContext,
    never_run,
    register_host_sink,
    register_host_source,
    require_top_level,
)

# -- the dataset table: token -> (factory, captured tensors) --------------------------------------
_DATASETS: dict[str, tuple[Callable[[list], Any], tuple[Tensor, ...]]] = {}


def register_dataset(
    g: graph_lib.Graph, factory: Callable[[list], Any], captured: Sequence[Tensor]
) -> str:
    """A token for `factory` in graph `g`, kept until `g` is collected."""
    token = new_token("dataset")
    _DATASETS[token] = (factory, tuple(captured))
    weakref.finalize(g, _DATASETS.pop, token, None)
    return token


def _dataset(op: Operation, token: str) -> tuple[Callable[[list], Any], tuple[Tensor, ...]]:
    try:
        return _DATASETS[token]
    except KeyError:
        raise errors.FailedPreconditionError(
            None,
            op,
            f"The dataset of {op.name!r} is not in this process: datasets are Python "
            "objects that a graph file does not hold; build the input pipeline again "
            "and make a new iterator.",
        ) from None


# -- IteratorGetNext ------------------------------------------------------------------------------
def _get_next_infer(op: Operation) -> list:
    return list(zip(op.get_attr("output_types"), op.get_attr("output_shapes")))


def _get_next(session: HostContext, op: Operation) -> list:
    name = op.get_attr("shared_name")
    iterator = session.host_resources.get(name)
    if iterator is None:
        token = op.get_attr("one_shot_dataset")
        if not token:
            raise errors.FailedPreconditionError(
                None,
                op,
                "GetNext() failed because the iterator has not been initialized. "
                "Ensure that you have run the initializer operation for this iterator "
                "before getting the next element.",
            )
        factory, captured = _dataset(op, token)
        values = session.run(list(captured)) if captured else []
        iterator = session.host_resources.get_or_create(name, lambda: factory(values))
    try:
        return iterator.get_next()
    except errors.OpError as err:
        if err.op is None:
            err.op = op
        raise


register_op("IteratorGetNext", infer=_get_next_infer, kernel=never_run, stateful=True)
register_host_source("IteratorGetNext", _get_next)
not_differentiable("IteratorGetNext")


def iterator_get_next(
    shared_name: str,
    output_types: Sequence[Any],
    output_shapes: Sequence[Any],
    one_shot_dataset: str = "",
    name: str | None = None,
) -> list[Tensor]:
    """The next element of the iterator `shared_name`, one tensor per component."""
    g = graph_lib.get_default_graph()
    require_top_level(g, "IteratorGetNext")
    attrs = {
        "shared_name": shared_name,
        "output_types": list(output_types),
        "output_shapes": list(output_shapes),
        "one_shot_dataset": one_shot_dataset,
    }
    return list(g.create_op("IteratorGetNext", [], attrs, name=name or "IteratorGetNext").outputs)


# -- MakeIterator ---------------------------------------------------------------------------------
def _make_iterator(session: HostContext, op: Operation, values: list) -> None:
    factory, _ = _dataset(op, op.get_attr("dataset"))
    session.host_resources.replace(op.get_attr("shared_name"), factory(values))


register_op("MakeIterator", infer=lambda op: [], kernel=never_run, stateful=True)
register_host_sink("MakeIterator", _make_iterator)
not_differentiable("MakeIterator")


def make_iterator(shared_name: str, dataset_token: str, name: str | None = None) -> Operation:
    """The op that (re)starts iterator `shared_name` on a registered dataset."""
    g = graph_lib.get_default_graph()
    _, captured = _DATASETS[dataset_token]
    for t in captured:
        if t.graph is not g:
            raise ValueError(
                f"The dataset captures tensor {t.name!r} of another graph than the iterator's: "
                "build the dataset and its iterator in one graph."
            )
    attrs = {"shared_name": shared_name, "dataset": dataset_token}
    return g.create_op("MakeIterator", list(captured), attrs, name=name or "MakeIterator")

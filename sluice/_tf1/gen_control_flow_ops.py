"""TF1's `tensorflow.python.ops.gen_control_flow_ops`: the raw control-flow primitives, as TF1's
own control-flow tests build graphs from them by hand (`from sluice.python.ops import
gen_control_flow_ops` once `tensorflow` is renamed).

A frame built by hand is named by its Enters' `frame_name`, as in TF1. The interpreted engine
runs such graphs (it is the whitepaper's executor); the compiled engine lowers the loops that
`while_loop` builds, so a session of the default engine runs a hand-wired loop interpreted.
sluice has no reference tensors: the `ref_` forms are the same ops.

>>> from sluice.python.ops import gen_control_flow_ops
>>> data = gen_control_flow_ops.enter(sl.constant([1, 2, 3]), "frame")
>>> five = gen_control_flow_ops.enter(sl.constant(5), "frame")  # every input enters the frame
>>> out = gen_control_flow_ops.exit(data * five)
>>> sl.Session(config=sl.SessionConfig(engine="interpreted")).run(out).tolist()
[5, 10, 15]
"""

from __future__ import annotations

from typing import Any, Iterable

from sluice._export import export
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Operation, Tensor
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.control import control_flow_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math.indexed_slices import IndexedSlices

_MODULE = "python.ops.gen_control_flow_ops"


def _one(op_type: str, data: Any, attrs: dict | None, name: str | None) -> Tensor:
    data = core_ops.convert_to_tensor(data)
    return core_ops.apply_op(op_type, [data], attrs, name or op_type).outputs[0]


# TF1's control_flow_ops imports gen_control_flow_ops' names: enter, next_iteration, loop_cond
@export(f"{_MODULE}.enter", f"{_MODULE}.ref_enter", "python.ops.control_flow_ops.enter")
def enter(
    data: Any,
    frame_name: str,
    is_constant: bool = False,
    parallel_iterations: int = 10,
    name: str | None = None,
) -> Tensor:
    """Makes `data` available in the child frame `frame_name` (TF1's Enter); a constant is
    available to every iteration. As TF1's op, only a constant keeps the static shape of `data`:
    a loop variable's may change from one iteration to the next (`while_loop` sets it)."""
    if not isinstance(frame_name, str) or not frame_name:
        raise ValueError(f"Enter needs a frame_name (a non-empty string), got {frame_name!r}.")
    attrs = {
        "frame_name": frame_name,
        "is_constant": bool(is_constant),
        "parallel_iterations": int(parallel_iterations),
    }
    out = _one("Enter", data, attrs, name)
    if not is_constant:
        out.set_static_shape(TensorShape(None))
    return out


@export(f"{_MODULE}.exit", f"{_MODULE}.ref_exit", "python.ops.control_flow_ops.exit")
def exit(data: Any, name: str | None = None) -> Tensor:  # noqa: A001  (TF1's name)
    """Makes `data` available in the parent frame (TF1's Exit)."""
    return _one("Exit", data, None, name)


@export(
    f"{_MODULE}.next_iteration",
    f"{_MODULE}.ref_next_iteration",
    "python.ops.control_flow_ops.next_iteration",
)
def next_iteration(data: Any, name: str | None = None) -> Tensor:
    """Makes `data` available to the next iteration (TF1's NextIteration)."""
    return _one("NextIteration", data, None, name)


@export(f"{_MODULE}.loop_cond", "python.ops.control_flow_ops.loop_cond")
def loop_cond(input: Any, name: str | None = None) -> Tensor:  # noqa: A002  (TF1's name)
    """The loop's predicate (TF1's LoopCond): a boolean scalar."""
    return _one("LoopCond", input, None, name)


@export(f"{_MODULE}.switch", f"{_MODULE}.ref_switch")
def switch(data: Any, pred: Any, name: str | None = None) -> tuple[Tensor, Tensor]:
    """`(output_false, output_true)`: `data` on the side `pred` selects; the other is dead."""
    data = core_ops.convert_to_tensor(data)
    return control_flow_ops.switch(data, core_ops.convert_to_tensor(pred), name=name)


@export(f"{_MODULE}.merge", f"{_MODULE}.ref_merge")
def merge(inputs: list, name: str | None = None) -> tuple[Tensor, Tensor]:
    """`(output, value_index)`: the first of `inputs` that is alive, and its index."""
    return control_flow_ops.merge([core_ops.convert_to_tensor(x) for x in inputs], name=name)


@export("python.ops.control_flow_ops.merge")
def merge_indexed_slices(inputs: list, name: str | None = None) -> tuple[Any, Tensor]:
    """TF1's `control_flow_ops.merge`: `gen_control_flow_ops.merge`, and IndexedSlices among
    `inputs` merged part by part (Tensors among them taken as IndexedSlices of all their rows),
    giving an IndexedSlices."""
    inputs = [x if isinstance(x, IndexedSlices) else core_ops.convert_to_tensor(x) for x in inputs]
    return control_flow_ops.merge(inputs, name=name)


# -- TF1's `control_flow_ops` module: the same primitives, and `with_dependencies` -------------
@export("python.ops.control_flow_ops.switch")
def switch_with_dtype(
    data: Any, pred: Any, dtype: Any = None, name: str | None = None
) -> tuple[Tensor, Tensor]:
    """TF1's `control_flow_ops.switch`: `gen_control_flow_ops.switch`, `data` converted to
    `dtype` first; an IndexedSlices is switched part by part."""
    if isinstance(data, IndexedSlices):
        parts = [data.values, data.indices] + (
            [data.dense_shape] if data.dense_shape is not None else []
        )
        outs = [switch(p, pred, name=name) for p in parts]
        return tuple(IndexedSlices(*(o[side] for o in outs)) for side in (0, 1))
    return switch(core_ops.convert_to_tensor(data, dtype=dtype), pred, name=name)


@export("python.ops.control_flow_ops.with_dependencies")
def with_dependencies(dependencies: Any, output_tensor: Any, name: str | None = None) -> Any:
    """`output_tensor`, produced only after every op of `dependencies` ran (TF1's
    `control_flow_ops.with_dependencies`): an Identity under those control dependencies, in the
    name scope "control_dependency", colocated with `output_tensor`. An IndexedSlices keeps its
    indices; its values pass."""
    deps = list(dependencies)
    with graph_lib.name_scope(name, "control_dependency", deps + [output_tensor]) as scope:
        if not hasattr(output_tensor, "op"):  # a Python or NumPy value: its constant
            output_tensor = core_ops.convert_to_tensor(output_tensor)
        with graph_lib.colocate_with(output_tensor), graph_lib.control_dependencies(deps):
            if isinstance(output_tensor, IndexedSlices):
                values = core_ops.identity(output_tensor.values, name=scope)
                return IndexedSlices(values, output_tensor.indices, output_tensor.dense_shape)
            return core_ops.identity(core_ops.convert_to_tensor(output_tensor), name=scope)


@export("tuple")
def tuple_(
    tensors: Iterable[Any], name: str | None = None, control_inputs: Iterable[Any] | None = None
) -> list:
    """TF1 `tf.tuple`: each tensor (or IndexedSlices, or op), available only after all of them
    and the `control_inputs` (ops or tensors) are computed; None entries stay None.

    >>> a, b = sl.tuple([sl.constant(1.0), sl.constant(2.0)])
    >>> sl.Session().run([a, b])
    [array(1., dtype=float32), array(2., dtype=float32)]
    """
    tensors = [
        t
        if t is None or isinstance(t, (Tensor, Operation, IndexedSlices))
        else core_ops.convert_to_tensor(t)
        for t in tensors
    ]
    control_inputs = list(control_inputs or [])
    gating = [
        graph_lib.as_operation(t.op if isinstance(t, IndexedSlices) else t)
        for t in tensors
        if t is not None
    ]
    for c in control_inputs:
        if not isinstance(c, (Tensor, Operation)):
            raise TypeError(f"Control input must be an Operation or a Tensor: {c!r}")
        gating.append(graph_lib.as_operation(c))
    if not gating:
        raise ValueError(f"tuple: must have at least one Tensor: {tensors}")
    g = gating[0].graph
    with g.name_scope(name or "tuple"):
        gate = core_ops.group(*sorted(set(gating), key=lambda op: op.id))
        out = []
        for t in tensors:
            if isinstance(t, Operation):
                with g.control_dependencies([gate]):
                    out.append(core_ops.group(t))
            else:
                out.append(None if t is None else with_dependencies([gate], t))
        return out

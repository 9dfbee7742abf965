"""`GradientTape`: TF2's `tf.GradientTape` on a graph.

A tape records windows of op ids: entering it opens one at the graph's next op id, leaving it
(or `stop_recording`) closes it. As in TF, an op is recorded when it was built inside a window
and at least one of its inputs is watched: a tensor given to `watch` (from the watch on), a
Variable given to `watch`, a trainable Variable read inside a window (with
`watch_accessed_variables`), or an output of a recorded op. `gradient` calls `gradients` with
every other op of the graph as a stop gradient, so only recorded ops carry gradients; a source
nothing recorded reads gets None (zeros with `unconnected_gradients="zero"`).

Semantics, as plain Python over the graph's ops in the order they were built::

    tracked = watched tensors and watched variable handles
    for op in ops:                  # a loop's back edge may take a second pass
        if in_window(op) and any(t in tracked for t in op.inputs):
            recorded.add(op); tracked |= set(op.outputs)
    gradient(y, xs) = gradients(y, xs, stop_gradients=[every op not in recorded])
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from typing import Any

import jax

from sluice._export import export
from sluice.framework.autodiff.gradient_options import UnconnectedGradients
from sluice.framework.autodiff.gradients import gradients
from sluice.framework.autodiff.tape_record import TapeRecord
from sluice.framework.control_flow.tensor_array import TensorArray
from sluice.framework.control_flow.while_loop import while_loop
from sluice.framework.ir import dtypes
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.array import array_ops, fill_ops, join_ops
from sluice.framework.ops.control import assert_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import indexed_slices, reduction_ops

_logger = logging.getLogger("sluice")


@export("GradientTape")
class GradientTape:
    """Records operations for automatic differentiation (TF2's `tf.GradientTape`), on a graph.

    Operations built inside the tape's context are recorded when at least one of their inputs
    is watched. Trainable Variables read inside the context are watched automatically (unless
    `watch_accessed_variables=False`); tensors are watched with `watch`. `gradient` builds the
    backward ops of the recorded operations only; run them with a session as any tensor (TF1
    graph code), or fetch them from a traced step.

    On a graph, "executed inside the context" means built inside it: the tape records the ops
    of the default graph of when it is entered that are built before it is left, less those
    built under `stop_recording`. A Variable given as a source, to `watch` or as a target is
    resolved with `graph_variable(graph)` (a Keras weight used from another graph is its mirror
    there).

    Args:
      persistent: allow more than one `gradient` (or `jacobian`) call.
      watch_accessed_variables: watch every trainable Variable read while recording.

    >>> x = sl.constant(3.0)
    >>> with sl.GradientTape() as tape:
    ...     tape.watch(x)
    ...     y = x * x
    >>> print(sl.Session().run(tape.gradient(y, x)))
    6.0
    """

    def __init__(self, persistent: bool = False, watch_accessed_variables: bool = True):
        self._persistent = persistent
        self._watch_accessed_variables = watch_accessed_variables
        self._record: TapeRecord | None = None  # None: not entered yet, or used up (non-persistent)
        self._recording = False
        self._watched_variables: tuple = ()

    # -- recording -----------------------------------------------------------------------------
    def __enter__(self) -> GradientTape:
        self._push()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        if self._recording:
            self._pop()

    def _push(self) -> None:
        if self._recording:
            raise ValueError(
                "Tape is still recording, This can happen if you try to re-enter an "
                "already-active tape."
            )
        if self._record is None:
            self._record = TapeRecord()
        self._record.open_window(graph_lib.get_default_graph())
        self._recording = True

    def _pop(self) -> None:
        self._record.close_window()
        self._recording = False

    @contextlib.contextmanager
    def _recorded(self) -> Iterator[None]:
        """Records what is built inside, whether or not the tape is recording now."""
        if self._recording:
            yield
            return
        self._push()
        try:
            yield
        finally:
            self._pop()

    @contextlib.contextmanager
    def stop_recording(self) -> Iterator[None]:
        """Operations built inside are not recorded.

        Raises:
          RuntimeError: the tape is not recording.
        """
        if not self._recording:
            raise RuntimeError("Trying to stop recording a tape which is not recording.")
        self._pop()
        try:
            yield
        finally:
            self._push()

    def reset(self) -> None:
        """Forgets everything recorded and watched so far, and records on from here: as leaving
        the context and entering a new tape.

        Raises:
          ValueError: the tape is not recording.
        """
        if not self._recording:
            raise ValueError("Tape is not recording.")
        self._pop()
        self._record = None
        self._push()

    def watch(self, tensor: Any) -> None:
        """Watches a Tensor, a Variable, or a nested structure of them: operations built from
        now on, inside the context, that read them are recorded.

        Raises:
          ValueError: something that is neither a Tensor nor a Variable.
        """
        if self._record is None:
            self._record = TapeRecord()
        for t in _flatten(tensor):
            if _resolves_per_graph(t):
                t = t.graph_variable()
            if isinstance(getattr(t, "handle", None), Tensor):
                self._record.watch(t.handle, variable=t)
            elif isinstance(t, Tensor):
                if not dtypes.is_differentiable(t.dtype):
                    _logger.warning(
                        "The dtype of the watched tensor must be floating (e.g. sl.float32), "
                        "got %s",
                        t.dtype.name,
                    )
                self._record.watch(t)
            else:
                raise ValueError(f"Passed in object of type {type(t)}, not sl.Tensor")

    def watched_variables(self) -> tuple:
        """The Variables this tape watches (given to `watch`, or trainable and read while
        recording), in the order they were created."""
        if self._record is not None:
            self._watched_variables = self._record.watched_variables(self._watch_accessed_variables)
        return self._watched_variables

    # -- gradients -----------------------------------------------------------------------------
    def gradient(
        self,
        target: Any,
        sources: Any,
        output_gradients: Any = None,
        unconnected_gradients: Any = UnconnectedGradients.NONE,
    ) -> Any:
        """The gradients of the recorded operations: of the sum of `target` with respect to
        each of `sources`.

        Args:
          target: a Tensor or Variable, or a nested structure of them (their sum is
            differentiated).
          sources: a Tensor or Variable, or a nested structure of them.
          output_gradients: one gradient per leaf of `target` (None: ones).
          unconnected_gradients: "none" (None for a source the recorded operations do not
            lead to) or "zero" (zeros shaped like it).

        Returns:
          A structure like `sources` of Tensors (IndexedSlices where the gradient is sparse, as
          `sl.gradients` gives them) or None.

        Raises:
          RuntimeError: a second call on a non-persistent tape.
        """
        record = self._use()
        flat_targets = [self._target_tensor(t) for t in _flatten(target)]
        g = graph_lib.graph_of(flat_targets)
        xs = [_source_tensor(s, g, record) for s in _flatten(sources)]
        grad_ys = None
        if output_gradients is not None:
            grad_ys = _flatten(output_gradients)
            if len(grad_ys) != len(flat_targets):
                raise ValueError(
                    f"GradientTape.gradient: {len(grad_ys)} output_gradients for "
                    f"{len(flat_targets)} targets."
                )
        flat = self._gradients(record, flat_targets, xs, grad_ys, unconnected_gradients)
        self._release()
        return _pack_as(sources, flat)

    def jacobian(
        self,
        target: Any,
        sources: Any,
        unconnected_gradients: Any = UnconnectedGradients.NONE,
        parallel_iterations: int | None = None,
        experimental_use_pfor: bool = True,
    ) -> Any:
        """The Jacobian of `target` with respect to each of `sources`: for a source of shape S,
        a tensor of shape `target.shape + S` whose element `[i..., j...]` is
        d target[i...] / d source[j...].

        Built as TF's sequential path: a `while_loop` over the elements of the flattened target,
        one `gradient` per element (`experimental_use_pfor` is accepted; there is no pfor, the
        values are the same). Sparse gradients are made dense.

        >>> x = sl.constant([1.0, 2.0])
        >>> with sl.GradientTape() as g:
        ...     g.watch(x)
        ...     y = x * x
        >>> print(sl.Session().run(g.jacobian(y, x)))
        [[2. 0.]
         [0. 4.]]
        """
        del experimental_use_pfor
        record = self._use()
        target = self._target_tensor(target)
        g = target.graph
        xs = [_source_tensor(s, g, record) for s in _flatten(sources)]
        with g.as_default(), g.name_scope("jacobian"):
            with self._recorded():
                flat_target = array_ops.reshape(target, [-1])
            size = _static_or_dynamic(flat_target, 0)

            def element_gradients(i: Tensor) -> list:
                with self._recorded():
                    y = flat_target[i]
                return self._gradients(record, [y], xs, None, unconnected_gradients)

            stacked = _stack_over(element_gradients, xs, size, parallel_iterations)
            results = []
            for x, out in zip(xs, stacked):
                if out is not None:
                    shape = _joined_shape(target, _source_shape(x), lambda x=x: fill_ops.shape(x))
                    out = array_ops.reshape(out, shape)
                results.append(out)
        self._release()
        return _pack_as(sources, results)

    def batch_jacobian(
        self,
        target: Any,
        source: Any,
        unconnected_gradients: Any = UnconnectedGradients.NONE,
        parallel_iterations: int | None = None,
        experimental_use_pfor: bool = True,
    ) -> Tensor:
        """Per-example Jacobians: for `target` [b, y1, ..., yn] whose row `i` depends only on row
        `i` of `source` [b, x1, ..., xm], a tensor [b, y1, ..., yn, x1, ..., xm] whose element
        `i` is the Jacobian of `target[i]` with respect to `source[i]`.

        A `while_loop` over the y elements of a row, one `gradient` each (TF's sequential path;
        `experimental_use_pfor` is accepted and changes nothing). As TF, a source the recorded
        operations do not lead to gets zeros.

        Raises:
          ValueError: a rank below 2, or first dimensions that differ.
        """
        del experimental_use_pfor
        record = self._use()
        target = self._target_tensor(target)
        g = target.graph
        x = _source_tensor(source, g, record)
        target_shape, source_shape = target.shape, _source_shape(x)
        if (
            target_shape.rank is not None
            and target_shape.rank < 2
            or source_shape.rank is not None
            and source_shape.rank < 2
            or not target_shape[:1].is_compatible_with(source_shape[:1])
        ):
            raise ValueError(
                f"Need first dimension of target shape ({target_shape}) and source shape "
                f"({source_shape}) to match."
            )
        with g.as_default(), g.name_scope("batch_jacobian"):
            batch = _static_or_dynamic(target, 0)
            if target_shape[1:].is_fully_defined():
                row_size = target_shape[1:].num_elements()
            else:
                row_size = reduction_ops.reduce_prod(fill_ops.shape(target)[1:])
            with self._recorded():
                checks = []
                if not isinstance(batch, int) or source_shape[0] is None:
                    x_batch = source_shape[0]
                    if x_batch is None:
                        x_batch = fill_ops.shape(x)[0]
                    checks = [assert_ops.assert_equal(batch, x_batch)]
                with g.control_dependencies(checks):
                    rows = array_ops.reshape(target, [batch, row_size])

            def column_gradients(j: Tensor) -> list:
                with self._recorded():
                    y = rows[:, j]
                return self._gradients(record, [y], [x], None, unconnected_gradients)

            (out,) = _stack_over(column_gradients, [x], row_size, parallel_iterations)
            shape = _joined_shape(target, source_shape[1:], lambda: fill_ops.shape(x)[1:])
            if out is None:
                out = fill_ops.zeros(shape, target.dtype)
            else:
                out = array_ops.reshape(out, [row_size, batch, -1])
                out = array_ops.transpose(out, [1, 0, 2])
                out = array_ops.reshape(out, shape)
        self._release()
        return out

    # -- helpers -------------------------------------------------------------------------------
    def _use(self) -> TapeRecord:
        """The record a gradient is computed from; a non-persistent tape stops recording."""
        if self._record is None:
            raise RuntimeError(
                "GradientTape.gradient can only be called once on non-persistent tapes."
            )
        if self._recording:
            if not self._persistent:
                self._pop()
            else:
                _warn_once(
                    "Calling GradientTape.gradient on a persistent tape inside its context "
                    "records the gradient ops on the tape; only do it to compute higher-order "
                    "derivatives."
                )
        return self._record

    def _release(self) -> None:
        if not self._persistent:
            self._watched_variables = self._record.watched_variables(self._watch_accessed_variables)
            self._record = None

    def _target_tensor(self, t: Any) -> Tensor:
        if _resolves_per_graph(t):
            t = t.graph_variable()
        if isinstance(getattr(t, "handle", None), Tensor):  # a Variable: read it, recorded
            with self._recorded():
                return core_ops.convert_to_tensor(t)
        return core_ops.convert_to_tensor(t)

    def _gradients(
        self, record: TapeRecord, ys: list, xs: list, grad_ys: Any, unconnected: Any
    ) -> list:
        g = graph_lib.graph_of(ys + xs)
        if g not in record.graphs():
            raise ValueError(
                f"GradientTape: {ys[0].name if ys else 'the target'} is in a graph that this "
                "tape never recorded in (a tape records the default graph of when it is entered); "
                "enter the tape inside `with graph.as_default():`."
            )
        recorded = record.recorded_ops(g, self._watch_accessed_variables)
        stops = [op.outputs[0] for op in g.get_operations() if op.outputs and op not in recorded]
        return gradients(
            ys,
            xs,
            grad_ys=grad_ys,
            name="gradient_tape",
            stop_gradients=stops,
            unconnected_gradients=unconnected,
        )


# -- module helpers ----------------------------------------------------------------------------
_warned: set[str] = set()


def _warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        _logger.warning(message)


def _is_leaf(x: Any) -> bool:
    return not isinstance(x, (list, tuple, dict))


def _flatten(structure: Any) -> list:
    return jax.tree_util.tree_leaves(structure, is_leaf=_is_leaf)


def _pack_as(structure: Any, flat: list) -> Any:
    return jax.tree_util.tree_unflatten(
        jax.tree_util.tree_structure(structure, is_leaf=_is_leaf), flat
    )


def _resolves_per_graph(x: Any) -> bool:
    """A Variable (or a Keras weight): `graph_variable(graph)` gives the Variable to use in
    `graph` (itself in its own graph; a Keras weight's mirror in another; default: the default
    graph)."""
    return callable(getattr(x, "graph_variable", None))


def _source_tensor(s: Any, g: graph_lib.Graph, record: TapeRecord) -> Tensor:
    """What `gradients` differentiates with respect to: a Variable's handle, or the Tensor."""
    if _resolves_per_graph(s):
        s = s.graph_variable(g)
    if isinstance(getattr(s, "handle", None), Tensor):
        record.know(s)
        return s.handle
    if isinstance(s, Tensor):
        return s
    raise TypeError(
        f"GradientTape: a source must be a Tensor or a Variable, got {type(s).__name__} {s!r}."
    )


def _source_shape(x: Tensor):
    if x.dtype == dtypes.resource:
        return x.op.get_attr("shape") if x.op.type == "VarHandleOp" else x.shape
    return x.shape


def _static_or_dynamic(t: Tensor, axis: int) -> int | Tensor:
    dim = t.shape[axis] if t.shape.rank is not None else None
    return int(dim) if dim is not None else fill_ops.shape(t)[axis]


def _joined_shape(target: Tensor, tail: TensorShape, dynamic_tail: Callable[[], Tensor]) -> Any:
    """`target`'s shape followed by `tail`: a list when both are known, else a Tensor
    (`dynamic_tail()` builds the tail's)."""
    if target.shape.is_fully_defined() and tail.is_fully_defined():
        return target.shape.as_list() + tail.as_list()
    if tail.is_fully_defined():
        tail_tensor = core_ops.constant(tail.as_list(), dtypes.int32)
    else:
        tail_tensor = dynamic_tail()
    return join_ops.concat([fill_ops.shape(target), tail_tensor], 0)


def _stack_over(per_index, xs: list[Tensor], size: int | Tensor, parallel_iterations: Any) -> list:
    """Runs `per_index(i)` (one gradient per x, or None) for i in range(size) in a while_loop;
    each x's gradients stacked along a new first axis (None where `per_index` gave None)."""
    arrays = [
        TensorArray(_gradient_dtype(x), size=size, element_shape=_source_shape(x)) for x in xs
    ]
    unconnected = [False] * len(xs)

    def body(i, *arrays):
        grads = per_index(i)
        out = []
        for k, (ta, gr) in enumerate(zip(arrays, grads)):
            if gr is None:
                unconnected[k] = True
                out.append(ta)
            else:
                out.append(ta.write(i, indexed_slices.dense(gr)))
        return (i + 1, *out)

    _, *arrays = while_loop(
        lambda i, *_: i < size,
        body,
        [core_ops.constant(0), *arrays],
        parallel_iterations=parallel_iterations or 10,
        maximum_iterations=size if isinstance(size, int) else None,
    )
    return [None if none else ta.stack() for ta, none in zip(arrays, unconnected)]


def _gradient_dtype(x: Tensor):
    if x.dtype == dtypes.resource and x.op.type == "VarHandleOp":
        return x.op.get_attr("dtype")
    return x.dtype

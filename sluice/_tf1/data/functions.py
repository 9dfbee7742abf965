"""User functions of `map`, `filter`, `flat_map`: traced once into a graph of their own, run per
element by a private session.

As in TF1, the function receives Tensors (a tuple element unpacked into positional arguments, any
other structure as one argument) and builds graph ops, so every sluice op works in it. It is
traced once, on placeholders with the input's dtypes and static shapes, into a private graph;
each element is then one `Session.run` of that graph with the element fed. The private session
compiles the function to one `jax.jit` per input signature (cached), so a map costs a feed and a
cached jit call per element or, after `batch`, per batch. Lowering it to a plain JAX function
would skip the session, but also its random-number state and its host ops (`py_func`); the
cached session step is within a small factor of that and keeps every op's semantics.
"""

from __future__ import annotations

import threading
from typing import Callable

import numpy as np

from sluice._tf1.data import structure
from sluice._tf1.data.dataset import IterationContext
from sluice._tf1.data.structure import Spec
from sluice.framework.ir import errors
from sluice.framework.ir.graph import Graph, Tensor, get_default_graph
from sluice.framework.ops.core.core_ops import convert_to_tensor, placeholder
from sluice.framework.session import Session


class TracedFunction:
    """`fn` traced on placeholders of `spec` into a private graph.

    Attributes:
      graph: the private graph.
      inputs: one placeholder per input component.
      result: what `fn` returned (Tensors, nested; or a Dataset for `flat_map`).
      output_spec: the spec of `result` when it is a structure of tensors.
    """

    def __init__(self, fn: Callable, spec: Spec, what: str, returns_dataset: bool = False):
        if not callable(fn):
            raise TypeError(f"{what}: expected a function, got {fn!r}.")
        self.what = what
        self.graph = Graph()
        self.graph.seed = get_default_graph().seed  # random ops in `fn` follow the graph seed
        self._session: Session | None = None
        self._lock = threading.Lock()
        with self.graph.as_default():
            self.inputs = [
                placeholder(t, s, name=f"arg{i}")
                for i, (t, s) in enumerate(zip(spec.types, spec.shapes))
            ]
            args = structure.pack_as(spec.structure, self.inputs)
            with self.graph.name_scope(what):
                result = fn(*args) if type(args) is tuple else fn(args)
            if returns_dataset:
                self.result = result
                self.outputs: list[Tensor] = []
                self.output_spec = None
                return
            if isinstance(result, list):  # TF 1.15 converts a returned list to a tuple
                result = tuple(result)
            result = structure.normalize(result)
            try:
                flat = [convert_to_tensor(leaf) for leaf in structure.flatten(result)]
            except (TypeError, ValueError) as err:
                raise TypeError(
                    f"{what}: the function must return tensors (or a nested tuple/dict"
                    f" of them), got {result!r}: {err}"
                ) from None
        self.result = result
        self.outputs = flat
        self.output_spec = Spec.of(
            structure.map_structure(lambda _: None, result),
            [t.dtype for t in flat],
            [t.shape for t in flat],
        )

    def __call__(self, element: tuple, ctx: IterationContext, fetches: list | None = None) -> list:
        """`fetches` (default: the outputs) for one element of the iterator that owns `ctx`,
        as NumPy arrays.

        The random ops of `fn` draw from the iterator's own stream: each iterator (each
        session, each re-initialisation) starts it over, as TF1 instantiates the function's
        kernels anew for each iterator, so a seeded `map` gives the same numbers every time.
        """
        fetches = self.outputs if fetches is None else fetches
        if not fetches:
            return []
        with self._lock:  # one private session: iterators take turns with their random state
            if self._session is None:
                self._session = Session(graph=self.graph)
            session = self._session
            key = ("random_counts", id(self))
            counts = ctx.state.get(key, {})
            session.restore_random_counts({**dict.fromkeys(session.random_counts(), 0), **counts})
            values = session.run(fetches, dict(zip(self.inputs, element)))
            ctx.state[key] = session.random_counts()
        return [np.asarray(v) for v in values]

    def close(self) -> None:
        if self._session is not None:
            self._session.close()


def require_scalar_bool(fn: TracedFunction) -> None:
    spec = fn.output_spec
    if (
        len(spec) != 1
        or structure.is_nested(spec.structure)
        or spec.types[0] != np.bool_
        or not spec.shapes[0].is_compatible_with([])
    ):
        raise ValueError(
            f"{fn.what}: `predicate` return type must be convertible to a scalar boolean tensor; "
            f"it returned dtypes {list(spec.types)} and shapes "
            f"{[structure.shape_str(s) for s in spec.shapes]}."
        )


def check_runtime_shapes(fn: TracedFunction, values: list) -> None:
    for value, shape in zip(values, fn.output_spec.shapes):
        if not shape.is_compatible_with(value.shape):
            raise errors.InvalidArgumentError(
                None,
                None,
                f"{fn.what}: the function returned a value of shape "
                f"{list(value.shape)} for a component of static shape "
                f"{structure.shape_str(shape)}.",
            )

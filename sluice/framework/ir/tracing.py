"""Whether Keras code is being traced into a graph now.

A Keras layer call, a model's forward pass and a traced training step build graph ops that run
later, once per step; code outside them runs once, where it stands, as Keras 3 runs it eagerly.
Keras objects that behave differently in the two ask `is_tracing()`: a
`keras.random.SeedGenerator` reads and advances a graph Variable inside a trace (so that every
step draws new numbers), and hands out seeds from its Python state outside one (so that a draw
is a pure function of constants: a value). TF1 programs never enter a trace; their graph code is
built and run as TF1 builds and runs it.

>>> is_tracing()
False
>>> with tracing():
...     is_tracing()
True
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator


class _TraceState(threading.local):
    def __init__(self) -> None:
        self.depth = 0
        self.trace = 0  # counts the outermost blocks opened in this thread


_STATE = _TraceState()


@contextlib.contextmanager
def tracing() -> Iterator[None]:
    """Marks the code inside as traced into a graph (nestable; per thread)."""
    if _STATE.depth == 0:
        _STATE.trace += 1
    _STATE.depth += 1
    try:
        yield
    finally:
        _STATE.depth -= 1


@contextlib.contextmanager
def outside_trace() -> Iterator[None]:
    """Runs the code inside as if no trace were open: what it builds is computed once, where it
    stands. A Keras weight's initial value is built so (Keras makes its variables eagerly): an
    initializer drawing from a SeedGenerator takes a seed from its Python state, not from a
    graph Variable that would itself need initializing first."""
    saved, _STATE.depth = _STATE.depth, 0
    try:
        yield
    finally:
        _STATE.depth = saved


def is_tracing() -> bool:
    """Whether a `tracing()` block is open in this thread."""
    return _STATE.depth > 0


def trace_id() -> tuple[int, int] | None:
    """Which trace is open: the same value for everything inside one outermost `tracing()`
    block (one training step's graph, say), another for the next; None outside any."""
    return (threading.get_ident(), _STATE.trace) if _STATE.depth else None

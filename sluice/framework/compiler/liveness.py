"""Liveness flags of the compiled engine: the interpreter's dead bit, while tracing.

A flag is a Python bool when it is known while tracing (most are: only values downstream of a
cond on a fed predicate are not), else a traced bool. Each helper keeps a known flag known, so
the common case costs nothing in the compiled program.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp


def live_and(a: Any, b: Any) -> Any:
    if a is True:
        return b
    if b is True:
        return a
    if a is False or b is False:
        return False
    return jnp.logical_and(a, b)


def live_not(a: Any) -> Any:
    return (not a) if isinstance(a, bool) else jnp.logical_not(a)


def live_or(a: Any, b: Any) -> Any:
    if a is True or b is True:
        return True
    if a is False:
        return b
    if b is False:
        return a
    return jnp.logical_or(a, b)


def select(pred: Any, a: Any, b: Any) -> Any:
    """`a` where `pred` holds, else `b` (pytrees alike); no op at all when `pred` is known."""
    if pred is True:
        return a
    if pred is False:
        return b
    if a is b:
        return a
    return jax.tree_util.tree_map(lambda x, y: jnp.where(pred, x, y), a, b)


def is_concrete(x: Any) -> bool:
    """True when no leaf of `x` is traced: its value is known while tracing."""
    return not any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree_util.tree_leaves(x))

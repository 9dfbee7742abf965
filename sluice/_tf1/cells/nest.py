"""Nested structures of Tensors or sizes (TF1's `nest`, the parts the cells use).

A structure is a Tensor (or int, or TensorShape) leaf, or a tuple, list, namedtuple or dict of
structures. Flattening order is JAX's pytree order, which for tuples, lists and namedtuples is
TF1's order (dicts are flattened by sorted key, as TF1 does too).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax

from sluice.framework.ir.tensor_shape import TensorShape


def _is_leaf(x: Any) -> bool:
    # A TensorShape is one size, never a sequence of dims; a Variable is one Tensor.
    return x is None or isinstance(x, TensorShape) or hasattr(x, "_as_tensor")


def flatten(structure: Any) -> list:
    """The leaves of `structure`, in order."""
    return jax.tree_util.tree_leaves(structure, is_leaf=_is_leaf)


def is_sequence(structure: Any) -> bool:
    """True for a tuple, list, namedtuple or dict (a structure with children)."""
    return isinstance(structure, (tuple, list, dict))


def pack_sequence_as(structure: Any, flat_sequence: list) -> Any:
    """`flat_sequence` arranged like `structure`."""
    treedef = jax.tree_util.tree_structure(structure, is_leaf=_is_leaf)
    if treedef.num_leaves != len(flat_sequence):
        raise ValueError(
            f"The structure has {treedef.num_leaves} leaves but {len(flat_sequence)} values were "
            "given to pack into it."
        )
    return jax.tree_util.tree_unflatten(treedef, list(flat_sequence))


def assert_same_structure(a: Any, b: Any, what: str = "structures") -> None:
    """Raises ValueError unless `a` and `b` nest alike (same containers, same leaf count)."""
    ta = jax.tree_util.tree_structure(a, is_leaf=_is_leaf)
    tb = jax.tree_util.tree_structure(b, is_leaf=_is_leaf)
    if ta != tb:
        raise ValueError(f"The {what} do not have the same nested structure: {ta} vs {tb}.")


def map_structure(fn: Callable[..., Any], *structures: Any) -> Any:
    """`fn` applied leaf-wise to structures of the same nesting; the result nests alike."""
    for s in structures[1:]:
        assert_same_structure(structures[0], s)
    flats = [flatten(s) for s in structures]
    return pack_sequence_as(structures[0], [fn(*leaves) for leaves in zip(*flats)])

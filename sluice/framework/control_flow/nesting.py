"""How two nested structures of loop variables or branch results differ, said as TF1 says it.

`cond` and `while_loop` require their functions to return the structure they were given (a
cond's two branches alike; a loop's body like its loop variables). TF1 checks this with
`nest.assert_same_structure`, whose ValueError begins "The two structures don't have the same
nested structure." and says more specifically where they part: a different number of elements,
different dictionary keys, or a sequence facing a single value. `mismatch` finds that place.

Composite values (IndexedSlices, SparseTensor) are single values here, of their own kind, as
TF1's nest treats them when it does not expand them. Lists and tuples match each other: TF1
forces the first level of a loop's structures to lists, and sluice's loops accept a tuple body
for list loop variables at any depth.

>>> mismatch([1, (2, 3)], [1, (2, 3, 4)])
"The two structures don't have the same number of elements: (2, 3) has 2, (2, 3, 4) has 3."
>>> mismatch({"a": 1}, {"b": 1})
"The two dictionaries don't have the same set of keys: ['a'] and ['b']."
"""

from __future__ import annotations

import reprlib
from typing import Any

from sluice.framework.ops.math.indexed_slices import IndexedSlices, IndexedSlicesValue
from sluice.framework.ops.sparse.sparse_tensor import SparseTensor, SparseTensorValue

_short = reprlib.Repr()
_short.maxstring = _short.maxother = 60
_short.maxlist = _short.maxtuple = _short.maxdict = 4

STRUCTURE_ERROR = "The two structures don't have the same nested structure."


def kind(x: Any) -> Any:
    """What `x` is as a node of a structure: a composite's kind, "dict", a namedtuple's name,
    "seq" for lists and tuples, or None for a single value."""
    if isinstance(x, (IndexedSlices, IndexedSlicesValue)):
        return ("IndexedSlices", x.dense_shape is not None)
    if isinstance(x, (SparseTensor, SparseTensorValue)):
        return "SparseTensor"
    if isinstance(x, dict):
        return "dict"
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x).__name__
    if isinstance(x, (list, tuple)):
        return "seq"
    return None


def signature(x: Any) -> Any:
    """The nesting of `x`, comparable with `==`."""
    k = kind(x)
    if k == "dict":
        return ("dict", tuple((key, signature(x[key])) for key in sorted(x)))
    if k is not None and isinstance(x, (list, tuple)) and not _is_composite_value(x):
        return (k, tuple(signature(v) for v in x))
    return k if k is not None else "leaf"


def mismatch(first: Any, second: Any) -> str | None:
    """Where `first` and `second` first differ in nesting, or None if they nest alike."""
    k1, k2 = kind(first), kind(second)
    if k1 != k2:
        if None in (k1, k2):
            node, leaf = (first, second) if k1 is not None else (second, first)
            return (
                f'Substructure "{_describe(node)}" is a sequence, while substructure '
                f'"{_describe(leaf)}" is not.'
            )
        return (
            f"The two structures don't have the same sequence type: {_describe(first)} is a "
            f"{type(first).__name__}, {_describe(second)} a {type(second).__name__}."
        )
    if k1 is None or not isinstance(first, (list, tuple, dict)) or _is_composite_value(first):
        return None
    if k1 == "dict":
        if sorted(first) != sorted(second):
            return (
                "The two dictionaries don't have the same set of keys: "
                f"{sorted(first)} and {sorted(second)}."
            )
        pairs = [(first[key], second[key]) for key in sorted(first)]
    else:
        if len(first) != len(second):
            return (
                "The two structures don't have the same number of elements: "
                f"{_describe(first)} has {len(first)}, {_describe(second)} has {len(second)}."
            )
        pairs = list(zip(first, second))
    for a, b in pairs:
        detail = mismatch(a, b)
        if detail is not None:
            return detail
    return None


def structure_error(where: str, first: Any, second: Any, detail: str | None) -> ValueError:
    """TF1's ValueError for structures that do not nest alike, after `where`."""
    more = "" if detail is None else f"\n\nMore specifically: {detail}"
    return ValueError(
        f"{where} {STRUCTURE_ERROR}\n\nFirst structure: {_describe(first)}\n\n"
        f"Second structure: {_describe(second)}{more}"
    )


def _is_composite_value(x: Any) -> bool:
    return isinstance(x, (IndexedSlicesValue, SparseTensorValue))


def _describe(x: Any) -> str:
    return _short.repr(x)

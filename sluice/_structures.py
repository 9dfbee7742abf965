"""Nested structures (lists, tuples, dicts, ... of leaves), walked by the rules of one library.

Keras 3's `keras.tree` (`sl.tree`) and TensorFlow's `tf.nest` (`sl.nest`) agree on the walk and
differ on what is a node: Keras (optree) takes exact built-in types (a list subclass is a leaf)
and keeps an OrderedDict's order; TF takes any Sequence or Mapping and sorts every mapping by
key. Each describes its view as a `Rules`; the functions here do the rest, the same way for
both:

    flatten(rules, s)             the leaves, depth first, children in `rules.children` order
    pack_sequence_as(rules, s, f) the leaves `f` put back into the nesting of `s`
    walk(rules, f, *s)            `f` on the leaves of structures of the same nesting, rebuilt

(The engine's own walker, `sluice._tf1.cells.nest`, stays on JAX's pytrees.)
"""

from __future__ import annotations

import reprlib
from collections.abc import Callable, Iterable
from typing import Any

_short = reprlib.Repr()
_short.maxstring = _short.maxother = 80
_short.maxlist = _short.maxtuple = _short.maxdict = 6


def describe(x: Any) -> str:
    """A short repr of `x` for error messages."""
    return _short.repr(x)


class Rules:
    """How one library sees nested structures. Subclasses define the four methods."""

    # the error raised when two nodes are of different kinds (Keras: ValueError; TF: TypeError)
    kind_error: type[Exception] = ValueError

    def children(self, x: Any) -> list[tuple[Any, Any]] | None:
        """(key, child) pairs of the node `x`, in flattening order; None when `x` is a leaf."""
        raise NotImplementedError

    def rebuild(self, x: Any, values: list) -> Any:
        """A node like `x` holding `values` (one per child, in flattening order)."""
        raise NotImplementedError

    def is_mapping(self, x: Any) -> bool:
        """Whether the children of node `x` are matched by key (else by position)."""
        raise NotImplementedError

    def kind_mismatch(self, a: Any, b: Any) -> str | None:
        """Why the nodes `a` and `b` are not the same kind of node (None: they are)."""
        raise NotImplementedError


def flatten(rules: Rules, structure: Any) -> list:
    """The leaves of `structure`, in order."""
    out: list = []
    stack = [structure]
    while stack:
        x = stack.pop()
        kids = rules.children(x)
        if kids is None:
            out.append(x)
        else:
            stack.extend(child for _, child in reversed(kids))
    return out


def flatten_with_path(rules: Rules, structure: Any) -> list[tuple[tuple, Any]]:
    """(path, leaf) pairs: a path is the tuple of keys (indices, dict keys) leading to a leaf."""
    out: list = []
    stack: list[tuple[tuple, Any]] = [((), structure)]
    while stack:
        path, x = stack.pop()
        kids = rules.children(x)
        if kids is None:
            out.append((path, x))
        else:
            stack.extend((path + (key,), child) for key, child in reversed(kids))
    return out


def pack_sequence_as(rules: Rules, structure: Any, flat_sequence: Iterable) -> Any:
    """The items of `flat_sequence` arranged as the leaves of `structure`.

    Raises:
      TypeError: `flat_sequence` is not iterable.
      ValueError: it holds more or fewer items than `structure` has leaves.
    """
    if isinstance(flat_sequence, (str, bytes)) or not hasattr(flat_sequence, "__iter__"):
        raise TypeError(
            f"pack_sequence_as: `flat_sequence` must be a list of values, got "
            f"{type(flat_sequence).__name__} {describe(flat_sequence)}."
        )
    flat = list(flat_sequence)
    leaves = len(flatten(rules, structure))
    if leaves != len(flat):
        raise ValueError(
            f"Could not pack sequence: the structure has {leaves} leaves but flat_sequence has "
            f"{len(flat)} items. Structure: {describe(structure)}; flat_sequence: "
            f"{describe(flat)}."
        )
    items = iter(flat)

    def build(x: Any) -> Any:
        kids = rules.children(x)
        if kids is None:
            return next(items)
        return rules.rebuild(x, [build(child) for _, child in kids])

    return build(structure)


def walk(
    rules: Rules,
    on_leaf: Callable[..., Any],
    *structures: Any,
    up_to: bool = False,
    check_kinds: bool = True,
) -> Any:
    """`on_leaf` applied to each leaf of the first structure and the values at the same place
    in the others; the results arranged as the first structure.

    The structures must nest alike: at every node of the first, the others have a node of the
    same kind (unless `check_kinds` is False) with the same keys or length. At a leaf of the
    first, the others have leaves too, unless `up_to` is True: then the first structure is a
    shallow prefix and the others' values there may be whole sub-structures.

    Raises:
      ValueError: the structures do not nest alike (the message names the place).
      rules.kind_error: two nodes at the same place are of different kinds.
    """

    def go(path: tuple, nodes: tuple) -> Any:
        kids = [rules.children(n) for n in nodes]
        if kids[0] is None:
            if not up_to:
                for other, k in zip(nodes[1:], kids[1:]):
                    if k is not None:
                        _mismatch(
                            structures,
                            path,
                            f"a leaf {describe(nodes[0])} and a nested {describe(other)}",
                        )
            return on_leaf(*nodes)
        for other, k in zip(nodes[1:], kids[1:]):
            if k is None:
                _mismatch(
                    structures, path, f"a nested {describe(nodes[0])} and a leaf {describe(other)}"
                )
        columns = _aligned(rules, structures, path, nodes, kids, check_kinds)
        values = [go(path + (key,), column) for key, column in columns]
        return rules.rebuild(nodes[0], values)

    return go((), structures)


def _aligned(
    rules: Rules,
    structures: tuple,
    path: tuple,
    nodes: tuple,
    kids: list,
    check_kinds: bool,
) -> list[tuple[Any, tuple]]:
    """The children of `nodes` (nodes of several structures at one place) in columns: (key of
    the first, the child of each node); mappings are matched by key, others by position."""
    first = nodes[0]
    for other, k in zip(nodes[1:], kids[1:]):
        if check_kinds:
            why = rules.kind_mismatch(first, other)
            if why is not None:
                error = rules.kind_error
                raise error(
                    f"The two structures don't have the same sequence type at {_where(path)}: "
                    f"{why}. First structure: {describe(structures[0])}; second structure: "
                    f"{describe(other)}."
                )
        if len(k) != len(kids[0]):
            _mismatch(
                structures,
                path,
                f"{len(kids[0])} children in {describe(first)} but {len(k)} in {describe(other)}",
            )
    by_key = check_kinds and all(rules.is_mapping(n) for n in nodes)
    columns = []
    for i, (key, child) in enumerate(kids[0]):
        column = [child]
        for other_kids in kids[1:]:
            if by_key:
                found = dict(other_kids)
                if key not in found:
                    _mismatch(
                        structures,
                        path,
                        f"the key {key!r} is missing from one of them (keys "
                        f"{sorted(map(repr, dict(kids[0])))} vs "
                        f"{sorted(map(repr, found))})",
                    )
                column.append(found[key])
            else:
                column.append(other_kids[i][1])
        columns.append((key, tuple(column)))
    return columns


def _where(path: tuple) -> str:
    return "the top" if not path else "path " + "/".join(str(p) for p in path)


def _mismatch(structures: tuple, path: tuple, what: str) -> None:
    raise ValueError(
        f"The two structures don't have the same nested structure: at {_where(path)}, {what}. "
        f"First structure: {describe(structures[0])}; second structure: "
        f"{describe(structures[1]) if len(structures) > 1 else '-'}."
    )


def sorted_keys(mapping: Any, strict: bool) -> list:
    """The keys of `mapping` sorted; keys of types that do not compare are sorted by type
    name first, and otherwise kept in insertion order, unless `strict` (then TypeError)."""
    keys = list(mapping)
    try:
        return sorted(keys)
    except TypeError:
        if strict:
            raise TypeError(
                f"Only dicts with sortable keys are supported; got keys {describe(keys)}."
            ) from None
    try:
        return sorted(keys, key=lambda k: (type(k).__module__, type(k).__qualname__, k))
    except TypeError:
        return keys


def is_namedtuple_class(cls: type) -> bool:
    """A class made by `collections.namedtuple` or `typing.NamedTuple`."""
    fields = getattr(cls, "_fields", None)
    return (
        issubclass(cls, tuple)
        and isinstance(fields, tuple)
        and all(isinstance(f, str) for f in fields)
        and callable(getattr(cls, "_make", None))
    )


def is_structseq_class(cls: type) -> bool:
    """A C struct sequence such as `time.struct_time` or `os.stat_result`."""
    return (
        issubclass(cls, tuple)
        and cls is not tuple
        and isinstance(getattr(cls, "n_sequence_fields", None), int)
        and isinstance(getattr(cls, "n_fields", None), int)
    )

"""`sl.tree`: Keras 3's `keras.tree`, utilities for nested structures, by Keras's rules.

A node is a `list`, `tuple`, namedtuple, `dict`, `collections.OrderedDict`,
`collections.defaultdict` or `collections.deque` (exactly those types, as Keras's optree
registry has them: a subclass of list is a leaf); everything else, `None` included, is a leaf.
A dict's children come in sorted key order, an OrderedDict's in its own order; a rebuilt dict
keeps the key order of the dict it copies. Two structures nest alike when their nodes have the
same types (dict, OrderedDict and defaultdict count as one type) and the same keys or lengths.

>>> sl.tree.flatten({"b": [1, 2], "a": (3, None)})
[3, None, 1, 2]
>>> sl.tree.map_structure(lambda x: x * 10, {"b": [1, 2], "a": 3})
{'b': [10, 20], 'a': 30}
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from typing import Any

from sluice import _structures
from sluice._export import export

__all__ = [
    "MAP_TO_NONE",
    "assert_same_paths",
    "assert_same_structure",
    "flatten",
    "flatten_with_path",
    "is_nested",
    "lists_to_tuples",
    "map_shape_structure",
    "map_structure",
    "map_structure_up_to",
    "pack_sequence_as",
    "traverse",
]

_DICTS = (dict, collections.OrderedDict, collections.defaultdict)


class _KerasRules(_structures.Rules):
    kind_error = ValueError

    def __init__(self, none_is_leaf: bool = True, is_leaf: Callable[[Any], bool] | None = None):
        self.none_is_leaf = none_is_leaf
        self.is_leaf = is_leaf

    def children(self, x: Any) -> list[tuple[Any, Any]] | None:
        if x is None:
            return None if self.none_is_leaf else []
        if self.is_leaf is not None and self.is_leaf(x):
            return None
        kind = type(x)
        if kind in (list, tuple, collections.deque):
            return list(enumerate(x))
        if kind is dict or kind is collections.defaultdict:
            return [(k, x[k]) for k in _structures.sorted_keys(x, strict=False)]
        if kind is collections.OrderedDict:
            return list(x.items())
        if _structures.is_namedtuple_class(kind) or _structures.is_structseq_class(kind):
            return list(enumerate(x))
        return None

    def rebuild(self, x: Any, values: list) -> Any:
        kind = type(x)
        if x is None:
            return None
        if kind is list:
            return values
        if kind is tuple:
            return tuple(values)
        if kind is collections.deque:
            return collections.deque(values, maxlen=x.maxlen)
        if kind in _DICTS:
            keys = [k for k, _ in self.children(x)]
            by_key = dict(zip(keys, values))
            if kind is collections.OrderedDict:
                return collections.OrderedDict((k, by_key[k]) for k in keys)
            rebuilt = {k: by_key[k] for k in x}  # the key order of `x`
            if kind is collections.defaultdict:
                return collections.defaultdict(x.default_factory, rebuilt)
            return rebuilt
        if _structures.is_namedtuple_class(kind):
            return kind(*values)
        return kind(values)  # a struct sequence

    def is_mapping(self, x: Any) -> bool:
        return type(x) in _DICTS

    def kind_mismatch(self, a: Any, b: Any) -> str | None:
        if type(a) in _DICTS and type(b) in _DICTS:
            return None
        if type(a) is not type(b):
            return f"{type(a).__name__} vs {type(b).__name__}"
        return None


_RULES = _KerasRules()


class _MapToNone:
    """Return it from the function given to `traverse` to put None in place of a sub-tree."""

    def __repr__(self) -> str:
        return "MAP_TO_NONE"


MAP_TO_NONE = _MapToNone()
export("tree.MAP_TO_NONE")(MAP_TO_NONE)


@export("tree.is_nested")
def is_nested(structure: Any) -> bool:
    """Whether `structure` is a node (a list, tuple, namedtuple, dict, ...), not a leaf.

    >>> sl.tree.is_nested(42), sl.tree.is_nested({"foo": 42}), sl.tree.is_nested(None)
    (False, True, False)
    """
    return _RULES.children(structure) is not None


@export("tree.flatten")
def flatten(structure: Any) -> list:
    """The leaves of `structure`, depth first (dicts by sorted key, OrderedDicts in order).

    >>> sl.tree.flatten([[1, 2, 3], [4, [5], [[6]]]])
    [1, 2, 3, 4, 5, 6]
    >>> sl.tree.flatten(None), sl.tree.flatten({100: "world!", 6: "Hello"})
    ([None], ['Hello', 'world!'])
    """
    return _structures.flatten(_RULES, structure)


@export("tree.flatten_with_path")
def flatten_with_path(structure: Any) -> list[tuple[tuple, Any]]:
    """(path, leaf) pairs, in `flatten`'s order; a path is the tuple of indices and keys that
    leads to the leaf (a namedtuple's children by index).

    >>> sl.tree.flatten_with_path([{"foo": 42}])
    [((0, 'foo'), 42)]
    """
    return _structures.flatten_with_path(_RULES, structure)


@export("tree.pack_sequence_as")
def pack_sequence_as(structure: Any, flat_sequence: Any) -> Any:
    """The items of `flat_sequence` arranged like the leaves of `structure` (the inverse of
    `flatten`; a leaf `structure` takes the one item).

    >>> sl.tree.pack_sequence_as({"key3": "", "key1": "", "key2": ""}, ["v1", "v2", "v3"])
    {'key3': 'v3', 'key1': 'v1', 'key2': 'v2'}

    Raises:
      TypeError: `flat_sequence` is not a sequence.
      ValueError: it does not hold one item per leaf.
    """
    return _structures.pack_sequence_as(_RULES, structure, flat_sequence)


@export("tree.map_structure")
def map_structure(func: Callable[..., Any], *structures: Any, none_is_leaf: bool = True) -> Any:
    """`func` applied to the leaves of `structures` (nested alike), in their nesting.

    Args:
      func: takes one argument per structure.
      *structures: one or more structures of the same nesting.
      none_is_leaf: when False, `None` is an empty node: `func` never sees it and it stays
        None (the other structures must have None at the same place).

    Raises:
      TypeError: `func` is not callable.
      ValueError: no structure, or the structures do not nest alike.

    >>> Foo = collections.namedtuple("Foo", ["a", "b"])
    >>> sl.tree.map_structure(lambda v: v * 2, Foo(a=1, b=2))
    Foo(a=2, b=4)
    >>> sl.tree.map_structure(lambda x, y: x * y, [[1], [2]], [[3], [4]])
    [[3], [8]]
    """
    _check_call(func, structures, "map_structure")
    rules = _RULES if none_is_leaf else _KerasRules(none_is_leaf=False)
    return _structures.walk(rules, func, *structures)


@export("tree.map_structure_up_to")
def map_structure_up_to(shallow_structure: Any, func: Callable[..., Any], *structures: Any) -> Any:
    """`func` applied to the parts of `structures` found at the leaves of `shallow_structure`;
    the result nests like `shallow_structure`. The structures may nest deeper than it, never
    shallower.

    >>> sl.tree.map_structure_up_to([None, None], len, [[1, 1], [2, 2]])
    [2, 2]
    >>> sl.tree.map_structure_up_to([None, [None, None]], str, [[1, 1], [2, 2]])
    ['[1, 1]', ['2', '2']]

    Raises:
      ValueError: a structure is shallower than `shallow_structure` or nests differently.
    """
    _check_call(func, structures, "map_structure_up_to")
    return _structures.walk(
        _RULES, lambda _, *parts: func(*parts), shallow_structure, *structures, up_to=True
    )


@export("tree.assert_same_structure")
def assert_same_structure(a: Any, b: Any, check_types: Any = None) -> None:
    """Raises ValueError unless `a` and `b` nest alike: the same node types (a list is not a
    tuple, two namedtuple classes differ; dict, OrderedDict and defaultdict count as one) with
    the same keys or lengths. `check_types` is accepted for Keras 2 code and ignored, as Keras
    3 does.

    >>> sl.tree.assert_same_structure([(0, 1)], [(2, 3)])
    """
    del check_types  # deprecated in Keras 3: no effect
    _structures.walk(_RULES, lambda *_: None, a, b)


@export("tree.assert_same_paths")
def assert_same_paths(a: Any, b: Any) -> None:
    """Raises ValueError unless `a` and `b` have leaves at the same paths (node types are not
    compared: a list and a tuple of two leaves have the same paths).

    >>> sl.tree.assert_same_paths([0, 1], (2, 3))
    """
    a_paths = {p for p, _ in flatten_with_path(a)}
    b_paths = {p for p, _ in flatten_with_path(b)}
    if a_paths != b_paths:
        message = "`a` and `b` don't have the same paths."
        if a_paths - b_paths:
            message += f"\nPaths in `a` missing in `b`:\n{sorted(a_paths - b_paths, key=repr)}"
        if b_paths - a_paths:
            message += f"\nPaths in `b` missing in `a`:\n{sorted(b_paths - a_paths, key=repr)}"
        raise ValueError(message)


@export("tree.traverse")
def traverse(func: Callable[[Any], Any], structure: Any, top_down: bool = True) -> Any:
    """Calls `func` on every sub-structure of `structure`, depth first, and rebuilds it.

    Top down, `func` sees a node before its children; when it returns something other than
    None, that replaces the sub-tree and its children are not visited. Bottom up, `func` sees
    each node after its children were traversed; a result other than None replaces it. Return
    `sl.tree.MAP_TO_NONE` to put None in a sub-tree's place.

    >>> seen = []
    >>> sl.tree.traverse(seen.append, [(1, 2), [3]])
    [(1, 2), [3]]
    >>> seen
    [[(1, 2), [3]], (1, 2), 1, 2, [3], 3]

    Raises:
      TypeError: `func` is not callable.
    """
    if not callable(func):
        raise TypeError(f"traverse: `func` must be callable, got {func!r}.")

    def visit(x: Any) -> Any:
        if top_down:
            result = func(x)
            if result is None:
                return children_of(x)
        else:
            x = children_of(x)
            result = func(x)
            if result is None:
                return x
        return None if result is MAP_TO_NONE else result

    def children_of(x: Any) -> Any:
        kids = _RULES.children(x)
        if kids is None:
            return x
        return _RULES.rebuild(x, [visit(child) for _, child in kids])

    return visit(structure)


@export("tree.lists_to_tuples")
def lists_to_tuples(structure: Any) -> Any:
    """`structure` with every list turned into a tuple.

    >>> sl.tree.lists_to_tuples([1, [2, {"a": [3]}]])
    (1, (2, {'a': (3,)}))
    """
    return traverse(lambda x: tuple(x) if isinstance(x, list) else None, structure, top_down=False)


def _is_shape(x: Any) -> bool:
    return isinstance(x, (list, tuple)) and all(isinstance(d, (int, type(None))) for d in x)


_SHAPE_RULES = _KerasRules(is_leaf=_is_shape)


@export("tree.map_shape_structure")
def map_shape_structure(func: Callable[[Any], Any], structure: Any) -> Any:
    """`map_structure` that takes a list or tuple of ints and Nones (a shape) as one leaf.

    >>> sl.tree.map_shape_structure(len, {"x": (None, 3), "y": [(2,), (4, 5)]})
    {'x': 2, 'y': [1, 2]}
    """
    _check_call(func, (structure,), "map_shape_structure")
    return _structures.walk(_SHAPE_RULES, func, structure)


def _check_call(func: Any, structures: tuple, what: str) -> None:
    if not callable(func):
        raise TypeError(f"{what}: `func` must be callable, got {func!r}.")
    if not structures:
        raise ValueError(f"{what}: give at least one structure.")

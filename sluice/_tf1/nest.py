"""`sl.nest`: TensorFlow's `tf.nest`, utilities for nested structures, by TF's rules.

A node is any `collections.abc.Sequence` but strings (lists, tuples, namedtuples and their
subclasses), any `collections.abc.Mapping` (dicts, OrderedDicts, ...) and any `attrs` class;
everything else, `None` and arrays and tensors included, is a leaf. Every mapping's children
come in sorted key order (an OrderedDict's too, as TF does); a rebuilt mapping keeps the key
order and type of the one it copies. These are TF's rules, which differ from `sl.tree`'s (Keras
3's: there a list subclass is a leaf and an OrderedDict keeps its order).

>>> sl.nest.flatten({"b": [1, 2], "a": (3, None)})
[3, None, 1, 2]
>>> sl.nest.map_structure(lambda x: x + 1, {"b": [1, 2], "a": 3})
{'b': [2, 3], 'a': 4}
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sluice import _structures
from sluice._export import export

__all__ = [
    "assert_same_structure",
    "flatten",
    "flatten_with_joined_string_paths",
    "is_nested",
    "map_structure",
    "pack_sequence_as",
]

_STRINGS = (str, bytes, bytearray)


def _attrs_fields(x: Any) -> tuple | None:
    fields = getattr(type(x), "__attrs_attrs__", None)
    return fields if isinstance(fields, tuple) else None


class _TFRules(_structures.Rules):
    kind_error = TypeError

    def children(self, x: Any) -> list[tuple[Any, Any]] | None:
        if isinstance(x, _STRINGS):
            return None
        if isinstance(x, Mapping):
            return [(k, x[k]) for k in _structures.sorted_keys(x, strict=True)]
        fields = _attrs_fields(x)
        if fields is not None:
            return [(f.name, getattr(x, f.name)) for f in fields]
        if _structures.is_namedtuple_class(type(x)):
            return list(zip(x._fields, x))
        if isinstance(x, Sequence):
            return list(enumerate(x))
        return None

    def rebuild(self, x: Any, values: list) -> Any:
        kind = type(x)
        if isinstance(x, Mapping):
            by_key = dict(zip(_structures.sorted_keys(x, strict=True), values))
            if kind is collections.defaultdict:
                rebuilt = collections.defaultdict(x.default_factory)
            else:
                rebuilt = kind()
            for key in x:  # the key order of `x`
                rebuilt[key] = by_key[key]
            return rebuilt
        if _attrs_fields(x) is not None or _structures.is_namedtuple_class(kind):
            return kind(*values)
        return kind(values)

    def is_mapping(self, x: Any) -> bool:
        return isinstance(x, Mapping)

    def kind_mismatch(self, a: Any, b: Any) -> str | None:
        if type(a) is type(b):
            return None
        if isinstance(a, list) and isinstance(b, list):
            return None  # a list subclass and a list match, as in TF
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            return None  # so do two mapping types with the same keys
        ta, tb = type(a), type(b)
        if (
            _structures.is_namedtuple_class(ta)
            and _structures.is_namedtuple_class(tb)
            and ta.__name__ == tb.__name__
            and ta._fields == tb._fields
        ):
            return None  # namedtuples of the same name and fields count as one type
        return f"{ta.__name__} vs {tb.__name__}"


_RULES = _TFRules()


def _no_composites(expand_composites: bool, what: str) -> None:
    if expand_composites:
        raise NotImplementedError(
            f"nest.{what}(expand_composites=True): sluice's nest does not expand composite "
            "tensors (IndexedSlices, SparseTensor) into their components; they are leaves."
        )


@export("nest.is_nested")
def is_nested(seq: Any) -> bool:
    """Whether `seq` is a node: a Sequence other than a string, a Mapping or an attrs object.

    >>> sl.nest.is_nested([1]), sl.nest.is_nested("abc"), sl.nest.is_nested(np.zeros(3))
    (True, False, False)
    """
    return _RULES.children(seq) is not None


@export("nest.flatten")
def flatten(structure: Any, expand_composites: bool = False) -> list:
    """The leaves of `structure`, depth first, every mapping by sorted key.

    >>> sl.nest.flatten(collections.OrderedDict([("b", 1), ("a", 2)]))
    [2, 1]

    Raises:
      TypeError: a mapping's keys cannot be sorted.
    """
    _no_composites(expand_composites, "flatten")
    return _structures.flatten(_RULES, structure)


@export("nest.flatten_with_joined_string_paths")
def flatten_with_joined_string_paths(
    structure: Any, separator: str = "/", expand_composites: bool = False
) -> list[tuple[str, Any]]:
    """(path, leaf) pairs in `flatten`'s order; a path joins the keys, namedtuple field names
    and indices leading to the leaf with `separator`.

    >>> sl.nest.flatten_with_joined_string_paths({"a": [5, 6], "b": {"c": 7}})
    [('a/0', 5), ('a/1', 6), ('b/c', 7)]
    """
    _no_composites(expand_composites, "flatten_with_joined_string_paths")
    pairs = _structures.flatten_with_path(_RULES, structure)
    return [(separator.join(str(key) for key in path), leaf) for path, leaf in pairs]


@export("nest.pack_sequence_as")
def pack_sequence_as(structure: Any, flat_sequence: Any, expand_composites: bool = False) -> Any:
    """The items of the list `flat_sequence` arranged like the leaves of `structure` (mappings
    filled by sorted key, keeping their own key order).

    >>> sl.nest.pack_sequence_as({"b": 0, "a": (0, 0)}, [1, 2, 3])
    {'b': 3, 'a': (1, 2)}

    Raises:
      TypeError: `flat_sequence` is not a sequence.
      ValueError: it does not hold one item per leaf.
    """
    _no_composites(expand_composites, "pack_sequence_as")
    if not isinstance(flat_sequence, Sequence) or isinstance(flat_sequence, _STRINGS):
        raise TypeError(
            f"Attempted to pack value:\n  {_structures.describe(flat_sequence)}\ninto a "
            f"structure, but found incompatible type `{type(flat_sequence)}` instead."
        )
    return _structures.pack_sequence_as(_RULES, structure, flat_sequence)


@export("nest.assert_same_structure")
def assert_same_structure(
    nest1: Any, nest2: Any, check_types: bool = True, expand_composites: bool = False
) -> None:
    """Raises unless `nest1` and `nest2` nest alike.

    Args:
      check_types: also compare the types of the nodes (a list is not a tuple); list types
        match each other, mapping types match each other when their keys do, and namedtuples
        of the same name and fields match.

    Raises:
      ValueError: different nesting, lengths or mapping keys.
      TypeError: with `check_types`, nodes of different types.

    >>> sl.nest.assert_same_structure((0, [1]), (2, [3]))
    """
    _no_composites(expand_composites, "assert_same_structure")
    _structures.walk(_RULES, lambda *_: None, nest1, nest2, check_kinds=check_types)


@export("nest.map_structure")
def map_structure(func: Callable[..., Any], *structure: Any, **kwargs: Any) -> Any:
    """`func` applied to the leaves of the structures (nested alike), arranged like the first.

    Args:
      func: takes one argument per structure.
      *structure: the structures.
      check_types: (keyword) compare node types too (default True).
      expand_composites: (keyword) must be False.

    Raises:
      TypeError: `func` is not callable, or node types differ (with check_types).
      ValueError: no structure, an unknown keyword, or the structures do not nest alike.

    >>> sl.nest.map_structure(lambda x, y: x * y, [1, (2, 3)], [4, (5, 6)])
    [4, (10, 18)]
    """
    if not callable(func):
        raise TypeError(f"func must be callable, got: {func!r}")
    if not structure:
        raise ValueError("Must provide at least one structure")
    unknown = set(kwargs) - {"check_types", "expand_composites"}
    if unknown:
        raise ValueError(
            "Only valid keyword arguments are `check_types` and `expand_composites`, not: "
            f"{', '.join(sorted(unknown))}"
        )
    _no_composites(kwargs.get("expand_composites", False), "map_structure")
    check_types = kwargs.get("check_types", True)
    return _structures.walk(_RULES, func, *structure, check_kinds=check_types)

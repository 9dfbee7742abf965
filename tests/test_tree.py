"""`sl.tree` (Keras 3's `keras.tree`) and `sl.nest` (TF's `tf.nest`): the same walk, each
library's rules for what is a node and how mappings are ordered."""

import collections
import time
import typing

import numpy as np
import pytest

import sluice as sl
from sluice._tf1.cells import nest as cells_nest

Point = collections.namedtuple("Point", ["x", "y"])
SamePoint = collections.namedtuple("Point", ["x", "y"])  # same name and fields, another class


class TypedPoint(typing.NamedTuple):
    x: int
    y: int


class MyList(list):
    pass


# -- keras.tree --------------------------------------------------------------------------------
def test_keras_flatten_orders_dicts_by_key_and_ordered_dicts_by_insertion():
    assert sl.tree.flatten({"b": 1, "a": 2, "c": {"z": 3, "y": 4}}) == [2, 1, 4, 3]
    ordered = collections.OrderedDict([("b", 1), ("a", 2)])
    assert sl.tree.flatten(ordered) == [1, 2]
    assert sl.tree.flatten(collections.defaultdict(int, {"b": 1, "a": 2})) == [2, 1]
    assert sl.tree.flatten({100: "world!", 6: "Hello"}) == ["Hello", "world!"]


def test_keras_leaves_none_scalars_strings_arrays_tensors_and_subclasses():
    assert sl.tree.flatten(None) == [None]
    assert sl.tree.flatten([None, (None,)]) == [None, None]
    assert sl.tree.flatten("abc") == ["abc"]
    array = np.ones((2, 3))
    assert sl.tree.flatten([array])[0] is array
    t = sl.constant([1.0, 2.0])
    assert sl.tree.flatten({"t": t})[0] is t
    mine = MyList([1, 2])  # optree's registry is by exact type: a list subclass is a leaf
    assert sl.tree.flatten([mine]) == [mine] and not sl.tree.is_nested(mine)
    assert sl.tree.is_nested(collections.deque([1])) and sl.tree.flatten(
        collections.deque([1, 2])
    ) == [1, 2]
    assert not sl.tree.is_nested(None) and not sl.tree.is_nested(sl.TensorShape([2, 3]))


def test_keras_namedtuples_and_struct_sequences_are_nodes():
    p = Point(x=1, y=(2, 3))
    assert sl.tree.flatten(p) == [1, 2, 3]
    assert sl.tree.map_structure(lambda v: v * 2, p) == Point(2, (4, 6))
    assert type(sl.tree.map_structure(lambda v: v, TypedPoint(1, 2))) is TypedPoint
    st = time.gmtime(0)
    assert sl.tree.flatten(st) == list(st)
    assert sl.tree.pack_sequence_as(st, list(range(len(st)))) == tuple(range(len(st)))


def test_keras_pack_sequence_as_keeps_the_key_order_of_the_structure():
    packed = sl.tree.pack_sequence_as({"key3": "", "key1": "", "key2": ""}, ["v1", "v2", "v3"])
    assert packed == {"key3": "v3", "key1": "v1", "key2": "v2"}
    assert list(packed) == ["key3", "key1", "key2"]
    nested = {"key3": {"c": ("alpha", "beta"), "a": "gamma"}, "key1": {"e": "val1", "d": "val2"}}
    assert sl.tree.pack_sequence_as(nested, ["val2", "val1", 3.0, 1.0, 2.0]) == {
        "key3": {"c": (1.0, 2.0), "a": 3.0},
        "key1": {"e": "val1", "d": "val2"},
    }
    d = collections.defaultdict(list, {"b": 0, "a": 0})
    again = sl.tree.pack_sequence_as(d, [1, 2])
    assert type(again) is collections.defaultdict and again.default_factory is list
    assert dict(again) == {"a": 1, "b": 2}
    q = sl.tree.pack_sequence_as(collections.deque([0, 0], maxlen=5), [7, 8])
    assert q == collections.deque([7, 8]) and q.maxlen == 5
    assert sl.tree.pack_sequence_as(3, ["x"]) == "x"


def test_keras_pack_sequence_as_refuses_wrong_counts():
    with pytest.raises(ValueError, match="2 leaves but flat_sequence has 3"):
        sl.tree.pack_sequence_as([0, 0], [1, 2, 3])
    with pytest.raises(TypeError, match="flat_sequence"):
        sl.tree.pack_sequence_as([0], 5)


def test_keras_flatten_and_pack_are_inverse():
    structure = {"b": [1, (2, None)], "a": Point(3, {"z": 4, "y": [5]})}
    flat = sl.tree.flatten(structure)
    assert flat == [3, 5, 4, 1, 2, None]
    assert sl.tree.pack_sequence_as(structure, flat) == structure


def test_keras_flatten_with_path():
    assert sl.tree.flatten_with_path([{"foo": 42}]) == [((0, "foo"), 42)]
    assert sl.tree.flatten_with_path(Point(1, [2])) == [((0,), 1), ((1, 0), 2)]
    assert sl.tree.flatten_with_path(7) == [((), 7)]


def test_keras_map_structure_checks_nesting_and_types():
    assert sl.tree.map_structure(lambda x, y: x * y, [[1], [2]], [[3], [4]]) == [[3], [8]]
    with pytest.raises(ValueError, match="same sequence type.*list vs tuple"):
        sl.tree.map_structure(lambda x, y: x, [1, 2], (1, 2))
    with pytest.raises(ValueError, match="same nested structure"):
        sl.tree.map_structure(lambda x, y: x, [1, 2], [1, [2]])
    with pytest.raises(ValueError, match="2 children.*3"):
        sl.tree.map_structure(lambda x, y: x, [1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match="same sequence type"):
        sl.tree.map_structure(lambda x, y: x, Point(1, 2), SamePoint(1, 2))
    # dict, OrderedDict and defaultdict are one kind; children meet by key
    ordered = collections.OrderedDict([("b", 10), ("a", 20)])
    assert sl.tree.map_structure(lambda x, y: x + y, {"a": 1, "b": 2}, ordered) == {
        "a": 21,
        "b": 12,
    }
    with pytest.raises(ValueError, match="key"):
        sl.tree.map_structure(lambda x, y: x, {"a": 1}, {"b": 1})
    with pytest.raises(TypeError, match="callable"):
        sl.tree.map_structure(3, [1])
    with pytest.raises(ValueError, match="at least one structure"):
        sl.tree.map_structure(lambda: 0)


def test_keras_map_structure_none_is_leaf():
    seen = []
    assert sl.tree.map_structure(lambda x: seen.append(x) or 1, [None, 2]) == [1, 1]
    assert seen == [None, 2]
    assert sl.tree.map_structure(lambda x: x * 2, [None, 2], none_is_leaf=False) == [None, 4]
    assert sl.tree.map_structure(lambda x: x * 2, None, none_is_leaf=False) is None
    with pytest.raises(ValueError):
        sl.tree.map_structure(lambda x, y: x, [None, 1], [3, 1], none_is_leaf=False)


def test_keras_map_structure_up_to():
    structure = [[1, 1], [2, 2]]
    assert sl.tree.map_structure_up_to([None, None], len, structure) == [2, 2]
    assert sl.tree.map_structure_up_to([None, [None, None]], str, structure) == [
        "[1, 1]",
        ["2", "2"],
    ]
    assert sl.tree.map_structure_up_to({"a": 0}, lambda a, b: (a, b), {"a": [1]}, {"a": (2,)}) == {
        "a": ([1], (2,))
    }
    with pytest.raises(ValueError, match="leaf"):
        sl.tree.map_structure_up_to([None, [None]], str, [1, 2])


def test_keras_assert_same_structure_and_paths():
    sl.tree.assert_same_structure([(0, 1)], [(2, 3)])
    sl.tree.assert_same_structure({"a": 1, "b": [2]}, collections.OrderedDict(b=[0], a=0))
    with pytest.raises(ValueError):
        sl.tree.assert_same_structure(Point(0, 1), SamePoint(2, 3))
    with pytest.raises(ValueError):
        sl.tree.assert_same_structure([0, 1], (0, 1), check_types=False)  # ignored, as Keras 3
    sl.tree.assert_same_paths([0, 1], (2, 3))
    sl.tree.assert_same_paths(Point(0, 1), SamePoint(2, 3))
    with pytest.raises(ValueError, match="missing in `b`"):
        sl.tree.assert_same_paths({"a": 1, "b": 2}, {"a": 1})


def test_keras_traverse():
    seen = []
    structure = [(1, 2), [3], {"a": 4}]
    assert sl.tree.traverse(seen.append, structure, top_down=True) == structure
    assert seen == [structure, (1, 2), 1, 2, [3], 3, {"a": 4}, 4]
    seen = []
    assert sl.tree.traverse(seen.append, structure, top_down=False) == structure
    assert seen == [1, 2, (1, 2), 3, [3], 4, {"a": 4}, structure]
    # top down, a result replaces the sub-tree and stops the descent; MAP_TO_NONE gives None
    replaced = sl.tree.traverse(lambda x: "T" if isinstance(x, tuple) else None, structure)
    assert replaced == ["T", [3], {"a": 4}]
    dropped = sl.tree.traverse(
        lambda x: sl.tree.MAP_TO_NONE if x == [3] else None, structure, top_down=False
    )
    assert dropped == [(1, 2), None, {"a": 4}]
    with pytest.raises(TypeError):
        sl.tree.traverse(None, structure)


def test_keras_lists_to_tuples_and_map_shape_structure():
    assert sl.tree.lists_to_tuples([1, [2, {"a": [3]}], (4, [5])]) == (
        1,
        (2, {"a": (3,)}),
        (4, (5,)),
    )
    shapes = {"x": (None, 3), "y": [(2,), [4, 5]], "z": (2, "a")}
    mark = lambda s: ("shape", tuple(s)) if isinstance(s, (list, tuple)) else ("leaf", s)  # noqa: E731
    assert sl.tree.map_shape_structure(mark, shapes) == {
        "x": ("shape", (None, 3)),
        "y": [("shape", (2,)), ("shape", (4, 5))],
        "z": (("leaf", 2), ("leaf", "a")),  # not a shape: mapped leaf by leaf
    }


def test_keras_tree_is_exactly_keras_3s_api():
    assert set(sl.tree.__all__) == {
        "MAP_TO_NONE", "assert_same_paths", "assert_same_structure", "flatten",
        "flatten_with_path", "is_nested", "lists_to_tuples", "map_shape_structure",
        "map_structure", "map_structure_up_to", "pack_sequence_as", "traverse",
    }  # fmt: skip


# -- tf.nest -----------------------------------------------------------------------------------
def test_nest_sorts_every_mapping_and_takes_any_sequence():
    ordered = collections.OrderedDict([("b", 1), ("a", 2)])
    assert sl.nest.flatten(ordered) == [2, 1]  # TF sorts OrderedDicts too
    assert sl.nest.flatten(MyList([1, [2]])) == [1, 2]  # any Sequence is a node in TF
    assert sl.nest.flatten(None) == [None] and sl.nest.flatten("ab") == ["ab"]
    assert not sl.nest.is_nested(np.zeros(3)) and not sl.nest.is_nested(b"x")
    assert sl.nest.is_nested(range(2)) and sl.nest.is_nested({"a": 1})
    with pytest.raises(TypeError, match="sortable"):
        sl.nest.flatten({1: "a", "b": 2})


def test_nest_pack_sequence_as_rebuilds_types_and_key_order():
    ordered = collections.OrderedDict([("b", 0), ("a", 0)])
    packed = sl.nest.pack_sequence_as(ordered, [1, 2])
    assert type(packed) is collections.OrderedDict and list(packed.items()) == [("b", 2), ("a", 1)]
    again = sl.nest.pack_sequence_as(MyList([0, (0, 0)]), [1, 2, 3])
    assert type(again) is MyList and again == [1, (2, 3)]
    assert sl.nest.pack_sequence_as(Point(0, 0), [5, 6]) == Point(5, 6)
    assert sl.nest.pack_sequence_as(0, [9]) == 9
    with pytest.raises(ValueError, match="2 leaves but flat_sequence has 1"):
        sl.nest.pack_sequence_as([0, 0], [1])
    with pytest.raises(TypeError, match="incompatible type"):
        sl.nest.pack_sequence_as([0], 1)


def test_nest_assert_same_structure_follows_tf():
    sl.nest.assert_same_structure((0, [1]), (2, [3]))
    sl.nest.assert_same_structure(Point(0, 1), SamePoint(2, 3))  # same name and fields
    sl.nest.assert_same_structure([0, 1], MyList([2, 3]))  # list types match
    sl.nest.assert_same_structure({"a": 1}, collections.OrderedDict(a=2))  # so do mappings
    with pytest.raises(TypeError, match="list vs tuple"):
        sl.nest.assert_same_structure([0, 1], (0, 1))
    sl.nest.assert_same_structure([0, 1], (0, 1), check_types=False)
    with pytest.raises(ValueError, match="same nested structure"):
        sl.nest.assert_same_structure([0, 1], [0, [1]])
    with pytest.raises(ValueError, match="key"):
        sl.nest.assert_same_structure({"a": 1}, {"b": 1})
    with pytest.raises(NotImplementedError, match="composite"):
        sl.nest.assert_same_structure(1, 1, expand_composites=True)


def test_nest_map_structure():
    assert sl.nest.map_structure(lambda x, y: x * y, [1, (2, 3)], [4, (5, 6)]) == [4, (10, 18)]
    assert sl.nest.map_structure(lambda x: x + 1, {"b": 1, "a": (2,)}) == {"b": 2, "a": (3,)}
    assert sl.nest.map_structure(lambda x, y: x + y, [1, 2], (3, 4), check_types=False) == [4, 6]
    with pytest.raises(TypeError):
        sl.nest.map_structure(lambda x, y: x, [1], (1,))
    with pytest.raises(ValueError, match="keyword"):
        sl.nest.map_structure(lambda x: x, [1], bogus=True)
    with pytest.raises(ValueError, match="at least one"):
        sl.nest.map_structure(lambda x: x)
    with pytest.raises(TypeError, match="callable"):
        sl.nest.map_structure("f", [1])


def test_nest_flatten_with_joined_string_paths():
    got = sl.nest.flatten_with_joined_string_paths({"a": [5, Point(6, 7)], "b": {"c": 8}})
    assert got == [("a/0", 5), ("a/1/x", 6), ("a/1/y", 7), ("b/c", 8)]
    assert sl.nest.flatten_with_joined_string_paths([1], separator=".") == [("0", 1)]


def test_nest_agrees_with_the_cells_nest_on_what_the_cells_use():
    """sl.nest is new; the engine's own `nest` (JAX pytrees) keeps its semantics, and the two
    agree on the structures RNN cells and models use."""
    c, h = sl.constant([1.0]), sl.constant([2.0])
    state = (sl.nn.rnn_cell.LSTMStateTuple(c, h), [h, {"b": c, "a": h}])
    assert sl.nest.flatten(state) == cells_nest.flatten(state)
    flat = cells_nest.flatten(state)
    assert sl.nest.pack_sequence_as(state, flat) == cells_nest.pack_sequence_as(state, flat)

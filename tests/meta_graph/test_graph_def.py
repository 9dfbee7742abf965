"""`Graph.as_graph_def`, `sl.import_graph_def`, `sl.train.write_graph` and the attr codec, with
TF1's semantics: prefixed names, input_map, return_elements and the errors TF1 raises."""

import json
import math
import os

import numpy as np
import optax
import pytest

import sluice as sl
from sluice.framework.graph_def import GraphDef, UnserializableAttrError, attr_codec
from sluice.framework.ir import dtypes


def _small_graph():
    g = sl.Graph()
    with g.as_default():
        x = sl.placeholder(sl.float32, [None, 2], name="x")
        y = sl.multiply(x, 3.0, name="y")
        with sl.control_dependencies([y]):
            sl.no_op(name="after_y")
        sl.reduce_sum(y, name="total")
    return g


def test_graph_def_lists_nodes_in_build_order_with_inputs_and_attrs():
    g = _small_graph()
    graph_def = g.as_graph_def()
    assert isinstance(graph_def, GraphDef)
    names = [n.name for n in graph_def.node]
    assert names == [op.name for op in g.get_operations()]
    by_name = {n.name: n for n in graph_def.node}
    assert by_name["y"].op == "Mul"
    assert by_name["y"].input[0] == "x:0"
    assert by_name[by_name["y"].input[1].split(":")[0]].op == "Const"
    assert by_name["after_y"].input == ["^y"]
    assert by_name["x"].attr["dtype"] == np.float32
    assert by_name["x"].attr["shape"].as_list() == [None, 2]
    text = graph_def.to_json()
    assert GraphDef.from_json(text) == graph_def
    assert GraphDef.from_json(graph_def.SerializeToString()) == graph_def


def test_import_graph_def_prefixes_maps_inputs_and_returns_elements():
    graph_def = _small_graph().as_graph_def()
    with sl.Graph().as_default() as g2:
        feed = sl.constant([[1.0, 2.0]], name="feed")
        y, total_op = sl.import_graph_def(
            graph_def, input_map={"x": feed}, return_elements=["y:0", "total"]
        )
        assert isinstance(y, sl.Tensor) and isinstance(total_op, sl.Operation)
        assert y.name == "import/y:0" and total_op.name == "import/total"
        assert g2.get_operation_by_name("import/after_y").control_inputs == [y.op]
        again = sl.import_graph_def(graph_def, return_elements=["y:0"])
        assert again[0].name == "import_1/y:0"  # the scope is made unique, as TF1 does
        assert sl.import_graph_def(graph_def, name="plain") is None
        for engine in ("compiled", "interpreted"):
            with sl.Session(config=sl.SessionConfig(engine=engine)) as sess:
                got = sess.run(total_op.outputs[0])
            assert got == pytest.approx(9.0, abs=1e-6)


def test_import_graph_def_errors_are_tf1s():
    graph_def = _small_graph().as_graph_def()
    with sl.Graph().as_default():
        with pytest.raises(ValueError, match="Attempted to map inputs that were not found"):
            sl.import_graph_def(graph_def, input_map={"nope:0": sl.constant(1.0)})
        with pytest.raises(ValueError, match="Requested return_element 'nope:0' not found"):
            sl.import_graph_def(graph_def, return_elements=["nope:0"])
        with pytest.raises(ValueError, match="has dtype float32, but input_map gives"):
            sl.import_graph_def(graph_def, input_map={"x:0": sl.constant([[1, 2]])})
    with sl.Graph().as_default():
        sl.import_graph_def(graph_def, name="")
        with pytest.raises(ValueError, match="already has an op named 'x'"):
            sl.import_graph_def(graph_def, name="")


def test_lookups_raise_tf1s_errors():
    g = _small_graph()
    with pytest.raises(
        KeyError,
        match="The name 'nope:0' refers to a Tensor which does not "
        "exist. The operation, 'nope', does not exist",
    ):
        g.get_tensor_by_name("nope:0")
    with pytest.raises(KeyError, match="exists but only has 1 outputs"):
        g.get_tensor_by_name("y:1")
    with pytest.raises(ValueError, match="looks like an \\(invalid\\) Operation name"):
        g.get_tensor_by_name("y")
    with pytest.raises(KeyError, match="refers to an Operation not in the graph"):
        g.get_operation_by_name("nope")
    with pytest.raises(ValueError, match="appears to refer to a Tensor, not a Operation"):
        g.get_operation_by_name("nope:0")
    with pytest.raises(TypeError):
        g.get_operation_by_name(3)


@pytest.mark.parametrize("as_text", [True, False])
def test_write_graph_writes_json_and_returns_the_path(tmp_path, as_text):
    g = _small_graph()
    path = sl.train.write_graph(g, str(tmp_path / "logs"), "graph.json", as_text=as_text)
    assert path == os.path.join(str(tmp_path / "logs"), "graph.json")
    text = open(path, encoding="utf-8").read()
    assert ("\n" in text) == as_text
    assert GraphDef.from_json(text) == g.as_graph_def()
    assert sl.train.write_graph(g.as_graph_def(), str(tmp_path), "again.json") == os.path.join(
        str(tmp_path), "again.json"
    )


ATTR_VALUES = [
    None,
    True,
    False,
    0,
    -7,
    2**40,
    0.5,
    float("inf"),
    float("-inf"),
    1 + 2j,
    "SAME",
    "",
    b"\x00\xffbytes",
    sl.float32,  # dtype attrs are DTypes (a NumPy dtype decodes as one)
    sl.int64,
    sl.bfloat16,
    dtypes.resource,
    sl.TensorShape(None),
    sl.TensorShape([]),
    sl.TensorShape([None, 3]),
    np.int64(5),
    np.float32(0.25),
    np.bool_(True),
    (1, 2),
    [1, (2, "a")],
    (),
    {"a": 1, "b": (2.0,)},
    (sl.TensorShape([2]), np.dtype("int32")),
    np.arange(6, dtype=np.float32).reshape(2, 3),
    np.array(3, np.int64),
    np.array([True, False]),
    np.zeros((0, 4), np.float16),
    np.array([1 + 1j], np.complex64),
    np.array(["ab", "c"]),
    np.ones([2], sl.bfloat16),
]


@pytest.mark.parametrize("value", ATTR_VALUES, ids=lambda v: type(v).__name__)
def test_attr_codec_round_trips_value_and_type(value):
    encoded = attr_codec.encode(value)
    got = attr_codec.decode(json.loads(json.dumps(encoded, allow_nan=False)))
    assert type(got) is type(value)
    if isinstance(value, np.ndarray):
        assert got.dtype == value.dtype and got.shape == value.shape
        np.testing.assert_array_equal(got, value)
    else:
        assert got == value


def test_attr_codec_keeps_nan():
    assert math.isnan(attr_codec.decode(attr_codec.encode(float("nan"))))


def test_python_functions_cannot_be_exported_and_the_error_names_the_op():
    g = sl.Graph()
    with g.as_default():
        step = sl.train.get_or_create_global_step()
        rate = sl.train.schedule_value(optax.exponential_decay(0.1, 10, 0.5), step)
        w = sl.Variable(1.0, name="w")
        sl.train.GradientDescentOptimizer(rate).minimize(sl.square(w))
    with pytest.raises(
        UnserializableAttrError, match="Cannot save op '.*' \\(LearningRateSchedule\\).*'schedule'"
    ):
        g.as_graph_def()


def test_optax_schedule_as_learning_rate_cannot_be_exported():
    import optax

    g = sl.Graph()
    with g.as_default():
        w = sl.Variable(1.0, name="w")
        sl.train.AdamOptimizer(optax.constant_schedule(0.1)).minimize(sl.square(w))
    with pytest.raises(
        UnserializableAttrError, match="\\(ApplyUpdates\\).*'rule'.*learning_rate=.*cannot be saved"
    ):
        g.as_graph_def()


def test_py_func_is_exported_as_a_token_and_fails_when_run_after_import():
    g = sl.Graph()
    with g.as_default():
        x = sl.placeholder(sl.float32, [2], name="x")
        sl.py_func(lambda a: a * 2, [x], sl.float32, name="double")
    with sl.Graph().as_default():
        (out,) = sl.import_graph_def(g.as_graph_def(), return_elements=["double:0"])
        with sl.Session(config=sl.SessionConfig(engine="interpreted")) as sess:
            with pytest.raises(sl.errors.InternalError, match="pyfunc_\\d+/imported is not found"):
                sess.run(out, {"import/x:0": [1.0, 2.0]})


def test_custom_gradient_ops_import_but_cannot_be_differentiated_again():
    g = sl.Graph()
    with g.as_default():
        x = sl.placeholder(sl.float32, [2], name="x")

        @sl.custom_gradient
        def times_two(v):
            return v * 2.0, lambda dy: dy * 5.0

        y = sl.identity(times_two(x), name="y")
        grad = sl.gradients(sl.reduce_sum(y), x)[0]
    with sl.Graph().as_default() as g2:
        sl.import_graph_def(g.as_graph_def(), name="")
        with sl.Session(config=sl.SessionConfig(engine="interpreted")) as sess:
            np.testing.assert_array_equal(sess.run(grad.name, {"x:0": [1.0, 2.0]}), [5.0, 5.0])
        with pytest.raises(LookupError, match="No gradient defined for operation"):
            sl.gradients(g2.get_tensor_by_name("y:0"), g2.get_tensor_by_name("x:0"))

"""A meta graph file is untrusted input: every corruption below is refused with a ValueError that
names what is wrong and where (the node, the context, the collection), before anything runs."""

import copy
import json

import numpy as np
import pytest

import sluice as sl
from sluice.framework.graph_def import limits
from sluice.framework.graph_def.meta_graph import MetaGraphDef


@pytest.fixture(scope="module")
def meta():
    g = sl.Graph()
    with g.as_default():
        x = sl.placeholder(sl.float32, [None, 3], name="x")
        w = sl.Variable(np.ones((3, 2), np.float32), name="w")
        _, h = sl.while_loop(
            lambda i, a: i < 2,
            lambda i, a: (i + 1, sl.tanh(a)),
            [sl.constant(0), sl.matmul(x, w, name="mm")],
        )
        loss = sl.reduce_sum(h, name="loss")
        sl.add_to_collection("train_op", sl.train.AdamOptimizer(0.1).minimize(loss))
        saver = sl.train.Saver()
        return saver.export_meta_graph().as_dict()


def _node(data, name):
    return next(n for n in data["graph_def"]["node"] if n["name"] == name)


def _first(data, op_type):
    return next(n for n in data["graph_def"]["node"] if n["op"] == op_type)


def _set(path, value):
    def corrupt(data):
        target = data
        for key in path[:-1]:
            target = target[key] if not callable(key) else key(target)
        target[path[-1]] = value

    return corrupt


def _cycle(data):
    _node(data, "mm")["input"].append("^loss")
    _node(data, "loss")["input"].append("^mm")


def _forward_data_edge(data):
    _node(data, "mm")["input"][0] = "loss:0"


def _duplicate(data):
    data["graph_def"]["node"].append(copy.deepcopy(_node(data, "mm")))


def _huge_constant(data):
    _first(data, "Const")["attr"]["value"] = {
        "tensor": {"dtype": "float32", "shape": [100000, 100000], "b64": "AAAAAA=="}
    }


def _short_constant(data):
    _first(data, "Const")["attr"]["value"] = {
        "tensor": {"dtype": "float32", "shape": [1000], "b64": "AAAAAA=="}
    }


CORRUPTIONS = {
    "unknown op type": (
        lambda d: _node(d, "mm").update(op="Bogus"),
        r"Node 'mm'.*op type 'Bogus' is not registered",
    ),
    "missing attr": (
        lambda d: _node(d, "mm")["attr"].pop("transpose_a"),
        r"Node 'mm' \(MatMul\): missing attrs \['transpose_a'\]",
    ),
    "extra attr": (
        lambda d: _first(d, "Tanh")["attr"].update(bogus={"i": 1}),
        r"\(Tanh\): unexpected attrs \['bogus'\]",
    ),
    "attr of the wrong type": (
        lambda d: _node(d, "mm")["attr"].update(transpose_a={"i": 1}),
        r"Node 'mm' \(MatMul\): attr 'transpose_a' must be a bool",
    ),
    "attr of unknown type": (
        lambda d: _node(d, "mm")["attr"].update(transpose_a={"py": "x"}),
        r"Node 'mm'.*unknown attr type 'py'",
    ),
    "dtype that is code": (
        lambda d: _node(d, "x")["attr"].update(dtype={"dtype": "__import__('os')"}),
        r"Node 'x'.*is not a dtype name",
    ),
    "object dtype": (
        lambda d: _node(d, "x")["attr"].update(dtype={"dtype": "object"}),
        r"Node 'x'.*not a dtype a graph may hold",
    ),
    "dangling input": (
        lambda d: _node(d, "mm")["input"].__setitem__(0, "nowhere:0"),
        r"Node 'mm'.*input 'nowhere' names no node",
    ),
    "bad input name": (
        lambda d: _node(d, "mm")["input"].__setitem__(0, "x"),
        r"Node 'mm'.*'x' is not 'op_name:index'",
    ),
    "output index out of range": (
        lambda d: _node(d, "mm")["input"].__setitem__(0, "x:3"),
        r"Node 'mm'.*names output 3 of an op with 1 outputs",
    ),
    "duplicate names": (_duplicate, r"Node 'mm': the name is used by two nodes"),
    "forward data edge": (_forward_data_edge, r"Node 'mm'.*'loss:0' comes later"),
    "cycle of control edges": (_cycle, r"cycle that is not a loop's back edge"),
    "wrong output dtype": (
        lambda d: _node(d, "mm")["output"][0].update(dtype="int32"),
        r"Node 'mm'.*output 0 is int32.*computes float32",
    ),
    "incompatible shape": (
        lambda d: _node(d, "mm")["output"][0].update(shape=[None, 7]),
        r"Node 'mm'.*output 0 is float32\(\?, 7\)",
    ),
    "absurd dimension": (
        lambda d: _node(d, "x")["attr"].update(shape={"shape": [2**50]}),
        r"Node 'x'.*dimensions are null or ints",
    ),
    "absurd rank": (
        lambda d: _node(d, "x")["attr"].update(shape={"shape": [1] * 100}),
        r"Node 'x'.*at most 64 dimensions",
    ),
    "huge constant claimed": (_huge_constant, r"claims 40000000000 bytes"),
    "constant data too short": (_short_constant, r"needs 4000 bytes of data"),
    "bad op name": (lambda d: _node(d, "x").update(name="x\x00; rm"), r"is not a valid op name"),
    "missing node field": (lambda d: _node(d, "x").pop("output"), r"Node 'x': missing fields"),
    "context out of range": (
        lambda d: _first(d, "Enter").update(context=99),
        r"context 99 is not listed",
    ),
    "context refers forward": (
        lambda d: d["graph_def"]["contexts"][0].update(outer=5),
        r"context 0: refers to context 5",
    ),
    "context bad field": (
        lambda d: d["graph_def"]["contexts"][0].update(back_prop="yes"),
        r"context 0: back_prop must be a bool",
    ),
    "variable record not a handle": (
        lambda d: d["variables"][0].update(handle="mm"),
        r"VarHandleOp's output",
    ),
    "unknown collection item": (
        lambda d: d["collection_def"].update(evil=[{"pickle": "x"}]),
        r"Collection 'evil': unknown item kind 'pickle'",
    ),
    "collection names no op": (
        lambda d: d["collection_def"].update(train_op=[{"operation": "gone"}]),
        r"Collection 'train_op'.*'gone' names no node",
    ),
    "saver_def of the wrong ops": (
        lambda d: d["saver_def"].update(restore_op_name="mm"),
        r"not a SaveH5 and a RestoreH5 op",
    ),
    "saver_def missing a field": (
        lambda d: d["saver_def"].pop("max_to_keep"),
        r"A saver_def has the fields",
    ),
    "optimizer class not registered": (
        lambda d: _first(d, "ApplyUpdates")["attr"]["rule"]["ext"]["value"].update(
            optimizer="os.system"
        ),
        r"no optimizer class 'os.system'",
    ),
    "wrong format": (lambda d: d.update(format="pickle"), r"Not a sluice meta graph"),
    "unknown version": (lambda d: d.update(version=99), r"version 99"),
    "graph_def version": (
        lambda d: d["graph_def"].update(version=2),
        r"graph_def version 2 is not supported",
    ),
}


@pytest.mark.parametrize("name", sorted(CORRUPTIONS))
def test_corrupt_meta_graph_is_refused_naming_the_problem(meta, name):
    corrupt, message = CORRUPTIONS[name]
    data = copy.deepcopy(meta)
    corrupt(data)
    text = json.dumps(data)
    with sl.Graph().as_default() as g:
        with pytest.raises(ValueError, match=message):
            sl.train.import_meta_graph(MetaGraphDef.from_json(text))
        assert g.get_operations() == []  # a failed import leaves the graph as it was
        assert g.get_all_collection_keys() == []


def test_the_uncorrupted_file_imports(meta):
    with sl.Graph().as_default():
        assert sl.train.import_meta_graph(MetaGraphDef.from_json(json.dumps(meta))) is not None


@pytest.mark.parametrize(
    "text, message",
    [
        (b"\x80\x04\x95pickle", "not valid JSON"),
        ('{"a": NaN}', "non-JSON constant NaN"),
        ("[" * 100000 + "]" * 100000, "nests too deeply|not valid JSON"),
        ("[1, 2", "not valid JSON"),
    ],
)
def test_text_that_is_not_plain_json_is_refused(text, message):
    with pytest.raises(ValueError, match=message):
        MetaGraphDef.from_json(text)


def test_size_limit(tmp_path):
    with pytest.raises(ValueError, match="more than the limit of 10"):
        limits.parse_json("[" + "1," * 20 + "1]", "meta graph", limit=10)
    path = tmp_path / "big.meta"
    path.write_text("[" + "1," * 20 + "1]")
    with pytest.raises(ValueError, match="bytes, more than the limit of 10"):
        limits.read_file(str(path), "meta graph", limit=10)
    with pytest.raises(ValueError, match="not a regular file"):
        limits.read_file(str(tmp_path), "meta graph")


@pytest.mark.parametrize(
    "text, message",
    [
        ("[" * 100000 + "]" * 100000, "nests too deeply|not valid JSON"),
        ("[1, 2", "not valid JSON"),
    ],
)
def test_a_meta_graph_file_that_is_not_json_is_named_in_the_error(tmp_path, text, message):
    path = tmp_path / "model-1.meta"
    path.write_text(text)
    expected = f"meta graph '{path}' .*({message})"
    with sl.Graph().as_default(), pytest.raises(ValueError, match=expected):
        sl.train.import_meta_graph(str(path))

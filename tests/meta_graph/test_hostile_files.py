"""Meta graph files written to attack the reader: a graph that would run a function or a dataset of
this process, read or write a file its author chose, confuse the loop frames, or keep checkpoint
files that are not sluice's. Each is refused at import with a ValueError naming the node, field or
collection (or never touched), and nothing runs or is written."""

import base64
import copy
import json
import os

import numpy as np
import pytest

import sluice as sl
from sluice._tf1.checkpoints.io_ops import encode_path
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
        return sl.train.Saver().export_meta_graph().as_dict()


def _node(data, name):
    return next(n for n in data["graph_def"]["node"] if n["name"] == name)


def _import(data):
    return sl.train.import_meta_graph(MetaGraphDef.from_json(json.dumps(data)))


def _const(arr):
    return {
        "tensor": {
            "dtype": arr.dtype.name,
            "shape": list(arr.shape),
            "b64": base64.b64encode(arr.tobytes()).decode("ascii"),
        }
    }


def _baked_path(data, path):
    """A Const node holding `path` as the Saver's ops take it."""
    arr = encode_path(path)
    data["graph_def"]["node"].insert(
        0,
        {
            "name": "baked",
            "op": "Const",
            "input": [],
            "device": "",
            "colocation": [],
            "gradient_op_type": None,
            "attr": {"value": _const(arr), "dtype": {"dtype": "uint8"}},
            "output": [{"dtype": "uint8", "shape": [len(arr)]}],
            "context": None,
        },
    )


@pytest.mark.parametrize("op, node", [("SaveH5", "save/SaveH5"), ("RestoreH5", "save/restore_all")])
def test_checkpoint_ops_on_a_path_baked_into_the_file_are_refused(meta, tmp_path, op, node):
    outside = str(tmp_path / "outside.h5")
    data = copy.deepcopy(meta)
    _baked_path(data, outside)
    _node(data, node)["input"][0] = "baked:0"
    train = data["collection_def"]["train_op"][0]["operation"]
    _node(data, train)["input"].append(f"^{node}")  # would run whenever one trains
    with sl.Graph().as_default() as g:
        with pytest.raises(
            ValueError,
            match=rf"Node '{node}' \({op}\): its filename input is "
            r"baked:0 \(Const\), not a Saver's",
        ):
            _import(data)
        assert g.get_operations() == []
    assert not os.path.exists(outside)


def test_saver_def_must_name_the_placeholder_its_ops_read(meta):
    data = copy.deepcopy(meta)
    data["saver_def"]["filename_tensor_name"] = "x:0"
    with sl.Graph().as_default() as g:
        with pytest.raises(ValueError, match="do not take their filename from the placeholder x:0"):
            _import(data)
        assert g.get_operations() == [] and g.get_all_collection_keys() == []


@pytest.mark.parametrize(
    "field, value",
    [("max_to_keep", -1), ("max_to_keep", True), ("keep_checkpoint_every_n_hours", -2.0)],
)
def test_saver_def_keep_values_out_of_range_are_refused(meta, field, value):
    """A negative max_to_keep would delete every checkpoint, the new one too."""
    data = copy.deepcopy(meta)
    data["saver_def"][field] = value
    with sl.Graph().as_default() as g:
        with pytest.raises(ValueError, match=r"max_to_keep \(null or an int >= 0\)"):
            _import(data)
        assert g.get_operations() == [] and g.get_all_collection_keys() == []


def test_print_to_a_file_named_by_the_graph_is_refused(tmp_path):
    target = tmp_path / "printed.txt"
    with sl.Graph().as_default():
        sl.print("hello", output_stream=f"file://{target}", name="show")
        text = sl.train.export_meta_graph().to_json()
    with sl.Graph().as_default() as g:
        with pytest.raises(ValueError, match=r"Node 'show' \(PrintV2\): prints to the file"):
            sl.train.import_meta_graph(MetaGraphDef.from_json(text))
        assert g.get_operations() == []
    assert not target.exists()


@pytest.mark.parametrize("engine", ["compiled", "interpreted"])
def test_imported_iterator_never_runs_a_dataset_of_this_process(engine):
    """The file's dataset token could name a live dataset (a Python generator) of this process,
    as a py_func token could name a function: the imported iterator fails instead."""
    calls = []

    def generator():
        calls.append(1)
        yield np.float32(1.0)

    g = sl.Graph()  # kept alive: its dataset stays registered under its token
    with g.as_default():
        dataset = sl.data.Dataset.from_generator(generator, sl.float32, [])
        sl.identity(dataset.make_one_shot_iterator().get_next(), name="value")
        text = sl.train.export_meta_graph().to_json()
    with sl.Graph().as_default():
        sl.train.import_meta_graph(MetaGraphDef.from_json(text))
        with sl.Session(config=sl.SessionConfig(engine=engine)) as sess:
            with pytest.raises(sl.errors.FailedPreconditionError, match="not in this process"):
                sess.run("value:0")
    assert calls == []


def _in_loop_without_context(d):
    _node(d, "while/Tanh")["context"] = None


def _exit_out_of_its_frame(d):
    _node(d, "while/Exit")["context"] = None


def _enter_of_another_frame(d):
    _node(d, "while/Enter")["attr"]["frame_name"] = {"s": "other"}


def _back_edge_of_another_variable(d):
    _node(d, "while/Merge")["input"][1] = "while/NextIteration_1:0"


def _deep_constant_chain(d):
    """Shape inference folds Identity chains of constants recursively."""
    nodes = d["graph_def"]["node"]
    base = {"device": "", "colocation": [], "gradient_op_type": None, "context": None}
    nodes.append(
        dict(
            base,
            name="dims",
            op="Const",
            input=[],
            attr={"value": _const(np.array([2], np.int32)), "dtype": {"dtype": "int32"}},
            output=[{"dtype": "int32", "shape": [1]}],
        )
    )
    previous = "dims:0"
    for i in range(3000):
        nodes.append(
            dict(
                base,
                name=f"id{i}",
                op="Identity",
                input=[previous],
                attr={},
                output=[{"dtype": "int32", "shape": [1]}],
            )
        )
        previous = f"id{i}:0"
    nodes.append(
        dict(
            base,
            name="filled",
            op="Fill",
            input=[previous, "loss:0"],
            attr={},
            output=[{"dtype": "float32", "shape": [2]}],
        )
    )


def _set_value(value):
    def corrupt(d):
        _node(d, "mm")["attr"]["transpose_a"] = value

    return corrupt


HOSTILE = {
    "op in a loop without its context": (
        _in_loop_without_context,
        r"Node 'while/Tanh' \(Tanh\) in loop frame None takes "
        r"while/Identity_1:0 from loop frame 'while'",
    ),
    "exit out of its frame": (_exit_out_of_its_frame, r"Node 'while/Exit' \(Exit\)"),
    "enter of another frame": (
        _enter_of_another_frame,
        r"Node 'while/Enter' \(Enter\): frame_name 'other'",
    ),
    "back edge of another loop variable": (
        _back_edge_of_another_variable,
        r"Node 'while/Merge' \(Merge\): its back edge "
        r"while/NextIteration_1:0 is float32",
    ),
    "constant chain too deep to fold": (
        _deep_constant_chain,
        r"Node 'filled' \(Fill\).*does not fit its op type",
    ),
    "loop_cond that is no LoopCond": (
        lambda d: d["graph_def"]["contexts"][0].update(loop_cond="mm:0"),
        r"context 'while': loop_cond must be a tensor made by a LoopCond op, got mm:0",
    ),
    "loop exit that is no Exit": (
        lambda d: d["graph_def"]["contexts"][0]["loop_exits"].append("mm:0"),
        r"context 'while': loop_exits must be a tensor made by an Exit op, got mm:0",
    ),
    "loop bound that is a float matrix": (
        lambda d: d["graph_def"]["contexts"][0].update(maximum_iterations={"tensor": "mm:0"}),
        r"maximum_iterations must be a rank-0 integer tensor, got mm:0 \(MatMul, float32",
    ),
    "scalar too large for its dtype": (
        _set_value({"scalar": {"dtype": "int8", "value": {"i": 10**30}}}),
        r"Node 'mm'.*attr 'transpose_a': a int8 scalar cannot hold",
    ),
    "scalar of a string": (
        _set_value({"scalar": {"dtype": "float32", "value": {"s": "x"}}}),
        r"Node 'mm'.*a float32 scalar cannot hold 'x'",
    ),
    "empty tensor of absurd dimensions": (
        _set_value({"tensor": {"dtype": "float32", "shape": [0, 2**40, 2**40], "b64": ""}}),
        r"Node 'mm'.*attr 'transpose_a': a tensor of shape \(0, 1099511627776, ",
    ),
    "variable initializer that is not its assign": (
        lambda d: d["variables"][0].update(initializer="mm"),
        r"Variable 'w': The initializer of w must be an AssignVariableOp",
    ),
    "two records of one variable": (
        lambda d: d["variables"].append(dict(d["variables"][0])),
        r"Variable 'w' has two variable records",
    ),
    "meta_info_def not an object": (
        lambda d: d.update(meta_info_def=[1]),
        r"meta_info_def must be an object",
    ),
    "saver in a collection that is not one": (
        lambda d: d["collection_def"]["savers"][0]["ext"].update(value={"x": 1}),
        r"Collection 'savers': A saver_def has the fields",
    ),
}
for _name in ["float128", "datetime64", "m8", "<U0", "S0", "float", "int", "str", "half"]:
    HOSTILE[f"dtype name {_name!r}"] = (
        lambda d, n=_name: _node(d, "x")["attr"].update(dtype={"dtype": n}),
        rf"Node 'x' \(Placeholder\): attr 'dtype': '{_name}' is not a dtype a graph may hold",
    )


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_meta_graph_is_refused_naming_the_problem(meta, name):
    corrupt, message = HOSTILE[name]
    data = copy.deepcopy(meta)
    corrupt(data)
    with sl.Graph().as_default() as g:
        with pytest.raises(ValueError, match=message):
            _import(data)
        assert g.get_operations() == [] and g.get_all_collection_keys() == []


# -- the files themselves -------------------------------------------------------------------------
def test_meta_file_linking_outside_its_directory_is_not_read(meta, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    run = tmp_path / "run"
    elsewhere.mkdir()
    run.mkdir()
    (elsewhere / "secret.meta").write_text(json.dumps(meta))
    os.symlink(elsewhere / "secret.meta", run / "model-1.meta")
    with sl.Graph().as_default():
        with pytest.raises(ValueError, match="is a symbolic link to .*outside the directory"):
            sl.train.import_meta_graph(str(run / "model-1.h5.meta"))
    (run / "real.meta").write_text(json.dumps(meta))
    os.symlink("real.meta", run / "model-2.meta")  # a link inside the run is followed
    with sl.Graph().as_default():
        assert sl.train.import_meta_graph(str(run / "model-2.meta")) is not None


def test_meta_file_that_is_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "model-1.meta"
    os.mkfifo(fifo)
    with sl.Graph().as_default():
        with pytest.raises(ValueError, match="is not a regular file"):
            sl.train.import_meta_graph(str(fifo))


# -- the meta files a Saver keeps -----------------------------------------------------------------
def test_saver_never_deletes_or_writes_through_meta_files_it_did_not_write(tmp_path):
    run, outside = tmp_path / "run", tmp_path / "outside"
    run.mkdir()
    outside.mkdir()
    (outside / "target").write_text("precious")
    os.symlink(outside / "target", run / "model-2.meta")  # planted before the save
    (run / "model-3.meta").write_text("the user's notes")  # a checkpoint saved without one
    with sl.Graph().as_default():
        step = sl.train.get_or_create_global_step()
        bump = sl.assign_add(step, 1)
        saver = sl.train.Saver(max_to_keep=1)
        with sl.Session() as sess:
            sess.run(sl.global_variables_initializer())
            names = []
            for i in range(1, 5):
                sess.run(bump)
                saver.save(sess, str(run / "model"), global_step=step, write_meta_graph=i != 3)
                names.append(sorted(n for n in os.listdir(run) if not n.startswith(".")))
    assert (outside / "target").read_text() == "precious"
    assert not os.path.islink(run / "model-2.meta")  # replaced by the saved meta graph
    assert names[1] == ["checkpoint.json", "model-2.h5", "model-2.meta", "model-3.meta"]
    # model-2's meta graph went with its checkpoint; the user's model-3.meta stays
    assert names[2] == ["checkpoint.json", "model-3.h5", "model-3.meta"]
    assert names[3] == ["checkpoint.json", "model-3.meta", "model-4.h5", "model-4.meta"]
    assert (run / "model-3.meta").read_text() == "the user's notes"


def test_meta_graph_suffix_with_a_path_is_refused_before_writing(tmp_path):
    with sl.Graph().as_default():
        sl.Variable(1.0, name="w")
        saver = sl.train.Saver()
        with sl.Session() as sess:
            sess.run(sl.global_variables_initializer())
            with pytest.raises(ValueError, match="meta_graph_suffix '../x' must be"):
                saver.save(sess, str(tmp_path / "model"), meta_graph_suffix="../x")
    assert os.listdir(tmp_path) == []


def test_two_savers_in_one_directory_delete_only_their_own_checkpoints(tmp_path):
    """As TF1: max_to_keep counts a Saver's own prefix; another's files and meta graphs stay."""
    with sl.Graph().as_default():
        sl.Variable(1.0, name="w")
        first, second = sl.train.Saver(max_to_keep=2), sl.train.Saver(max_to_keep=2)
        with sl.Session() as sess:
            sess.run(sl.global_variables_initializer())
            for step in range(4):
                first.save(sess, str(tmp_path / "a"), global_step=step)
                second.save(sess, str(tmp_path / "b"), global_step=step)
    assert sorted(n for n in os.listdir(tmp_path) if not n.startswith(".")) == [
        "a-2.h5",
        "a-2.meta",
        "a-3.h5",
        "a-3.meta",
        "b-2.h5",
        "b-2.meta",
        "b-3.h5",
        "b-3.meta",
        "checkpoint.json",
    ]
    assert sl.train.latest_checkpoint(str(tmp_path)).endswith("b-3.h5")


def test_meta_graph_left_by_a_killed_save_is_removed_by_a_later_one(tmp_path):
    """A process killed between deleting an old checkpoint and its meta graph leaves the meta
    graph alone; the next deleting save removes such sluice meta graphs older than every kept
    checkpoint, and nothing else."""
    with sl.Graph().as_default():
        sl.Variable(1.0, name="w")
        saver = sl.train.Saver(max_to_keep=2)
        with sl.Session() as sess:
            sess.run(sl.global_variables_initializer())
            for step in (1, 2):
                saver.save(sess, str(tmp_path / "model"), global_step=step)
            (tmp_path / "model-0.meta").write_bytes((tmp_path / "model-2.meta").read_bytes())
            (tmp_path / "model-00.meta").write_text("the user's notes")
            saver.save(sess, str(tmp_path / "model"), global_step=3)
    assert sorted(n for n in os.listdir(tmp_path) if not n.startswith(".")) == [
        "checkpoint.json",
        "model-00.meta",
        "model-2.h5",
        "model-2.meta",
        "model-3.h5",
        "model-3.meta",
    ]

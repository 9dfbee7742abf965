"""Meta graphs: `export_meta_graph` / `import_meta_graph`, the collections, Variables and Saver they
bring back, the `.meta` file `Saver.save` writes, and TF1's resume idiom in a new process."""

import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import optax
import pytest

import sluice as sl
from sluice.framework.graph_def.meta_graph import MetaGraphDef

X = np.random.RandomState(0).randn(4, 3).astype(np.float32)


def _model():
    """A tiny model with a loop, Adam slots, the global step, a Saver and collections."""
    x = sl.placeholder(sl.float32, [None, 3], name="x")
    w = sl.Variable(np.full((3, 2), 0.5, np.float32), name="w")
    b = sl.Variable(np.zeros(2, np.float32), name="b", trainable=False)
    _, h = sl.while_loop(
        lambda i, a: i < 2, lambda i, a: (i + 1, sl.tanh(a)), [sl.constant(0), sl.matmul(x, w) + b]
    )
    loss = sl.reduce_mean(sl.square(h - 0.5), name="loss")
    step = sl.train.get_or_create_global_step()
    train = sl.train.AdamOptimizer(0.1).minimize(loss, global_step=step, name="train")
    sl.add_to_collection("train_op", train)
    sl.add_to_collection("loss", loss)
    sl.add_to_collection("hparams", 0.1)
    sl.add_to_collection("hparams", "adam")
    sl.add_to_collection("hparams", 3)
    return sl.train.Saver(max_to_keep=2)


def test_collections_variables_and_saver_come_back():
    g = sl.Graph()
    with g.as_default():
        saver = _model()
        meta = saver.export_meta_graph()
    assert isinstance(meta, MetaGraphDef) and meta.HasField("saver_def")
    with sl.Graph().as_default() as g2:
        restored = sl.train.import_meta_graph(MetaGraphDef.from_json(meta.to_json()))
        assert isinstance(restored, sl.train.Saver)
        assert restored.saver_def == saver.saver_def
        assert [v.name for v in sl.global_variables()] == [
            v.name for v in g.get_collection("variables")
        ]
        assert [v.name for v in sl.trainable_variables()] == ["w:0"]
        assert all(isinstance(v, sl.Variable) for v in sl.global_variables())
        assert sl.train.get_global_step().name == "global_step:0"
        assert g2.get_collection("hparams") == [0.1, "adam", 3]
        train_name = g.get_collection("train_op")[0].name
        assert g2.get_collection("train_op")[0] is g2.get_operation_by_name(train_name)
        assert g2.get_collection("loss")[0] is g2.get_tensor_by_name("loss:0")
        assert len(g2.get_collection("while_context")) == 1
        assert (
            g2.get_collection("while_context")[0]
            is g2.get_operation_by_name("while/LoopCond").control_flow_context
        )
        w = sl.trainable_variables()[0]
        assert w.shape.as_list() == [3, 2] and w.dtype == np.float32
        with sl.Session(config=sl.SessionConfig(engine="interpreted")) as sess:
            sess.run(sl.global_variables_initializer())
            np.testing.assert_array_equal(sess.run(w), np.full((3, 2), 0.5, np.float32))
            sess.run(w.assign_add(np.ones((3, 2), np.float32)))
            np.testing.assert_array_equal(sess.run(w), np.full((3, 2), 1.5, np.float32))
        sl.train.Saver()  # a new Saver over the imported variables builds


def test_unsupported_collections_are_left_out_with_a_warning():
    g = sl.Graph()
    with g.as_default():
        sl.add_to_collection("odd", object())
        sl.add_to_collection("fine", 1)
        with pytest.warns(UserWarning, match="serializing odd"):
            meta = sl.train.export_meta_graph()
    assert set(meta.collection_def) == {"fine"}
    assert sl.train.export_meta_graph(graph=g, collection_list=[]).collection_def == {}


def test_no_saver_and_no_variables_gives_none_and_variables_give_a_new_saver():
    with sl.Graph().as_default():
        sl.constant(1.0, name="c")
        meta = sl.train.export_meta_graph()
    with sl.Graph().as_default():
        assert sl.train.import_meta_graph(meta) is None
    with sl.Graph().as_default():
        sl.Variable(1.0, name="v")
        meta = sl.train.export_meta_graph()  # no saver_def: TF1 makes a Saver() on import
    with sl.Graph().as_default():
        assert isinstance(sl.train.import_meta_graph(meta), sl.train.Saver)


def test_import_scope_keeps_two_copies_apart():
    with sl.Graph().as_default():
        saver = _model()
        meta = saver.export_meta_graph()
    with sl.Graph().as_default() as g2:
        first = sl.train.import_meta_graph(meta, import_scope="a")
        sl.train.import_meta_graph(meta, import_scope="b")
        assert first.saver_def["restore_op_name"] == "a/save/restore_all"
        frames = {op.get_attr("frame_name") for op in g2.get_operations() if op.type == "Enter"}
        assert {f.split("/")[0] for f in frames} == {"a", "b"}
        wa, wb = g2.get_collection("trainable_variables")
        with sl.Session(config=sl.SessionConfig(engine="interpreted")) as sess:
            sess.run(sl.global_variables_initializer())
            sess.run(wa.assign(np.zeros((3, 2), np.float32)))
            assert sess.run(wb)[0, 0] == 0.5  # not the same variable state


def test_clear_devices():
    with sl.Graph().as_default():
        with sl.device("/cpu:0"):
            sl.constant(1.0, name="c")
        assert sl.train.export_meta_graph().graph_def.node[0].device == "/device:CPU:0"
        meta = sl.train.export_meta_graph(clear_devices=True)
        assert meta.graph_def.node[0].device == ""
        kept = sl.train.export_meta_graph()
    with sl.Graph().as_default() as g2:
        sl.train.import_meta_graph(kept, clear_devices=True)
        assert g2.get_operation_by_name("c").device == ""


def test_save_writes_tf1_named_meta_files_and_deletes_them_with_their_checkpoints(tmp_path):
    with sl.Graph().as_default():
        saver = _model()
        with sl.Session(config=sl.SessionConfig(engine="interpreted")) as sess:
            sess.run(sl.global_variables_initializer())
            for step in (1, 2, 3):
                saver.save(sess, str(tmp_path / "model"), global_step=step)
            os.mkdir(tmp_path / "other")
            saver.save(
                sess, str(tmp_path / "other" / "plain"), global_step=9, write_meta_graph=False
            )
    assert sorted(os.listdir(tmp_path / "other"))[-1] == "plain-9.h5"
    names = sorted(os.listdir(tmp_path))
    assert "model-3.meta" in names and "model-2.meta" in names
    assert "model-1.meta" not in names and "model-1.h5" not in names  # max_to_keep=2
    meta = MetaGraphDef.from_json(open(tmp_path / "model-3.meta", "rb").read())
    assert meta.saver_def == saver.saver_def


def test_meta_file_path_from_latest_checkpoint_works_as_written(tmp_path):
    with sl.Graph().as_default():
        saver = _model()
        with sl.Session(config=sl.SessionConfig(engine="interpreted")) as sess:
            sess.run(sl.global_variables_initializer())
            saver.save(sess, str(tmp_path / "model"), global_step=5)
    latest = sl.train.latest_checkpoint(str(tmp_path))
    assert latest.endswith("model-5.h5")
    with sl.Graph().as_default():
        assert sl.train.import_meta_graph(latest + ".meta") is not None
    with sl.Graph().as_default():
        assert sl.train.import_meta_graph(str(tmp_path / "model-5.meta")) is not None
    with sl.Graph().as_default(), pytest.raises(OSError, match="does not exist"):
        sl.train.import_meta_graph(str(tmp_path / "model-6.meta"))


def test_export_meta_graph_writes_a_file(tmp_path):
    with sl.Graph().as_default():
        saver = _model()
        path = str(tmp_path / "graph.meta")
        meta = sl.train.export_meta_graph(path, saver_def=saver.saver_def, as_text=True)
        assert b"\n" in open(path, "rb").read()
        assert MetaGraphDef.from_json(open(path, "rb").read()).as_dict() == meta.as_dict()
        saver.export_meta_graph(str(tmp_path / "compact.meta"))
        assert b"\n" not in open(tmp_path / "compact.meta", "rb").read()


RESUME_SCRIPT = textwrap.dedent("""
    import sys, json
    import numpy as np
    import sluice as sl
    directory, steps = sys.argv[1], int(sys.argv[2])
    X = np.random.RandomState(0).randn(4, 3).astype(np.float32)
    saver = sl.train.import_meta_graph(sl.train.latest_checkpoint(directory) + ".meta")
    with sl.Session() as sess:
        saver.restore(sess, sl.train.latest_checkpoint(directory))
        train, loss = sl.get_collection("train_op")[0], sl.get_collection("loss")[0]
        meta = sl.RunMetadata()
        losses = [float(sess.run([loss, train], {"x:0": X}, run_metadata=meta)[0])
                  for _ in range(steps)]
        step = int(sess.run(sl.train.get_global_step()))
    print(json.dumps({"losses": losses, "step": step, "engine": meta.engine}))
""")


def test_a_new_process_resumes_from_the_meta_graph_exactly(tmp_path):
    """Script 1 trains 3 steps and saves; a fresh interpreter with no model code imports the
    meta graph, restores and trains on: its losses are those of an uninterrupted run."""
    with sl.Graph().as_default():
        saver = _model()
        train, loss = sl.get_collection("train_op")[0], sl.get_collection("loss")[0]
        with sl.Session() as sess:
            sess.run(sl.global_variables_initializer())
            for _ in range(3):
                sess.run(train, {"x:0": X})
            saver.save(sess, str(tmp_path / "model"), global_step=sl.train.get_global_step())
            uninterrupted = [float(sess.run([loss, train], {"x:0": X})[0]) for _ in range(3)]
    done = subprocess.run(
        [sys.executable, "-c", RESUME_SCRIPT, str(tmp_path), "3"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    import json

    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["losses"] == pytest.approx(uninterrupted, rel=1e-6, abs=1e-7)
    assert result["step"] == 6
    assert result["engine"] == "compiled"


def test_meta_graph_is_serialised_once_per_graph_version(tmp_path, monkeypatch):
    from sluice._tf1.checkpoints import meta_graph_files as meta_graph  # what Saver.save calls

    with sl.Graph().as_default():
        saver = _model()
        calls = []
        real = meta_graph.export_meta_graph
        monkeypatch.setattr(
            meta_graph, "export_meta_graph", lambda *a, **k: calls.append(1) or real(*a, **k)
        )
        with sl.Session(config=sl.SessionConfig(engine="interpreted")) as sess:
            sess.run(sl.global_variables_initializer())
            saver.save(sess, str(tmp_path / "m"), global_step=1)
            saver.save(sess, str(tmp_path / "m"), global_step=2)
            sl.constant(1.0, name="new_op")  # the graph changed: serialised again
            with warnings.catch_warnings():
                saver.save(sess, str(tmp_path / "m"), global_step=3)
    assert len(calls) == 2
    with sl.Graph().as_default() as g3:
        sl.train.import_meta_graph(str(tmp_path / "m-3.meta"))
        g3.get_operation_by_name("new_op")


def test_save_without_a_saveable_graph_warns_and_still_writes_the_checkpoint(tmp_path):
    with sl.Graph().as_default():
        step = sl.train.get_or_create_global_step()
        w = sl.Variable(1.0, name="w")
        rate = sl.train.schedule_value(optax.exponential_decay(0.1, 10, 0.5), step)  # in an attr
        train = sl.train.GradientDescentOptimizer(rate).minimize(sl.square(w), global_step=step)
        saver = sl.train.Saver()
        with sl.Session(config=sl.SessionConfig(engine="interpreted")) as sess:
            sess.run(sl.global_variables_initializer())
            sess.run(train)
            with pytest.warns(UserWarning, match="No meta graph is written.*LearningRateSchedule"):
                path = saver.save(sess, str(tmp_path / "m"), global_step=step)
    assert sorted(os.listdir(tmp_path)) == [".checkpoint.json.lock", "checkpoint.json", "m-1.h5"]
    assert path.endswith("m-1.h5")

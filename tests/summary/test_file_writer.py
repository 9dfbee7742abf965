"""`sl.summary.FileWriter`, as TF1's writer tests check it: the event file starts with its
version record; summaries land with their step and wall time; `flush` writes what was queued;
metadata is kept only on a tag's first value; graphs convert to TensorBoard's `GraphDef` (names,
inputs "op:i" and "^op", while-loop frames, shapes); a closed writer drops events with a
warning until reopened; `FileWriterCache` shares one writer per folder."""

import os
import sys
import time

import numpy as np
import pytest

import sluice as sl
from tests.summary.readers import event_files, read_events

graph_pb2 = pytest.importorskip("tensorboardX.proto.graph_pb2")
summary_pb2 = pytest.importorskip("tensorboardX.proto.summary_pb2")
types_pb2 = pytest.importorskip("tensorboardX.proto.types_pb2")


@pytest.fixture(scope="module")
def training():
    """A small training graph with a while loop, a cond and summaries, and its summary bytes
    of three steps."""
    g = sl.Graph()
    with g.as_default():
        x = sl.placeholder(sl.float32, [None, 2], name="x")
        w = sl.Variable(np.ones([2, 1], np.float32), name="w")
        _, total = sl.while_loop(
            lambda i, acc: i < 3,
            lambda i, acc: (i + 1, acc * 2.0),
            [sl.constant(0), sl.matmul(x, w)],
        )
        loss = sl.cond(
            sl.reduce_sum(total) > 0, lambda: sl.reduce_mean(total), lambda: -sl.reduce_mean(total)
        )
        train_op = sl.train.GradientDescentOptimizer(0.01).minimize(loss)
        sl.summary.scalar("loss", loss)
        sl.summary.histogram("w", w)
        sl.summary.text("note", "step *markdown*")
        merged = sl.summary.merge_all()
        init = sl.global_variables_initializer()
    steps = []
    with sl.Session(graph=g) as sess:
        sess.run(init)
        for _ in range(3):
            steps.append(sess.run([merged, train_op], {x: [[1.0, 2.0]]})[0])
    return g, steps


def test_summaries_are_written_with_their_steps(tmp_path, training):
    g, steps = training
    before = time.time()
    writer = sl.summary.FileWriter(str(tmp_path), filename_suffix=".v1")
    for step, summary in enumerate(steps):
        writer.add_summary(summary, global_step=10 * step)
    writer.flush()  # no close: flush alone puts every queued event in the file
    (path,) = event_files(str(tmp_path))
    assert os.path.basename(path).startswith("events.out.tfevents.") and path.endswith(".v1")
    events = read_events(path)
    assert events[0].file_version == "brain.Event:2"
    assert [e.step for e in events[1:]] == [0, 10, 20]
    assert all(before - 1 <= e.wall_time <= time.time() + 1 for e in events)
    losses = [[v.simple_value for v in e.summary.value if v.tag == "loss"][0] for e in events[1:]]
    expected = [summary_pb2.Summary.FromString(s).value[0].simple_value for s in steps]
    assert losses == expected and losses[0] > losses[1] > losses[2]
    assert events[1].summary.value[1].histo.num == 2
    writer.close()


def test_only_the_first_value_of_a_tag_keeps_its_metadata(tmp_path, training):
    _, steps = training
    with sl.summary.FileWriter(str(tmp_path)) as writer:
        for step, summary in enumerate(steps[:2]):
            writer.add_summary(summary_pb2.Summary.FromString(summary), step)
    notes = [
        [v for v in e.summary.value if v.tag == "note"][0]
        for e in read_events(event_files(str(tmp_path))[0])[1:]
    ]
    assert notes[0].metadata.plugin_data.plugin_name == "text"
    assert not notes[1].HasField("metadata")
    assert notes[1].tensor.string_val == [b"step *markdown*"]


def test_graph_converts_to_tensorboard_graph_def(tmp_path, training):
    g, _ = training
    with sl.summary.FileWriter(str(tmp_path), graph=g):
        pass
    events = read_events(event_files(str(tmp_path))[0])
    graph = graph_pb2.GraphDef.FromString(events[1].graph_def)
    nodes = {n.name: n for n in graph.node}
    assert set(nodes) == {op.name for op in g.get_operations()}
    for op in g.get_operations():
        node = nodes[op.name]
        assert node.op == op.type
        data = [t.op.name if t.value_index == 0 else t.name for t in op.inputs]
        assert list(node.input) == data + [f"^{c.name}" for c in op.control_inputs]
        shapes = node.attr["_output_shapes"].list.shape
        assert [[d.size for d in s.dim] for s in shapes] == [
            [-1 if d is None else d for d in t.shape.as_list()] for t in op.outputs
        ]
    enter = nodes["while/Enter"]
    assert enter.attr["frame_name"].s.decode() == g.get_operation_by_name("while/Enter").get_attr(
        "frame_name"
    )
    assert any(i.endswith(":1") for n in graph.node if n.op == "Identity" for i in n.input)
    assert any(i.startswith("^") for n in graph.node for i in n.input)
    assert nodes["x"].attr["dtype"].type == types_pb2.DT_FLOAT
    assert nodes["x"].attr["shape"].shape.dim[0].size == -1
    const = [n for n in graph.node if n.op == "Const"][0]
    op = g.get_operation_by_name(const.name)
    value = np.frombuffer(const.attr["value"].tensor.tensor_content, op.get_attr("value").dtype)
    np.testing.assert_array_equal(value, op.get_attr("value").reshape(-1))


def test_add_graph_session_log_and_event(tmp_path):
    g = sl.Graph()
    with g.as_default():
        sl.constant(1.0, name="c")
    with sl.summary.FileWriter(str(tmp_path)) as writer:
        writer.add_graph(g, global_step=7)
        writer.add_session_log(sl.summary.SessionLog(status=sl.summary.SessionLog.START), 8)
        writer.add_event(sl.summary.Event(step=9, wall_time=1.5))
        with pytest.raises(TypeError, match="sl.Graph"):
            writer.add_graph("not a graph")
        with pytest.raises(TypeError, match="serialized Summary"):
            writer.add_summary(3.0)
        assert writer.get_logdir() == str(tmp_path)
    events = read_events(event_files(str(tmp_path))[0])[1:]
    assert [e.step for e in events] == [7, 8, 9]
    assert [n.name for n in graph_pb2.GraphDef.FromString(events[0].graph_def).node] == ["c"]
    assert events[1].session_log.status == sl.summary.SessionLog.START
    assert events[2].wall_time == 1.5


def test_closed_writer_warns_and_drops_until_reopened(tmp_path):
    writer = sl.summary.FileWriter(str(tmp_path))
    writer.add_summary(
        sl.summary.Summary(value=[sl.summary.Summary.Value(tag="a", simple_value=1.0)]), 1
    )
    writer.close()
    with pytest.warns(UserWarning, match="closed FileWriter"):
        writer.add_summary(sl.summary.Summary(), 2)
    writer.reopen()
    writer.add_summary(sl.summary.Summary(), 3)
    writer.close()
    files = event_files(str(tmp_path))
    assert len(files) == 2  # reopening starts a new file
    steps = sorted(e.step for path in files for e in read_events(path)[1:])
    assert steps == [1, 3]


def test_file_writer_cache_shares_one_writer_per_folder(tmp_path):
    g = sl.Graph()
    with g.as_default():
        sl.constant(1.0, name="cached")
        first = sl.summary.FileWriterCache.get(str(tmp_path / "a"))
        assert sl.summary.FileWriterCache.get(str(tmp_path / "a")) is first
        assert sl.summary.FileWriterCache.get(str(tmp_path / "b")) is not first
    sl.summary.FileWriterCache.clear()
    events = read_events(event_files(str(tmp_path / "a"))[0])
    assert [n.name for n in graph_pb2.GraphDef.FromString(events[1].graph_def).node] == ["cached"]


def test_without_tensorboardx_the_writer_says_what_to_install(tmp_path, monkeypatch):
    for module in (
        "tensorboardX",
        "tensorboardX.proto",
        "tensorboardX.proto.event_pb2",
        "tensorboardX.record_writer",
    ):
        monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(ImportError, match=r"pip install sluice\[tensorboard\]"):
        sl.summary.FileWriter(str(tmp_path))


def test_a_failed_write_is_raised_to_the_caller(tmp_path, monkeypatch):
    writer = sl.summary.FileWriter(str(tmp_path))

    def disk_full(data):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(writer.event_writer._records, "write", disk_full)
    writer.add_summary(sl.summary.Summary(), 1)
    with pytest.raises(OSError, match="Writing the event file .* No space left"):
        writer.flush()
    writer.close()  # the error was reported once; closing still releases the file

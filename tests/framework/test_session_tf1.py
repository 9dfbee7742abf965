"""Sessions and their configuration as TF1 programs use them (issue 16, item 4): ConfigProto and
its nested messages, RunOptions/RunMetadata with traces, the default session, finalized graphs."""

import json
import subprocess
import sys
import time

import numpy as np
import pytest

import sluice as sl

ENGINES = ["compiled", "interpreted"]


# -- ConfigProto -------------------------------------------------------------------------------
def test_config_proto_fields_by_keyword_and_by_attribute():
    config = sl.ConfigProto(
        allow_soft_placement=True,
        intra_op_parallelism_threads=4,
        device_count={"GPU": 0},
        gpu_options=sl.GPUOptions(per_process_gpu_memory_fraction=0.5),
    )
    config.gpu_options.allow_growth = True
    config.log_device_placement = False
    config.graph_options.optimizer_options.global_jit_level = sl.OptimizerOptions.ON_1
    assert config.gpu_options.allow_growth is True
    assert config.device_count == {"GPU": 0}
    assert config.graph_options.optimizer_options.global_jit_level == 1
    session_config = config.to_session_config()
    assert session_config.allow_soft_placement and not session_config.log_device_placement
    with sl.Session(config=config) as sess:
        assert sess.run(sl.constant(3.0) * 2.0) == 6.0


def test_nested_messages_are_fresh_per_config():
    a, b = sl.ConfigProto(), sl.ConfigProto()
    a.gpu_options.allow_growth = True
    assert b.gpu_options.allow_growth is False
    assert a != b
    b.CopyFrom(a)
    assert a == b


def test_an_unknown_field_is_an_error_naming_it():
    with pytest.raises(ValueError, match='ConfigProto has no "allow_soft_placment" field'):
        sl.ConfigProto(allow_soft_placment=True)
    config = sl.ConfigProto()
    with pytest.raises(ValueError, match='GPUOptions has no "allow_grwth" field'):
        config.gpu_options.allow_grwth = True
    with pytest.raises(ValueError, match='RunOptions has no "trace" field'):
        sl.RunOptions(trace=True)


def test_wrongly_typed_fields_are_errors():
    with pytest.raises(TypeError, match="intra_op_parallelism_threads must be a non-negative"):
        sl.ConfigProto(intra_op_parallelism_threads=-1)
    with pytest.raises(TypeError, match="allow_soft_placement must be bool"):
        sl.ConfigProto(allow_soft_placement="yes")
    with pytest.raises(TypeError, match="gpu_options must be GPUOptions"):
        sl.ConfigProto(gpu_options=0.5)
    with pytest.raises(ValueError, match="trace_level"):
        sl.RunOptions(trace_level=7)


def test_cluster_fields_are_refused_with_the_reason():
    with pytest.raises(ValueError, match="cluster_def is not supported.*sl.distribution"):
        sl.ConfigProto(cluster_def={})


def test_dict_builds_a_nested_message():
    config = sl.ConfigProto(gpu_options={"allow_growth": True})
    assert isinstance(config.gpu_options, sl.GPUOptions) and config.gpu_options.allow_growth


def test_inter_op_parallelism_of_one_runs_partitions_on_the_calling_thread():
    assert (
        sl.ConfigProto(inter_op_parallelism_threads=1).to_session_config().partition_threads
        is False
    )
    assert (
        sl.ConfigProto(inter_op_parallelism_threads=8).to_session_config().partition_threads is True
    )


def test_memory_fraction_needs_a_device_that_reports_its_memory():
    # the CPU reports no memory limit, so the fraction of it is no limit, as before
    config = sl.ConfigProto(gpu_options=sl.GPUOptions(per_process_gpu_memory_fraction=0.3))
    assert config.to_session_config().device_memory_limit is None


def test_operation_timeout_is_every_runs_deadline():
    n = sl.placeholder(sl.int32, [], name="n")
    _, x = sl.while_loop(
        lambda i, x: i < n, lambda i, x: (i + 1, x * 0.5 + 1.0), [sl.constant(0), sl.constant(0.0)]
    )
    with sl.Session(config=sl.ConfigProto(operation_timeout_in_ms=200)) as sess:
        start = time.monotonic()
        with pytest.raises(sl.errors.DeadlineExceededError):
            sess.run(x, {n: 10**9})
        assert time.monotonic() - start < 10.0
        assert sess.run(x, {n: 3}) == 1.75


# -- RunOptions and RunMetadata ----------------------------------------------------------------
@pytest.fixture
def loop_graph():
    x = sl.placeholder(sl.float32, [3], name="x")
    _, y = sl.while_loop(
        lambda i, y: i < 4, lambda i, y: (i + 1, sl.tanh(y) * 2.0), [sl.constant(0), x], name="loop"
    )
    loss = sl.reduce_sum(y * y, name="loss")
    (grad,) = sl.gradients(loss, [x])
    return x, loss, grad


def reference(x):
    y = x
    for _ in range(4):
        y = np.tanh(y) * 2.0
    return np.sum(y * y)


def test_full_trace_records_every_op_and_each_loop_iteration(loop_graph):
    x, loss, grad = loop_graph
    feed = {x: np.array([0.1, -0.2, 0.3], np.float32)}
    options = sl.RunOptions(trace_level=sl.RunOptions.FULL_TRACE)
    metadata = sl.RunMetadata()
    with sl.Session() as sess:
        value, _ = sess.run([loss, grad], feed, options=options, run_metadata=metadata)
        plain = sess.run(loss, feed)
    np.testing.assert_allclose(value, reference(feed[x]), rtol=1e-6)
    np.testing.assert_allclose(value, plain, rtol=1e-6)
    (dev,) = metadata.step_stats.dev_stats
    assert dev.device.endswith("CPU:0")
    names = [n.node_name for n in dev.node_stats]
    assert "loss" in names
    tanh = [n for n in dev.node_stats if n.op == "Tanh"]
    assert sorted(n.iter_num for n in tanh) == [0, 1, 2, 3]
    assert all(n.frame_name.endswith("loop") for n in tanh)
    assert all(n.all_end_rel_micros >= 0 and n.all_start_micros > 1.6e15 for n in dev.node_stats)
    assert all(" = " in n.timeline_label for n in dev.node_stats)


def test_timeline_writes_a_chrome_trace(loop_graph, tmp_path):
    x, loss, _ = loop_graph
    options = sl.RunOptions(trace_level=sl.RunOptions.FULL_TRACE)
    metadata = sl.RunMetadata()
    with sl.Session() as sess:
        sess.run(loss, {x: np.ones(3, np.float32)}, options=options, run_metadata=metadata)
    trace = sl.client.timeline.Timeline(metadata.step_stats)
    path = tmp_path / "timeline.json"
    path.write_text(trace.generate_chrome_trace_format())
    events = json.loads(path.read_text())["traceEvents"]
    ops = [e for e in events if e["ph"] == "X"]
    assert {"Tanh", "Sum"} <= {e["name"] for e in ops}
    assert any(e["ph"] == "M" and e["name"] == "process_name" for e in events)
    with pytest.raises(TypeError, match="step_stats"):
        sl.client.timeline.Timeline(metadata)


def test_untraced_runs_record_no_step_stats(loop_graph):
    x, loss, _ = loop_graph
    metadata = sl.RunMetadata()
    with sl.Session() as sess:
        sess.run(loss, {x: np.ones(3, np.float32)}, options=sl.RunOptions(), run_metadata=metadata)
    assert metadata.step_stats.dev_stats == []
    assert metadata.engine == "compiled"


def test_output_partition_graphs_names_the_ops_per_device():
    a = sl.constant(1.0, name="a")
    b = sl.add(a, 2.0, name="b")
    metadata = sl.RunMetadata()
    with sl.Session() as sess:
        sess.run(b, options=sl.RunOptions(output_partition_graphs=True), run_metadata=metadata)
    (part,) = metadata.partition_graphs
    assert {"a", "b"} <= set(part["ops"])


# -- the default session, eval and run -----------------------------------------------------------
def test_interactive_session_is_the_default_until_closed():
    v = sl.Variable(2.0, name="v")
    sess = sl.InteractiveSession()
    try:
        assert sl.get_default_session() is sess
        v.initializer.run()
        assert (v * 3.0).eval() == 6.0
        sl.assign(v, 5.0).op.run()
        assert v.eval() == 5.0
    finally:
        sess.close()
    assert sl.get_default_session() is None


@pytest.mark.parametrize("engine", ENGINES)
def test_eval_and_run_with_feeds_and_an_explicit_session(engine):
    x = sl.placeholder(sl.float32, [2])
    v = sl.Variable([0.0, 0.0])
    update = sl.assign_add(v, x)
    with sl.Session(config=sl.SessionConfig(engine=engine)) as sess:
        sess.run(v.initializer)
        update.op.run(feed_dict={x: [1.0, 2.0]}, session=sess)
        np.testing.assert_allclose((v * 2.0).eval({}, session=sess), [2.0, 4.0], rtol=1e-6)
        np.testing.assert_allclose((x + v).eval(feed_dict={x: [1.0, 1.0]}), [2.0, 3.0])


def test_eval_without_a_default_session_is_an_error():
    t = sl.constant(1.0)
    with pytest.raises(ValueError, match="session"):
        t.eval()
    with pytest.raises(ValueError, match="session"):
        sl.no_op().run()


def test_a_session_of_another_graph_cannot_run_the_tensor():
    other = sl.Graph()
    with other.as_default():
        t = sl.constant(1.0)
    with sl.Session() as sess, pytest.raises((ValueError, TypeError), match="graph"):
        t.eval(session=sess)


def test_nested_as_default_restores_the_outer_session():
    outer, inner = sl.Session(), sl.Session()
    with outer.as_default():
        with inner.as_default():
            assert sl.get_default_session() is inner
        assert sl.get_default_session() is outer
    assert sl.get_default_session() is None


def test_a_finalized_graph_refuses_new_ops_but_runs():
    g = sl.Graph()
    with g.as_default():
        a = sl.constant(2.0)
        b = a * 3.0
    g.finalize()
    assert g.finalized
    with g.as_default():
        with pytest.raises(RuntimeError, match="finalized"):
            sl.constant(1.0)
    with sl.Session(graph=g) as sess:
        assert sess.run(b) == 6.0


SCRIPT_RESET = """
import sluice as tf
before = tf.get_default_graph()
tf.constant(1.0, name="c")
tf.reset_default_graph()
after = tf.get_default_graph()
assert after is not before and after.get_operations() == []
assert tf.constant(1.0, name="c").op.name == "c"
sess = tf.InteractiveSession()
assert (tf.constant(2.0) * 4.0).eval() == 8.0
sess.close()
print("ok")
"""


def test_reset_default_graph_starts_a_new_one_at_the_top_level():
    # the suite runs each test inside a graph block, so the script's top level is a subprocess
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT_RESET], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_reset_default_graph_inside_a_graph_block_is_an_error():
    with sl.Graph().as_default(), pytest.raises(AssertionError):
        sl.reset_default_graph()

"""SummarySaverHook and the summaries MonitoredTrainingSession writes: read back from the
event files (TFRecord framing and CRCs checked by tests.summary.readers)."""

import numpy as np
import pytest

import sluice as sl

readers = pytest.importorskip("tests.summary.readers")
from tests.training.linear_model import build, reference_w  # noqa: E402


def scalars(logdir, tag):
    """{step: value} of one scalar tag, from every event file in logdir."""
    found = {}
    for path in readers.event_files(str(logdir)):
        for event in readers.read_events(path):
            for value in event.summary.value:
                if value.tag == tag:
                    found[event.step] = value.simple_value
    return found


def session_logs(logdir):
    return [
        (e.session_log.status, e.step)
        for path in readers.event_files(str(logdir))
        for e in readers.read_events(path)
        if e.HasField("session_log")
    ]


def loss_at(step):
    from tests.training.linear_model import X, Y

    w = reference_w(step)
    return float(np.mean((X.astype(np.float64) @ w - Y) ** 2))


def test_monitored_training_session_writes_summaries_and_the_graph(tmp_path):
    m = build(summary=True)
    with m.graph.as_default():
        with sl.train.MonitoredTrainingSession(
            checkpoint_dir=str(tmp_path),
            save_summaries_steps=2,
            log_step_count_steps=2,
            save_checkpoint_secs=None,
            hooks=[sl.train.StopAtStepHook(num_steps=5)],
        ) as sess:
            while not sess.should_stop():
                sess.run(m.train_op)
    sl.summary.FileWriterCache.clear()
    losses = scalars(tmp_path, "loss")
    # fetched with the train op on runs 1, 3, 5; the value is the loss before that step, written
    # at the global step after it
    assert sorted(losses) == [1, 3, 5]
    for step, value in losses.items():
        assert value == pytest.approx(loss_at(step - 1), rel=1e-6)
    assert sorted(scalars(tmp_path, "global_step/sec")) == [3, 5]
    assert (sl.summary.SessionLog.START, 1) in session_logs(tmp_path)
    graphs = [
        e for p in readers.event_files(str(tmp_path)) for e in readers.read_events(p) if e.graph_def
    ]
    assert graphs  # the graph tab has something to show
    assert not (tmp_path / "checkpoint.json").exists()  # checkpoints turned off


def test_summary_saver_hook_on_its_own(tmp_path):
    m = build()
    with m.graph.as_default():
        twice = sl.summary.scalar("twice_w0", 2.0 * m.w[0, 0], collections=[])
        hook = sl.train.SummarySaverHook(save_steps=3, output_dir=str(tmp_path), summary_op=twice)
        with sl.train.MonitoredSession(hooks=[hook]) as sess:
            for _ in range(7):
                sess.run(m.train_op)
    sl.summary.FileWriterCache.clear()
    written = scalars(tmp_path, "twice_w0")
    assert sorted(written) == [1, 4, 7]
    assert written[4] == pytest.approx(2.0 * reference_w(3)[0, 0], rel=1e-6)
    with pytest.raises(ValueError, match="Exactly one of scaffold or summary_op"):
        sl.train.SummarySaverHook(save_steps=1, output_dir=str(tmp_path))
    with pytest.raises(ValueError, match="Either every_secs or every_steps"):
        sl.train.SummarySaverHook(output_dir=str(tmp_path), summary_op=twice)


def test_checkpoint_saver_hook_logs_its_checkpoints(tmp_path):
    m = build()
    with m.graph.as_default():
        hook = sl.train.CheckpointSaverHook(str(tmp_path), save_steps=2)
        with sl.train.MonitoredSession(hooks=[hook]) as sess:
            for _ in range(3):
                sess.run(m.train_op)
    sl.summary.FileWriterCache.clear()
    checkpoint = sl.summary.SessionLog.CHECKPOINT
    assert [s for s in session_logs(tmp_path) if s[0] == checkpoint] == [
        (checkpoint, 0),
        (checkpoint, 2),
        (checkpoint, 3),
    ]

"""Supervisor: managed_session restores or initializes, its checkpoint thread saves on its
timer, a new Supervisor resumes from logdir, OutOfRangeError ends the block cleanly, other
errors (from the block or a thread) are raised after the threads stop; summaries; the session
it hands out serializes runs across threads."""

import threading
import time

import numpy as np
import pytest

import sluice as sl
from tests.training.linear_model import ENGINES, build, config, reference_w


def saved_steps(directory):
    state = sl.train.get_checkpoint_state(str(directory))
    return [int(p.rsplit("-", 1)[1].split(".")[0]) for p in state.all_model_checkpoint_paths]


@pytest.mark.parametrize("engine", ENGINES)
def test_managed_session_trains_checkpoints_and_resumes(tmp_path, engine):
    m = build()
    sv = sl.train.Supervisor(
        graph=m.graph, logdir=str(tmp_path), summary_op=None, save_summaries_secs=0
    )
    assert m.graph.finalized and sv.is_chief and sv.global_step is m.global_step
    with sv.managed_session(config=config(engine)) as sess:
        # the checkpoint thread saves at once, at the restored or initial step
        deadline = time.time() + 30
        while sl.train.latest_checkpoint(str(tmp_path)) is None and time.time() < deadline:
            time.sleep(0.01)
        for _ in range(4):
            if sv.should_stop():
                break
            sess.run(m.train_op)
        np.testing.assert_allclose(sess.run(m.w), reference_w(4), rtol=1e-6, atol=1e-6)
        # as in TF1's PTB model: the last steps are kept by an explicit save
        sv.saver.save(sess, sv.save_path, global_step=sv.global_step)
    assert saved_steps(tmp_path) == [0, 4]
    assert sv.should_stop()
    assert (tmp_path / "graph.pbtxt").exists()

    m = build()
    sv = sl.train.Supervisor(
        graph=m.graph, logdir=str(tmp_path), summary_op=None, save_model_secs=0
    )
    with sv.managed_session(config=config(engine)) as sess:
        assert sess.run(m.global_step) == 4
        np.testing.assert_allclose(sess.run(m.w), reference_w(4), rtol=1e-6, atol=1e-6)
    assert saved_steps(tmp_path) == [0, 4]  # save_model_secs=0: no checkpoint thread


def test_the_checkpoint_thread_saves_every_save_model_secs(tmp_path):
    m = build()
    sv = sl.train.Supervisor(
        graph=m.graph,
        logdir=str(tmp_path),
        summary_op=None,
        save_model_secs=0.05,
        save_summaries_secs=0,
    )
    with sv.managed_session() as sess:
        for _ in range(3):
            sess.run(m.train_op)
            time.sleep(0.12)
    steps = saved_steps(tmp_path)
    assert len(steps) >= 3 and steps[0] == 0 and steps == sorted(steps)


def test_end_of_input_is_a_clean_end_and_other_errors_are_raised(tmp_path):
    g = sl.Graph()
    with g.as_default():
        batch = sl.data.Dataset.range(3).make_one_shot_iterator().get_next()
    sv = sl.train.Supervisor(graph=g, logdir=None)
    seen = []
    with sv.managed_session() as sess:
        while not sv.should_stop():
            seen.append(sess.run(batch))
    assert seen == [0, 1, 2] and sv.should_stop()

    m = build()
    sv = sl.train.Supervisor(graph=m.graph, logdir=str(tmp_path), save_model_secs=0)
    with pytest.raises(KeyError, match="boom"):
        with sv.managed_session() as sess:
            raise KeyError("boom")
    with pytest.raises(ZeroDivisionError):  # a thread's error, raised when the block ends
        with sv.managed_session() as sess:
            sv.loop(None, lambda: 1 / 0)
            assert sv.coord.wait_for_stop(10)
    with pytest.raises(RuntimeError, match="closed Session"):
        sess.run(m.global_step)


def test_summaries_and_steps_per_second_are_written_by_threads(tmp_path):
    readers = pytest.importorskip("tests.summary.readers")
    m = build(summary=True)
    sv = sl.train.Supervisor(
        graph=m.graph, logdir=str(tmp_path), save_summaries_secs=0.05, save_model_secs=0
    )
    with sv.managed_session() as sess:
        for _ in range(3):
            sess.run(m.train_op)
            time.sleep(0.06)
        sv.summary_computed(sess, sess.run(sv.summary_op), global_step=100)
    events = [e for p in readers.event_files(str(tmp_path)) for e in readers.read_events(p)]
    tags = {(v.tag, e.step) for e in events for v in e.summary.value}
    assert ("loss", 100) in tags  # summary_computed
    assert any(tag == "loss" and step < 100 for tag, step in tags)  # the summary thread
    assert any(tag == "global_step/sec" for tag, _ in tags)
    logs = [e.session_log.status for e in events if e.HasField("session_log")]
    assert logs[0] == sl.summary.SessionLog.START and logs[-1] == sl.summary.SessionLog.STOP
    assert any(e.graph_def for e in events)


def test_summary_computed_needs_a_writer_and_workers_start_no_services():
    m = build()
    sv = sl.train.Supervisor(graph=m.graph)  # no logdir: no writer, no services
    with sv.managed_session() as sess:
        with pytest.raises(RuntimeError, match="Writing a summary requires a summary writer"):
            sv.summary_computed(sess, b"")
    assert sv.summary_writer is None and sv.save_path is None
    with pytest.raises(
        ValueError, match="When using replicas, all Variables must have their device set"
    ):
        sl.train.Supervisor(graph=build().graph, is_chief=False)


def test_defaults_are_picked_from_the_graph_collections():
    m = build()
    with m.graph.as_default():
        init = sl.group(m.w.initializer, m.global_step.initializer, name="my_init")
        sl.add_to_collection("init_op", init)
        saver = sl.train.Saver(max_to_keep=1)
    sv = sl.train.Supervisor(graph=m.graph)
    assert sv.init_op is init and sv.saver is saver
    assert m.graph.get_collection("ready_op") == [sv.ready_op]
    assert sv.summary_op is None  # no summaries in the graph
    none = sl.train.Supervisor(
        graph=build().graph, saver=None, init_op=None, global_step=None, ready_op=None
    )
    assert none.saver is None and none.global_step is None and none.ready_op is None


def test_the_session_it_hands_out_takes_turns_between_threads():
    from sluice._tf1.training.supervisor_services import SerializedSession

    active, most = [0], [0]

    class SlowSession:
        graph = None

        def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
            active[0] += 1
            most[0] = max(most[0], active[0])
            time.sleep(0.005)
            active[0] -= 1
            return fetches

    sess = SerializedSession(SlowSession(), threading.RLock())
    threads = [threading.Thread(target=lambda: [sess.run(i) for i in range(10)]) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most[0] == 1 and sess.run(7) == 7
    assert isinstance(sess.raw_session, SlowSession)


def test_queue_runners_get_the_raw_session_and_their_end_is_clean():
    g = sl.Graph()
    with g.as_default():
        index = sl.train.range_input_producer(3, num_epochs=2, shuffle=False).dequeue()
    sv = sl.train.Supervisor(graph=g)
    seen = []
    with sv.managed_session() as sess:
        while not sv.should_stop():
            seen.append(int(sess.run(index)))
    assert seen == [0, 1, 2, 0, 1, 2]


def test_a_worker_supervisor_waits_for_the_chief_and_runs_no_services():
    g = sl.Graph()
    with g.as_default(), g.device("/cpu:0"):
        sl.Variable(1.0, name="v")
    sv = sl.train.Supervisor(graph=g, is_chief=False, logdir="ignored", recovery_wait_secs=0.01)
    assert sv.summary_writer is None and sv.save_path is None  # only a chief writes
    with pytest.raises(sl.errors.DeadlineExceededError, match="not ready after waiting"):
        sv.prepare_or_wait_for_session(max_wait_secs=0.05)
    with pytest.raises(RuntimeError, match="Only chief supervisor can start standard services"):
        sv.start_standard_services(None)


def test_a_feeding_thread_blocked_on_a_full_queue_leaves_the_training_loop_running():
    # TF1's feeder-thread pattern: a thread's enqueue waits for space while the loop dequeues
    # (the session handed out held its lock while the enqueue waited: both hung)
    g = sl.Graph()
    with g.as_default():
        x = sl.placeholder(sl.float32, [None])
        q = sl.FIFOQueue(2, sl.float32, shapes=[[]])
        enqueue = q.enqueue_many([x])
        total = sl.Variable(0.0)
        train = sl.assign_add(total, q.dequeue())
    sv = sl.train.Supervisor(graph=g)
    with sv.managed_session() as sess:
        feeder = threading.Thread(
            target=lambda: [sess.run(enqueue, {x: [1.0, 2.0, 3.0]}) for _ in range(3)], daemon=True
        )
        feeder.start()
        done = []
        loop = threading.Thread(
            target=lambda: done.append([sess.run(train) for _ in range(9)]), daemon=True
        )
        loop.start()
        loop.join(10)
        feeder.join(1)
        assert done and done[0][-1] == 18.0

"""MonitoredTrainingSession, MonitoredSession and SingularMonitoredSession: initialization or
restore, checkpoints on the global-step schedule, resume in a new graph, clean ends (end of
input, step_fn stop), errors, and the finalized graph, as TF 1.15 behaves."""

import os

import numpy as np
import pytest

import sluice as sl
from tests.training.linear_model import ENGINES, build, config, reference_w


def checkpoint_steps(directory):
    state = sl.train.get_checkpoint_state(directory)
    return [int(p.rsplit("-", 1)[1].split(".")[0]) for p in state.all_model_checkpoint_paths]


@pytest.mark.parametrize("engine", ENGINES)
def test_trains_to_the_stop_step_saving_on_the_step_schedule_then_resumes(tmp_path, engine):
    m = build()
    runs = 0
    with m.graph.as_default():
        with sl.train.MonitoredTrainingSession(
            checkpoint_dir=str(tmp_path),
            save_checkpoint_steps=3,
            config=config(engine),
            hooks=[sl.train.StopAtStepHook(num_steps=7)],
        ) as sess:
            while not sess.should_stop():
                sess.run(m.train_op)
                runs += 1
    assert runs == 7
    # at creation (step 0), every 3 steps, and at the end
    assert checkpoint_steps(tmp_path) == [0, 3, 6, 7]
    assert sl.train.latest_checkpoint(str(tmp_path)).endswith("model.ckpt-7.h5")
    for step in (3, 7):
        saved = sl.train.load_variable(str(tmp_path / f"model.ckpt-{step}.h5"), "w")
        np.testing.assert_allclose(saved, reference_w(step), rtol=1e-6, atol=1e-6)
    assert os.path.exists(tmp_path / "model.ckpt-7.meta")
    assert os.path.exists(tmp_path / "graph.pbtxt")

    m = build()  # a new process would rebuild the same graph
    with m.graph.as_default():
        with sl.train.MonitoredTrainingSession(
            checkpoint_dir=str(tmp_path),
            save_checkpoint_steps=3,
            config=config(engine),
            hooks=[sl.train.StopAtStepHook(last_step=10)],
        ) as sess:
            assert sess.run(m.global_step) == 7
            np.testing.assert_allclose(sess.run(m.w), reference_w(7), rtol=1e-6, atol=1e-6)
            while not sess.should_stop():
                sess.run(m.train_op)
    # the creation save is at the restored step 7, so the timer fires next at 10
    assert checkpoint_steps(tmp_path) == [0, 3, 6, 7, 10]
    np.testing.assert_allclose(
        sl.train.load_variable(str(tmp_path / "model.ckpt-10.h5"), "w"),
        reference_w(10),
        rtol=1e-6,
        atol=1e-6,
    )


def test_default_schedule_is_600_seconds_and_two_schedules_are_an_error(tmp_path):
    m = build()
    with m.graph.as_default():
        sess = sl.train.MonitoredTrainingSession(
            checkpoint_dir=str(tmp_path), log_step_count_steps=None
        )
        with sess:
            for _ in range(3):
                sess.run(m.train_op)
        # the creation save and the final one; no timer firing within 600 s
        assert checkpoint_steps(tmp_path) == [0, 3]
    m = build()
    with m.graph.as_default(), pytest.raises(ValueError, match="Can not provide both"):
        sl.train.MonitoredTrainingSession(
            checkpoint_dir=str(tmp_path), save_checkpoint_secs=5, save_checkpoint_steps=5
        )


def test_end_of_input_ends_the_session_cleanly_and_runs_the_end_hooks(tmp_path):
    g = sl.Graph()
    with g.as_default():
        batch = sl.data.Dataset.range(4).batch(2).make_one_shot_iterator().get_next()
        step = sl.train.get_or_create_global_step()
        total = sl.Variable(np.int64(0), name="total")
        with sl.control_dependencies([sl.assign_add(total, sl.reduce_sum(batch))]):
            train_op = sl.assign_add(step, 1)
        final = sl.train.FinalOpsHook(total)
        with sl.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path), hooks=[final]) as sess:
            while not sess.should_stop():
                sess.run(train_op)
    assert final.final_ops_values == 0 + 1 + 2 + 3
    assert checkpoint_steps(tmp_path) == [0, 2]  # the end hooks saved the last step


def test_an_error_skips_the_end_hooks_and_propagates(tmp_path):
    m = build()
    final = sl.train.FinalOpsHook(m.w)
    with m.graph.as_default():
        with pytest.raises(ZeroDivisionError):
            with sl.train.MonitoredTrainingSession(
                checkpoint_dir=str(tmp_path), hooks=[final]
            ) as sess:
                sess.run(m.train_op)
                1 / 0
    assert final.final_ops_values is None
    assert checkpoint_steps(tmp_path) == [0]  # no save at the end of a failed run
    assert not m.graph.finalized


@pytest.mark.parametrize(
    "hook, name",
    [
        (lambda d: sl.train.StopAtStepHook(num_steps=1), "StopAtStepHook"),
        (lambda d: sl.train.CheckpointSaverHook(d, save_steps=1), "CheckpointSaverHook"),
        (lambda d: sl.train.StepCounterHook(), "StepCounterHook"),
        (
            lambda d: sl.train.SummarySaverHook(save_steps=1, summary_op=sl.constant(1.0)),
            "SummarySaverHook",
        ),
    ],
)
def test_hooks_on_the_global_step_need_one(tmp_path, hook, name):
    m = build(global_step=False)
    with m.graph.as_default():
        with pytest.raises(RuntimeError, match=f"^Global step should be created to use {name}"):
            sl.train.MonitoredSession(hooks=[hook(str(tmp_path))])
        # MonitoredTrainingSession's first hook with a checkpoint_dir counts steps
        with pytest.raises(RuntimeError, match="use StepCounterHook"):
            sl.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path))


def test_graph_is_finalized_while_open_and_opened_again_after(tmp_path):
    m = build()
    with m.graph.as_default():
        with sl.train.MonitoredTrainingSession() as sess:
            assert m.graph.finalized
            with pytest.raises(RuntimeError, match="finalized"):
                sl.constant(1.0)
            sess.run(m.train_op)
        assert not m.graph.finalized
        m.graph.finalize()
        with sl.train.MonitoredTrainingSession() as sess:
            sess.run(m.train_op)
        assert m.graph.finalized  # finalized by the caller: left so


class Recorder(sl.train.SessionRunHook):
    """Records the calls it gets; asks for `fetches` (and `feeds`) with every run."""

    def __init__(self, name, calls, fetches=None, feeds=None, stop_after=None):
        self.name, self.calls = name, calls
        self.fetches, self.feeds, self.stop_after = fetches, feeds, stop_after
        self.results = []

    def begin(self):
        self.calls.append((self.name, "begin", sl.get_default_graph().finalized))

    def after_create_session(self, session, coord):
        self.calls.append((self.name, "after_create_session", isinstance(session, sl.Session)))

    def before_run(self, run_context):
        self.calls.append((self.name, "before_run"))
        if self.fetches is None and self.feeds is None:
            return None
        return sl.train.SessionRunArgs(self.fetches, self.feeds)

    def after_run(self, run_context, run_values):
        self.calls.append((self.name, "after_run"))
        self.results.append(run_values.results)
        assert isinstance(run_values, sl.train.SessionRunValues)
        if self.stop_after is not None and len(self.results) >= self.stop_after:
            run_context.request_stop()

    def end(self, session):
        self.calls.append((self.name, "end"))


def test_hooks_are_called_in_order_with_their_extra_fetches_and_feeds():
    g = sl.Graph()
    with g.as_default():
        x = sl.placeholder(sl.float32, [], name="x")
        scale = sl.placeholder_with_default(np.float32(1.0), [], name="scale")
        y = sl.multiply(x, scale)
        calls = []
        a = Recorder("a", calls, fetches={"double": 2.0 * y, "pair": (y, x)})
        b = Recorder("b", calls, feeds={scale: np.float32(10.0)}, stop_after=2)
        with sl.train.MonitoredSession(hooks=[a, b]) as sess:
            assert sess.run(y, {x: 3.0}) == pytest.approx(30.0)
            assert not sess.should_stop()
            assert sess.run([y, x], {x: 1.0}) == [pytest.approx(10.0), pytest.approx(1.0)]
            assert sess.should_stop()
            with pytest.raises(RuntimeError, match="Run called even after should_stop"):
                sess.run(y, {x: 1.0})
    assert calls == [
        ("a", "begin", False),
        ("b", "begin", False),
        ("a", "after_create_session", True),
        ("b", "after_create_session", True),
        ("a", "before_run"),
        ("b", "before_run"),
        ("a", "after_run"),
        ("b", "after_run"),
        ("a", "before_run"),
        ("b", "before_run"),
        ("a", "after_run"),
        ("b", "after_run"),
        ("a", "end"),
        ("b", "end"),
    ]
    first = a.results[0]
    assert set(first) == {"double", "pair"} and isinstance(first["pair"], tuple)
    assert first["double"] == pytest.approx(60.0) and first["pair"] == (30.0, 3.0)
    assert b.results == [None, None]  # it asked for feeds only


def test_a_tensor_fed_twice_is_an_error():
    g = sl.Graph()
    with g.as_default():
        x = sl.placeholder(sl.float32, [], name="x")
        one, two = (Recorder(n, [], feeds={x: np.float32(1.0)}) for n in "ab")
        with sl.train.MonitoredSession(hooks=[one]) as sess:
            with pytest.raises(RuntimeError, match="fed by a SessionRunHook and user"):
                sess.run(x, {x: 2.0})
        with sl.train.MonitoredSession(hooks=[one, two]) as sess:
            with pytest.raises(RuntimeError, match="fed by two hooks"):
                sess.run(x)


def test_run_step_fn_runs_with_and_without_hooks_and_stops_the_loop():
    m = build()
    calls = []
    with m.graph.as_default():
        hook = Recorder("h", calls, fetches=m.global_step)

        def step_fn(step_context):
            before = step_context.session.run(m.global_step)  # no hooks
            step_context.run_with_hooks(m.train_op)
            if before >= 2:
                step_context.request_stop()
            return before

        seen = []
        with sl.train.MonitoredSession(hooks=[hook]) as sess:
            while not sess.should_stop():
                seen.append(sess.run_step_fn(step_fn))
            pytest.fail("request_stop must end the block")  # pragma: no cover
        with sl.train.SingularMonitoredSession() as sess:
            with pytest.raises(ValueError, match="`step_fn` may either have one"):
                sess.run_step_fn(lambda ctx: None)
    assert seen == [0, 1]
    assert [c[1] for c in calls].count("after_run") == 3
    assert calls[-1] == ("h", "end")


def test_singular_session_exposes_the_raw_session_and_restores_a_given_file(tmp_path):
    m = build()
    with m.graph.as_default():
        saver = sl.train.Saver()
        with sl.train.SingularMonitoredSession() as sess:
            raw = sess.raw_session()
            assert isinstance(raw, sl.Session) and sess.graph is m.graph
            for _ in range(2):
                sess.run(m.train_op)
            path = saver.save(raw, str(tmp_path / "manual"), global_step=m.global_step)
        assert sess.raw_session() is None and sess.graph is None
        with sl.train.SingularMonitoredSession(checkpoint_filename_with_path=path) as sess:
            assert sess.run(m.global_step) == 2
            np.testing.assert_allclose(sess.run(m.w), reference_w(2), rtol=1e-6, atol=1e-6)
        with pytest.raises(ValueError, match="both checkpoint_dir and checkpoint_filename"):
            sl.train.SingularMonitoredSession(
                checkpoint_dir=str(tmp_path), checkpoint_filename_with_path=path
            )


def test_a_worker_waits_for_a_ready_model():
    m = build()
    with m.graph.as_default():
        # sessions share no variables in one process: nobody initializes this worker's
        with pytest.raises(sl.errors.DeadlineExceededError, match="not ready after waiting"):
            sl.train.MonitoredTrainingSession(is_chief=False, max_wait_secs=0)
    g = sl.Graph()
    with g.as_default():
        c = sl.constant(3.0)
        with sl.train.MonitoredTrainingSession(is_chief=False, max_wait_secs=0) as sess:
            assert sess.run(c) == 3.0


def test_a_model_left_uninitialized_is_reported_by_name():
    m = build()
    with m.graph.as_default():
        scaffold = sl.train.Scaffold(init_op=sl.no_op(name="does_nothing"))
        with pytest.raises(
            RuntimeError,
            match="did not make model ready.*Variables not initialized: w, global_step",
        ):
            sl.train.MonitoredSession(sl.train.ChiefSessionCreator(scaffold=scaffold))


def test_queue_runners_start_with_the_session_and_their_end_ends_it():
    g = sl.Graph()
    with g.as_default():
        # num_epochs counts in a local variable: the scaffold's local_init_op initializes it
        index = sl.train.range_input_producer(3, num_epochs=2, shuffle=False).dequeue()
        seen = []
        with sl.train.MonitoredTrainingSession() as sess:
            while not sess.should_stop():
                seen.append(int(sess.run(index)))
    assert seen == [0, 1, 2, 0, 1, 2]

"""The TF1 hooks one by one: SecondOrStepTimer, StopAtStepHook, LoggingTensorHook,
NanTensorHook, StepCounterHook, CheckpointSaverHook (+ listeners), SummarySaverHook,
FeedFnHook, FinalOpsHook. Time-based schedules run on a mocked clock."""

import logging
import types

import pytest

import sluice as sl
from sluice._tf1.training import timers
from tests.training.linear_model import ENGINES, build, config


class FakeClock:
    def __init__(self):
        self.now = 1000.0

    def time(self):
        return self.now


@pytest.fixture
def clock(monkeypatch):
    fake = FakeClock()
    monkeypatch.setattr(timers, "time", types.SimpleNamespace(time=fake.time))
    return fake


def test_second_or_step_timer(clock):
    by_steps = sl.train.SecondOrStepTimer(every_steps=3)
    assert by_steps.should_trigger_for_step(5)  # the first time, always
    assert by_steps.update_last_triggered_step(5) == (None, None)
    assert not by_steps.should_trigger_for_step(5)
    assert not by_steps.should_trigger_for_step(7)
    assert by_steps.should_trigger_for_step(8)
    clock.now += 2.5
    assert by_steps.update_last_triggered_step(8) == (2.5, 3)
    assert by_steps.last_triggered_step() == 8

    by_secs = sl.train.SecondOrStepTimer(every_secs=10)
    by_secs.update_last_triggered_step(0)
    clock.now += 9.9
    assert not by_secs.should_trigger_for_step(100)
    clock.now += 0.1
    assert by_secs.should_trigger_for_step(1)
    with pytest.raises(ValueError, match="Either every_secs or every_steps"):
        sl.train.SecondOrStepTimer()
    with pytest.raises(ValueError, match="Can not provide both"):
        sl.train.SecondOrStepTimer(every_secs=1, every_steps=1)


def test_stop_at_step_hook_arguments():
    with pytest.raises(ValueError, match="One of num_steps or last_step"):
        sl.train.StopAtStepHook()
    with pytest.raises(ValueError, match="Only one of num_steps or last_step"):
        sl.train.StopAtStepHook(num_steps=1, last_step=2)


def test_stop_at_last_step_counts_the_global_step_not_the_runs():
    m = build()
    with m.graph.as_default():
        jump = sl.assign(m.global_step, 2)
        final = sl.train.FinalOpsHook(m.global_step)
        hooks = [sl.train.StopAtStepHook(last_step=5), final]
        with sl.train.MonitoredSession(hooks=hooks) as sess:
            sess.run(jump)  # global step 2: three more steps to go
            runs = 0
            while not sess.should_stop():
                sess.run(m.train_op)
                runs += 1
    assert runs == 3 and final.final_ops_values == 5


@pytest.mark.parametrize("engine", ENGINES)
def test_logging_tensor_hook_logs_every_n_iterations_and_at_end(caplog, engine):
    m = build()
    with m.graph.as_default():
        hook = sl.train.LoggingTensorHook(
            {"step": m.global_step, "w0": m.w[0, 0]}, every_n_iter=2, at_end=True
        )
        with caplog.at_level(logging.INFO, logger="sluice"):
            with sl.train.SingularMonitoredSession(hooks=[hook], config=config(engine)) as sess:
                for _ in range(5):
                    sess.run(m.train_op)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("step = ")]
    # iterations 0, 2, 4 (values fetched with the run), then the end; tags sorted
    assert len(lines) == 4
    assert lines[0] == "step = 0, w0 = 0.0"
    assert lines[1].startswith("step = 2, w0 = ") and lines[1].endswith(" sec)")
    assert lines[3].startswith("step = 5, w0 = ")


def test_logging_tensor_hook_names_formatter_and_errors(caplog):
    g = sl.Graph()
    with g.as_default():
        a = sl.constant(1.5, name="a")
        sl.constant([1, 2], name="b")
        hook = sl.train.LoggingTensorHook(["b", "a:0"], every_n_iter=1)
        custom = sl.train.LoggingTensorHook(
            {"x": a}, at_end=True, formatter=lambda v: f"custom {v['x'] * 2}"
        )
        with caplog.at_level(logging.INFO, logger="sluice"):
            with sl.train.MonitoredSession(hooks=[hook, custom]) as sess:
                sess.run(a)
        messages = [r.getMessage() for r in caplog.records]
        assert "b = [1 2], a:0 = 1.5" in messages  # the list's order
        assert "custom 3.0" in messages
        with pytest.raises(ValueError, match="exactly one of every_n_iter and every_n_secs"):
            sl.train.LoggingTensorHook([a])
        with pytest.raises(ValueError, match="exactly one of every_n_iter and every_n_secs"):
            sl.train.LoggingTensorHook([a], every_n_iter=1, every_n_secs=1)
        with pytest.raises(ValueError, match="invalid every_n_iter=0"):
            sl.train.LoggingTensorHook([a], every_n_iter=0)
        sl.split(sl.constant([1.0, 2.0]), 2, name="two")  # an op with two outputs
        with pytest.raises(ValueError, match="ambiguous"):
            sl.train.MonitoredSession(hooks=[sl.train.LoggingTensorHook(["two"], every_n_iter=1)])


def test_logging_tensor_hook_every_n_secs(clock, caplog):
    g = sl.Graph()
    with g.as_default():
        a = sl.constant(7, name="a")
        hook = sl.train.LoggingTensorHook([a], every_n_secs=10)
        with caplog.at_level(logging.INFO, logger="sluice"):
            with sl.train.MonitoredSession(hooks=[hook]) as sess:
                for advance in (0, 4, 4, 4, 1):
                    clock.now += advance
                    sess.run(a)
    # a tensor given in a list is its own tag, as in TF1
    logged = [r.getMessage() for r in caplog.records if r.getMessage().startswith(f"{a} = 7")]
    assert logged == [f"{a} = 7", f"{a} = 7 (12.000 sec)"]  # at 0 s and at 12 s


def test_nan_tensor_hook_raises_or_requests_a_stop():
    g = sl.Graph()
    with g.as_default():
        x = sl.placeholder(sl.float32, [])
        loss = sl.sqrt(x)
        with sl.train.MonitoredSession(hooks=[sl.train.NanTensorHook(loss)]) as sess:
            sess.run(loss, {x: 4.0})
            with pytest.raises(
                sl.train.NanLossDuringTrainingError, match="NaN loss during training"
            ):
                sess.run(loss, {x: -1.0})
        quiet = sl.train.NanTensorHook(loss, fail_on_nan_loss=False)
        with sl.train.MonitoredSession(hooks=[quiet]) as sess:
            sess.run(loss, {x: 1.0})
            assert not sess.should_stop()
            sess.run(loss, {x: -1.0})
            assert sess.should_stop()


def test_step_counter_hook_reports_steps_per_second(clock, caplog):
    m = build()
    with m.graph.as_default():
        hook = sl.train.StepCounterHook(every_n_steps=2)
        with caplog.at_level(logging.INFO, logger="sluice"):
            with sl.train.MonitoredSession(hooks=[hook]) as sess:
                for _ in range(5):
                    clock.now += 0.5
                    sess.run(m.train_op)
    rates = [r.getMessage() for r in caplog.records if r.getMessage().startswith("global_step/sec")]
    assert rates == ["global_step/sec: 2", "global_step/sec: 2"]  # 2 steps per 1.0 s
    with pytest.raises(ValueError, match="exactly one of every_n_steps and every_n_secs"):
        sl.train.StepCounterHook(every_n_steps=None)


class CountingListener(sl.train.CheckpointSaverListener):
    def __init__(self, stop_at=None):
        self.calls, self.stop_at = [], stop_at

    def begin(self):
        self.calls.append("begin")

    def before_save(self, session, global_step_value):
        self.calls.append(("before", global_step_value))

    def after_save(self, session, global_step_value):
        self.calls.append(("after", global_step_value))
        return global_step_value == self.stop_at

    def end(self, session, global_step_value):
        self.calls.append(("end", global_step_value))


def saved_steps(directory):
    state = sl.train.get_checkpoint_state(str(directory))
    return [int(p.rsplit("-", 1)[1].split(".")[0]) for p in state.all_model_checkpoint_paths]


def test_checkpoint_saver_hook_on_seconds_with_listeners(tmp_path, clock):
    m = build()
    with m.graph.as_default():
        listener = CountingListener()
        hook = sl.train.CheckpointSaverHook(
            str(tmp_path), save_secs=10, listeners=[listener], checkpoint_basename="lin"
        )
        with sl.train.MonitoredSession(hooks=[hook]) as sess:
            for _ in range(4):
                clock.now += 4
                sess.run(m.train_op)
    # at creation (0), once 10 s passed (after step 3: 12 s), at the end (4)
    assert saved_steps(tmp_path) == [0, 3, 4]
    assert (tmp_path / "lin-3.h5").exists()
    assert listener.calls == [
        "begin",
        ("before", 0),
        ("after", 0),
        ("before", 3),
        ("after", 3),
        ("before", 4),
        ("after", 4),
        ("end", 4),
    ]


def test_a_listener_stops_training_and_savers_are_checked(tmp_path):
    m = build()
    with m.graph.as_default():
        hook = sl.train.CheckpointSaverHook(
            str(tmp_path), save_steps=2, listeners=[CountingListener(stop_at=2)]
        )
        with sl.train.MonitoredSession(hooks=[hook]) as sess:
            runs = 0
            while not sess.should_stop():
                sess.run(m.train_op)
                runs += 1
        assert runs == 2
        with pytest.raises(ValueError, match="both saver and scaffold"):
            sl.train.CheckpointSaverHook(
                str(tmp_path), save_steps=1, saver=object(), scaffold=sl.train.Scaffold()
            )
        sl.train.Saver()
        sl.train.Saver()
        two_savers = sl.train.CheckpointSaverHook(str(tmp_path / "b"), save_steps=1)
        with pytest.raises(RuntimeError, match="More than one item in collection savers"):
            with sl.train.MonitoredSession(
                hooks=[two_savers],
                session_creator=sl.train.ChiefSessionCreator(
                    scaffold=sl.train.Scaffold(saver=object())
                ),
            ):
                pass


def test_feed_fn_hook_feeds_every_run_and_final_ops_hook_runs_at_end():
    g = sl.Graph()
    with g.as_default():
        x = sl.placeholder(sl.float32, [])
        total = sl.Variable(0.0)
        add = sl.assign_add(total, x)
        feeds = iter([1.0, 2.0, 4.0])
        final = sl.train.FinalOpsHook(
            {"total": total.read_value(), "twice": 2.0 * total}, final_ops_feed_dict=None
        )
        feed = sl.train.FeedFnHook(lambda: {x: next(feeds)})
        with sl.train.MonitoredSession(hooks=[feed, final]) as sess:
            for _ in range(3):
                sess.run(add)
    assert final.final_ops_values == {"total": 7.0, "twice": 14.0}

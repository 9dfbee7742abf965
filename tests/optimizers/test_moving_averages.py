"""`sl.train.ExponentialMovingAverage` as TF1's moving_averages_test: shadow names and
collections, the decay with num_updates, zero debiasing of Tensors, variables_to_restore with
Saver, both engines; plus make_template's scopes and the TF1 variable-collection helpers."""

import os

import numpy as np
import pytest

import sluice as sl

ENGINES = ["interpreted", "compiled"]


def _session(engine):
    return sl.Session(config=sl.SessionConfig(engine=engine))


@pytest.mark.parametrize("engine", ENGINES)
def test_apply_moves_shadows_with_num_updates_decay(engine):
    with sl.Graph().as_default():
        w = sl.Variable([10.0, 11.0], name="w")
        b = sl.Variable(2.0, name="b")
        step = sl.Variable(3, name="step", trainable=False)
        ema = sl.train.ExponentialMovingAverage(0.25, num_updates=step)
        assign = sl.group(w.assign([1.0, 2.0]), b.assign(6.0))
        with sl.control_dependencies([assign]):
            update = ema.apply([w, b])
        with _session(engine) as sess:
            sess.run(sl.global_variables_initializer())
            sess.run(update)
            got_w, got_b = sess.run([ema.average(w), ema.average(b)])
    decay = min(0.25, (1 + 3) / (10 + 3))  # num_updates limits the decay
    want_w = np.array([10.0, 11.0]) * decay + np.array([1.0, 2.0]) * (1 - decay)
    np.testing.assert_allclose(got_w, want_w, rtol=1e-6)
    np.testing.assert_allclose(got_b, 2.0 * decay + 6.0 * (1 - decay), rtol=1e-6)


def test_shadow_names_collections_and_op():
    w = sl.Variable([1.0], name="w")
    with sl.variable_scope("scope"):
        v = sl.get_variable("v", [2])
    ema = sl.train.ExponentialMovingAverage(0.9)
    update = ema.apply()  # the trainable variables
    assert isinstance(update, sl.Operation)
    assert update.name == "ExponentialMovingAverage"
    assert ema.average(w).op.name == "w/ExponentialMovingAverage"
    assert ema.average(v).op.name == "scope/v/ExponentialMovingAverage"
    assert ema.average_name(w) == "w/ExponentialMovingAverage"
    assert sl.moving_average_variables() == [w, v]
    shadows = [ema.average(w), ema.average(v)]
    assert all(s in sl.global_variables() and s not in sl.trainable_variables() for s in shadows)
    assert ema.average(sl.Variable(0.0, name="other")) is None
    with pytest.raises(ValueError, match="already computed"):
        ema.apply([w])


def test_average_name_before_apply_and_bad_dtype():
    w = sl.Variable(1.0, name="w")
    assert sl.train.ExponentialMovingAverage(0.9, name="Avg").average_name(w) == "w/Avg"
    with pytest.raises(TypeError, match="half, float, or double"):
        sl.train.ExponentialMovingAverage(0.9).apply([sl.Variable(1, name="i")])


@pytest.mark.parametrize("engine", ENGINES)
def test_zero_debias_of_a_tensor(engine):
    with sl.Graph().as_default():
        x = sl.placeholder(sl.float32, [2], name="x")
        ema = sl.train.ExponentialMovingAverage(0.5, zero_debias=True)
        update = ema.apply([x])
        avg = ema.average(x)
        names = sorted(v.op.name for v in sl.global_variables())
        with _session(engine) as sess:
            sess.run(sl.global_variables_initializer())
            values = []
            for feed in ([4.0, 8.0], [2.0, 0.0]):
                sess.run(update, {x: feed})
                values.append(sess.run(avg))
    assert names == [
        "x/ExponentialMovingAverage",
        "x/ExponentialMovingAverage/biased",
        "x/ExponentialMovingAverage/local_step",
    ]
    np.testing.assert_allclose(values[0], [4.0, 8.0], rtol=1e-6)  # no pull towards zero
    biased = 0.5 * (0.5 * np.array([4.0, 8.0])) + 0.5 * np.array([2.0, 0.0])
    np.testing.assert_allclose(values[1], biased / (1 - 0.5**2), rtol=1e-6)


def _train_and_save(path, save_list):
    with sl.Graph().as_default():
        w = sl.Variable([1.0, 2.0], name="w")
        step = sl.Variable(7, name="step", trainable=False)
        ema = sl.train.ExponentialMovingAverage(0.5)
        with sl.control_dependencies([w.assign([3.0, 6.0])]):
            update = ema.apply([w])
        with sl.Session() as sess:
            sess.run(sl.global_variables_initializer())
            sess.run(update)
            return sl.train.Saver(save_list(w, step, ema)).save(sess, os.path.join(path, "model"))


def _restore_averages(path):
    with sl.Graph().as_default():
        w = sl.Variable([0.0, 0.0], name="w")
        step = sl.Variable(0, name="step", trainable=False)
        mapping = sl.train.ExponentialMovingAverage(0.5).variables_to_restore()
        assert mapping == {"w/ExponentialMovingAverage": w, "step": step}
        with sl.Session() as sess:
            sl.train.Saver(mapping).restore(sess, path)
            np.testing.assert_allclose(sess.run(w), [2.0, 4.0])  # the average, not [3, 6]
            assert sess.run(step) == 7


def test_variables_to_restore_loads_averages_through_saver(tmp_path):
    def averages_and_step(w, step, ema):
        return {"w/ExponentialMovingAverage": ema.average(w), "step": step}

    _restore_averages(_train_and_save(tmp_path, averages_and_step))


def test_default_saver_saves_variables_and_their_averages(tmp_path):
    _restore_averages(_train_and_save(tmp_path, lambda w, step, ema: None))


# -- make_template ------------------------------------------------------------------------------
def _linear(x, units=3):
    w = sl.get_variable("w", [2, units], initializer=sl.ones_initializer())
    return sl.matmul(x, w)


def test_make_template_creates_on_first_call_and_reuses():
    template = sl.make_template("linear", _linear, units=4)
    assert template.variable_scope is None
    a = template(sl.ones([1, 2]))
    b = template(sl.ones([1, 2]))
    assert [v.op.name for v in sl.global_variables()] == ["linear/w"]
    assert template.variable_scope_name == "linear"
    assert [v.op.name for v in template.trainable_variables] == ["linear/w"]
    assert a.op.name == "linear/MatMul" and b.op.name == "linear_1/MatMul"
    other = sl.make_template("linear", _linear)
    other(sl.ones([1, 2]))
    assert [v.op.name for v in sl.global_variables()] == ["linear/w", "linear_1/w"]
    with sl.Session() as sess:
        sess.run(sl.global_variables_initializer())
        np.testing.assert_allclose(sess.run(b), np.full([1, 4], 2.0))


def test_make_template_create_scope_now_and_new_variables_raise():
    template = sl.make_template("net", _linear, create_scope_now_=True)
    assert template.variable_scope_name == "net"
    with sl.variable_scope("elsewhere"):
        template(sl.ones([1, 2]))
        template(sl.ones([1, 2]))
    assert [v.op.name for v in sl.global_variables()] == ["net/w"]

    bad = sl.make_template("bad", lambda x: x * sl.Variable(1.0, name="v"))
    bad(1.0)
    with pytest.raises(ValueError, match="after the first time"):
        bad(1.0)


# -- collections and deprecated names -----------------------------------------------------------
def test_local_and_model_variables_and_aliases():
    local = sl.get_local_variable("counter", [2], initializer=sl.zeros_initializer())
    w = sl.Variable(1.0, name="w")
    sl.add_to_collection(sl.GraphKeys.MODEL_VARIABLES, w)
    assert local in sl.local_variables()
    assert local not in sl.global_variables() and local not in sl.trainable_variables()
    assert sl.model_variables() == [w]
    assert sl.all_variables() == sl.global_variables() == [w]
    init = sl.initialize_all_variables()
    tables = sl.tables_initializer()
    assert tables.type == "NoOp" and tables.name == "init_all_tables"
    with sl.Session() as sess:
        sess.run([init, sl.local_variables_initializer(), tables])
        np.testing.assert_array_equal(sess.run(local), [0.0, 0.0])

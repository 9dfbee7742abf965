"""`sl.estimator` as TF 1.15's `tf.estimator`: a tiny linear model trained, evaluated and
predicted against NumPy; resuming from model_dir across Estimator objects; Dataset and
numpy_input_fn inputs; model_fn arguments by name; EstimatorSpec's validation; hooks.

Each Estimator call builds, compiles and checkpoints a graph (about a second on a loaded
machine): the default run keeps train/evaluate/predict against NumPy and the checks that build
no session; resuming, Dataset input, argument passing, hooks, checkpoint schedules, warm start
and train_and_evaluate are marked slow (`pytest -m slow tests/tf1_api/test_estimator_tf1.py`)."""

import numpy as np
import pytest

import sluice as sl

X = np.array([0.0, 1.0, 2.0, 3.0, 4.0, 5.0], np.float32)
Y = 2.0 * X + 1.0
LR = 0.05


def linear_model_fn(features, labels, mode, params=None):
    w = sl.get_variable("w", [], initializer=sl.zeros_initializer())
    b = sl.get_variable("b", [], initializer=sl.zeros_initializer())
    predictions = w * features["x"] + b
    if mode == sl.estimator.ModeKeys.PREDICT:
        return sl.estimator.EstimatorSpec(mode, predictions={"y": predictions, "x": features["x"]})
    loss = sl.reduce_mean(sl.square(predictions - labels))
    train_op = sl.train.GradientDescentOptimizer(LR).minimize(
        loss, global_step=sl.train.get_global_step()
    )
    metrics = {"mean_prediction": sl.metrics.mean(predictions)}
    return sl.estimator.EstimatorSpec(
        mode, predictions=predictions, loss=loss, train_op=train_op, eval_metric_ops=metrics
    )


def numpy_steps(steps, w=0.0, b=0.0, x=X, y=Y):
    """Full-batch gradient descent on mean((w x + b - y)^2), as the model_fn trains."""
    for _ in range(steps):
        err = w * x + b - y
        w, b = w - LR * np.mean(2 * err * x), b - LR * np.mean(2 * err)
    return w, b


def full_batch_input(num_epochs=None):
    return sl.estimator.inputs.numpy_input_fn(
        {"x": X}, Y, batch_size=len(X), num_epochs=num_epochs, shuffle=False
    )


def no_checkpoints(**kwargs):
    return sl.estimator.RunConfig(save_checkpoints_steps=None, save_checkpoints_secs=None, **kwargs)


@pytest.fixture
def trained(tmp_path):
    est = sl.estimator.Estimator(linear_model_fn, model_dir=str(tmp_path / "m"))
    return est.train(full_batch_input(), steps=4)


def test_train_matches_numpy_and_returns_self(trained):
    w, b = numpy_steps(4)
    np.testing.assert_allclose(trained.get_variable_value("w"), w, rtol=1e-6)
    np.testing.assert_allclose(trained.get_variable_value("b"), b, rtol=1e-6)
    assert trained.get_variable_value("global_step") == 4
    assert {"w", "b", "global_step"} <= set(trained.get_variable_names())
    assert trained.latest_checkpoint().startswith(trained.model_dir)


@pytest.mark.slow
def test_resume_across_estimators_continues_the_global_step(trained):
    again = sl.estimator.Estimator(linear_model_fn, model_dir=trained.model_dir)
    again.train(full_batch_input(), steps=3)
    w, b = numpy_steps(7)
    assert again.get_variable_value("global_step") == 7
    np.testing.assert_allclose(again.get_variable_value("w"), w, rtol=1e-6)
    np.testing.assert_allclose(again.get_variable_value("b"), b, rtol=1e-6)
    # max_steps is a global step: already reached, nothing trains
    again.train(full_batch_input(), max_steps=7)
    assert again.get_variable_value("global_step") == 7
    again.train(full_batch_input(), max_steps=8)
    assert again.get_variable_value("global_step") == 8


def test_evaluate_restores_and_returns_metrics_loss_and_step(trained):
    w, b = numpy_steps(4)
    batches = [slice(0, 4), slice(4, 6)]  # batch_size 4 over 6 rows, one epoch
    input_fn = sl.estimator.inputs.numpy_input_fn({"x": X}, Y, batch_size=4, shuffle=False)
    results = trained.evaluate(input_fn)
    assert set(results) == {"loss", "mean_prediction", "global_step"}
    assert results["global_step"] == 4
    losses = [np.mean((w * X[s] + b - Y[s]) ** 2) for s in batches]
    np.testing.assert_allclose(results["loss"], np.mean(losses), rtol=1e-5)
    np.testing.assert_allclose(results["mean_prediction"], np.mean(w * X + b), rtol=1e-5)
    assert isinstance(results["loss"], np.floating)
    # steps=1: the first batch only
    one = trained.evaluate(input_fn, steps=1)
    np.testing.assert_allclose(one["loss"], losses[0], rtol=1e-5)


def test_predict_yields_examples_batches_and_chosen_keys(trained):
    w, b = numpy_steps(4)
    input_fn = sl.estimator.inputs.numpy_input_fn({"x": X}, batch_size=4, shuffle=False)
    examples = list(trained.predict(input_fn))
    assert len(examples) == 6 and set(examples[0]) == {"x", "y"}
    np.testing.assert_allclose([e["y"] for e in examples], w * X + b, rtol=1e-6)
    batches = list(trained.predict(input_fn, predict_keys=["y"], yield_single_examples=False))
    assert [sorted(p) for p in batches] == [["y"], ["y"]]
    assert [len(p["y"]) for p in batches] == [4, 2]
    with pytest.raises(ValueError, match="Expected to run at least one output"):
        next(trained.predict(input_fn, predict_keys=["nope"]))


@pytest.mark.slow
def test_dataset_input_trains_until_the_input_ends(tmp_path):
    def input_fn(params, mode):
        assert mode == sl.estimator.ModeKeys.TRAIN and params == {"n": 2}
        dataset = sl.data.Dataset.from_tensor_slices(({"x": X}, Y))
        return dataset.batch(params["n"])

    est = sl.estimator.Estimator(linear_model_fn, str(tmp_path), params={"n": 2})
    est.train(input_fn)  # 6 rows, batches of 2: three steps, then the input ends
    assert est.get_variable_value("global_step") == 3
    w, b = 0.0, 0.0
    for i in range(3):
        w, b = numpy_steps(1, w, b, X[2 * i : 2 * i + 2], Y[2 * i : 2 * i + 2])
    np.testing.assert_allclose(est.get_variable_value("w"), w, rtol=1e-6)


@pytest.mark.slow
def test_model_fn_gets_the_arguments_it_declares(tmp_path):
    seen = {}

    def model_fn(features, labels, mode, params, config):
        seen[mode] = (sorted(features), labels is None, params, config.model_dir)
        return linear_model_fn(features, labels, mode)

    config = no_checkpoints(model_dir=str(tmp_path))
    est = sl.estimator.Estimator(model_fn, config=config, params={"p": 1})
    est.train(full_batch_input(), steps=1)
    list(est.predict(sl.estimator.inputs.numpy_input_fn({"x": X}, shuffle=False)))
    assert seen["train"] == (["x"], False, {"p": 1}, str(tmp_path))
    assert seen["infer"] == (["x"], True, {"p": 1}, str(tmp_path))
    assert est.params == {"p": 1} and est.config.model_dir == str(tmp_path)

    def only_features(features):
        return linear_model_fn(features, None, "infer")

    with pytest.raises(ValueError, match="does not take labels, but input_fn returns labels"):
        sl.estimator.Estimator(only_features, str(tmp_path / "o")).train(
            full_batch_input(), steps=1
        )


@pytest.mark.parametrize(
    "model_fn, params, message",
    [
        (lambda labels, mode: None, None, "must include features argument"),
        (lambda features, labels: None, {"a": 1}, "does not include params argument"),
        (lambda features, extra: None, None, "following not expected args: \\['extra'\\]"),
    ],
)
def test_model_fn_signature_errors(model_fn, params, message):
    with pytest.raises(ValueError, match=message):
        sl.estimator.Estimator(model_fn, model_dir="unused", params=params)


def test_model_fn_must_return_an_estimator_spec(tmp_path):
    est = sl.estimator.Estimator(lambda features, labels: None, str(tmp_path))
    with pytest.raises(ValueError, match="model_fn should return an EstimatorSpec"):
        est.train(full_batch_input(), steps=1)


def test_estimator_spec_validation():
    x = sl.constant([1.0, 2.0])
    loss = sl.reduce_sum(x)
    train_op = sl.no_op()
    spec = sl.estimator.EstimatorSpec
    with pytest.raises(ValueError, match="Missing train_op"):
        spec("train", loss=loss)
    with pytest.raises(ValueError, match="Missing loss"):
        spec("eval")
    with pytest.raises(ValueError, match="Missing predictions"):
        spec("infer")
    with pytest.raises(ValueError, match="Loss must be scalar"):
        spec("eval", loss=x)
    with pytest.raises(TypeError, match="loss must be Tensor"):
        spec("eval", loss=1.0)
    with pytest.raises(TypeError, match="train_op must be Operation or Tensor"):
        spec("train", loss=loss, train_op="step")
    with pytest.raises(TypeError, match="All hooks must be SessionRunHook"):
        spec("train", loss=loss, train_op=train_op, training_hooks=[object()])
    with pytest.raises(TypeError, match="eval_metric_ops must be a dict"):
        spec("eval", loss=loss, eval_metric_ops=[loss])
    with pytest.raises(TypeError, match="must be \\(metric_value, update_op\\) tuples"):
        spec("eval", loss=loss, eval_metric_ops={"m": loss})
    with pytest.raises(TypeError, match="scaffold must be tf.train.Scaffold"):
        spec("eval", loss=loss, scaffold="s")
    with sl.Graph().as_default():
        other = sl.constant(1.0)
    with pytest.raises(ValueError, match="must be from the default graph"):
        spec("eval", loss=other)
    reshaped = spec("eval", loss=sl.reshape(loss, [1]))
    assert reshaped.loss.shape.as_list() == []
    full = spec("train", predictions=x, loss=loss, train_op=train_op)
    assert full.eval_metric_ops == {} and isinstance(full.scaffold, sl.train.Scaffold)
    with pytest.raises(ValueError, match="mode of EstimatorSpec cannot be changed"):
        full._replace(mode="eval")


class RecordingHook(sl.train.SessionRunHook):
    def __init__(self):
        self.calls = []

    def begin(self):
        self.calls.append("begin")

    def after_create_session(self, session, coord):
        self.calls.append("create")

    def before_run(self, run_context):
        self.calls.append("before")

    def after_run(self, run_context, run_values):
        self.calls.append("after")

    def end(self, session):
        self.calls.append("end")


@pytest.mark.slow
def test_hooks_are_called_in_each_mode(tmp_path):
    spec_hooks = {"train": RecordingHook(), "eval": RecordingHook(), "infer": RecordingHook()}

    def model_fn(features, labels, mode):
        spec = linear_model_fn(features, labels, mode)
        return spec._replace(
            training_hooks=[spec_hooks["train"]],
            evaluation_hooks=[spec_hooks["eval"]],
            prediction_hooks=[spec_hooks["infer"]],
        )

    est = sl.estimator.Estimator(model_fn, config=no_checkpoints(model_dir=str(tmp_path)))
    hook = RecordingHook()
    est.train(full_batch_input(), hooks=[hook], steps=2)
    expected = ["begin", "create", "before", "after", "before", "after", "end"]
    assert hook.calls == spec_hooks["train"].calls == expected
    est.evaluate(full_batch_input(), steps=1)
    assert spec_hooks["eval"].calls == ["begin", "create", "before", "after", "end"]
    list(est.predict(sl.estimator.inputs.numpy_input_fn({"x": X}, batch_size=4, shuffle=False)))
    # two batches, then a third run that ends the input: before_run, no after_run, end
    assert spec_hooks["infer"].calls.count("before") == 3
    assert spec_hooks["infer"].calls.count("after") == 2
    assert spec_hooks["infer"].calls[-1] == "end"
    with pytest.raises(TypeError, match="Hooks must be a SessionRunHook"):
        est.train(full_batch_input(), hooks=[object()], steps=1)


def test_train_argument_errors(tmp_path):
    est = sl.estimator.Estimator(linear_model_fn, str(tmp_path))
    with pytest.raises(ValueError, match="Can not provide both steps and max_steps"):
        est.train(full_batch_input(), steps=1, max_steps=1)
    with pytest.raises(ValueError, match="Must specify steps > 0"):
        est.train(full_batch_input(), steps=0)
    with pytest.raises(ValueError, match="Could not find trained model"):
        est.get_variable_value("w")


@pytest.mark.slow
def test_checkpoints_every_n_steps_and_keep_max(tmp_path):
    config = sl.estimator.RunConfig(
        model_dir=str(tmp_path), save_checkpoints_steps=2, keep_checkpoint_max=2
    )
    est = sl.estimator.Estimator(linear_model_fn, config=config)
    est.train(full_batch_input(), steps=5)
    state = sl.train.get_checkpoint_state(str(tmp_path))
    steps = [int(p.rsplit("-", 1)[1].split(".")[0]) for p in state.all_model_checkpoint_paths]
    assert steps == [4, 5]


@pytest.mark.slow
def test_warm_start_from_another_model_dir(trained, tmp_path):
    fresh = sl.estimator.Estimator(
        linear_model_fn, str(tmp_path / "warm"), warm_start_from=trained.model_dir
    )
    input_fn = sl.estimator.inputs.numpy_input_fn({"x": X}, batch_size=6, shuffle=False)
    w, b = numpy_steps(4)
    np.testing.assert_allclose([p["y"] for p in fresh.predict(input_fn)], w * X + b, rtol=1e-6)
    fresh.train(full_batch_input(), steps=1)  # starts from the warm values, global step 0
    assert fresh.get_variable_value("global_step") == 1
    np.testing.assert_allclose(fresh.get_variable_value("w"), numpy_steps(5)[0], rtol=1e-6)


def test_run_config_checks_and_replace(tmp_path):
    with pytest.raises(ValueError, match="cannot be both set"):
        sl.estimator.RunConfig(save_checkpoints_steps=1, save_checkpoints_secs=1)
    with pytest.raises(ValueError, match="log_step_count_steps should be > 0"):
        sl.estimator.RunConfig(log_step_count_steps=0)
    with pytest.raises(ValueError, match="Replacing is_chief is not supported"):
        sl.estimator.RunConfig().replace(is_chief=False)
    config = sl.estimator.RunConfig()
    assert (config.save_checkpoints_secs, config.save_checkpoints_steps) == (600, None)
    replaced = config.replace(save_checkpoints_steps=5)
    assert (replaced.save_checkpoints_secs, replaced.save_checkpoints_steps) == (None, 5)
    with pytest.raises(ValueError, match="model_dir` are set both"):
        sl.estimator.Estimator(
            linear_model_fn, model_dir="a", config=sl.estimator.RunConfig(model_dir="b")
        )
    temporary = sl.estimator.Estimator(linear_model_fn)
    assert temporary.model_dir and temporary.latest_checkpoint() is None


def test_compat_v1_names_the_same_estimator():
    assert sl.compat.v1.estimator.Estimator is sl.estimator.Estimator
    assert sl.compat.v1.estimator.inputs.numpy_input_fn is sl.estimator.inputs.numpy_input_fn
    assert sl.estimator.StopAtStepHook is sl.train.StopAtStepHook


def test_numpy_input_fn_batches_and_errors():
    with pytest.raises(ValueError, match="shuffle must be provided"):
        sl.estimator.inputs.numpy_input_fn({"x": X})
    input_fn = sl.estimator.inputs.numpy_input_fn(
        X, {"t": Y}, batch_size=4, num_epochs=2, shuffle=False
    )
    features, labels = input_fn()
    assert isinstance(features, sl.Tensor) and sorted(labels) == ["t"]
    with sl.Session() as sess:
        got = [sess.run(features) for _ in range(3)]
        with pytest.raises(sl.errors.OutOfRangeError):
            sess.run(features)
    np.testing.assert_array_equal(np.concatenate(got), np.concatenate([X, X]))
    assert [len(g) for g in got] == [4, 4, 4]
    shuffled = sl.estimator.inputs.numpy_input_fn({"x": X}, batch_size=6, shuffle=True)()
    assert shuffled["x"].shape.as_list() == [None]
    with sl.Session() as sess:
        assert sorted(sess.run(shuffled["x"])) == sorted(X)
    forever = sl.estimator.inputs.numpy_input_fn({"x": X}, batch_size=4, num_epochs=None,
                                                 shuffle=False)()  # fmt: skip
    assert forever["x"].shape.as_list() == [4]
    with pytest.raises(ValueError, match="Length of tensors in x and y is mismatched"):
        sl.estimator.inputs.numpy_input_fn({"x": X}, Y[:3], shuffle=False)()
    with pytest.raises(ValueError, match="duplicate keys are found in both x and y"):
        sl.estimator.inputs.numpy_input_fn({"x": X}, {"x": Y}, shuffle=False)()
    with pytest.raises(TypeError, match="x must be a dict or array; got list"):
        sl.estimator.inputs.numpy_input_fn([1.0], shuffle=False)()


def test_evaluate_refuses_a_metric_named_loss(tmp_path):
    def model_fn(features, labels, mode):
        spec = linear_model_fn(features, labels, mode)
        return spec._replace(eval_metric_ops={"loss": sl.metrics.mean(spec.loss)})

    est = sl.estimator.Estimator(model_fn, str(tmp_path))
    with pytest.raises(ValueError, match='Metric with name "loss" is not allowed'):
        est.evaluate(full_batch_input(num_epochs=1))


@pytest.mark.slow
def test_train_and_evaluate_evaluates_each_new_checkpoint(tmp_path):
    config = sl.estimator.RunConfig(model_dir=str(tmp_path), save_checkpoints_steps=3)
    est = sl.estimator.Estimator(linear_model_fn, config=config)
    counter = RecordingHook()
    eval_spec = sl.estimator.EvalSpec(full_batch_input(), steps=1, hooks=[counter], throttle_secs=0)
    metrics, exports = sl.estimator.train_and_evaluate(
        est, sl.estimator.TrainSpec(full_batch_input(), max_steps=7), eval_spec
    )
    assert counter.calls.count("begin") == 3  # the checkpoints of steps 3, 6 and 7
    assert metrics["global_step"] == 7 and exports == []
    w, b = numpy_steps(7)
    np.testing.assert_allclose(metrics["loss"], np.mean((w * X + b - Y) ** 2), rtol=1e-5)
    with pytest.raises(ValueError, match="There should be a CheckpointSaverHook"):
        sl.estimator.train_and_evaluate(
            sl.estimator.Estimator(linear_model_fn, config=no_checkpoints()),
            sl.estimator.TrainSpec(full_batch_input(), max_steps=1),
            eval_spec,
        )


def test_train_and_eval_specs_validate():
    with pytest.raises(TypeError, match="`input_fn` must be callable"):
        sl.estimator.TrainSpec(None)
    with pytest.raises(ValueError, match="Must specify max_steps > 0"):
        sl.estimator.TrainSpec(full_batch_input(), max_steps=0)
    with pytest.raises(ValueError, match="Must specify steps > 0"):
        sl.estimator.EvalSpec(full_batch_input(), steps=0)
    with pytest.raises(TypeError, match="`name` must be string"):
        sl.estimator.EvalSpec(full_batch_input(), name=1)
    with pytest.raises(ValueError, match="Must specify throttle_secs >= 0"):
        sl.estimator.EvalSpec(full_batch_input(), throttle_secs=-1)
    spec = sl.estimator.EvalSpec(full_batch_input())
    defaults = (spec.steps, spec.throttle_secs, spec.start_delay_secs, spec.hooks)
    assert defaults == (100, 600, 120, ())
    with pytest.raises(TypeError, match="`eval_spec` must have type"):
        sl.estimator.train_and_evaluate(None, None, None)

"""Overridden train_step / test_step / predict_step, as the Keras guide "Customizing what happens
in fit() with TensorFlow" writes them: traced once into the model's graph, run as one step per
batch, logs to History, the progress bar and callbacks; compute_loss, the metrics property,
fit(x) without targets, compile() without a loss, and the data structures a step receives."""

import numpy as np
import pytest

import sluice as sl
from sluice import layers as L
from sluice.testing.keras_guide import GuideTrainStep

keras = sl


def _regression(n=32, features=4, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, features)).astype(np.float32)
    y = (x @ rng.normal(size=(features, 1))).astype(np.float32)
    return x, y


class GuideModel(GuideTrainStep, keras.Model):
    """The guide's first example (`sluice/testing/keras_guide.py`): compiled loss and metrics
    used from a custom step."""


def _functional(cls, units=1, features=4):
    inputs = keras.Input(shape=(features,))
    hidden = L.Dense(8, activation="tanh")(inputs)
    return cls(inputs, L.Dense(units)(hidden))


def test_the_guides_train_step_trains_as_the_built_in_step_does():
    x, y = _regression()
    custom, builtin = _functional(GuideModel), _functional(keras.Model)
    builtin.set_weights(custom.get_weights())
    for model in (custom, builtin):
        model.compile(optimizer=sl.optimizers.Adam(0.05), loss="mse", metrics=["mae"])
    versions = []
    record = sl.callbacks.LambdaCallback(
        on_train_batch_end=lambda batch, logs: versions.append(custom.graph.version)
    )
    got = custom.fit(x, y, batch_size=8, epochs=3, shuffle=False, verbose=0, callbacks=[record])
    want = builtin.fit(x, y, batch_size=8, epochs=3, shuffle=False, verbose=0)
    assert list(got.history) == ["loss", "mae"]
    for name in ("loss", "mae"):
        np.testing.assert_allclose(got.history[name], want.history[name], rtol=1e-5)
    assert got.history["loss"][-1] < 0.5 * got.history["loss"][0]
    assert len(set(versions)) == 1  # traced once: no op added after the first step
    for a, b in zip(custom.get_weights(), builtin.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert custom.steps_trained() == 12
    # the built-in test_step is kept: evaluate agrees
    np.testing.assert_allclose(
        custom.evaluate(x, y, verbose=0), builtin.evaluate(x, y, verbose=0), rtol=1e-5
    )


class TrackerModel(keras.Model):
    """The guide's lower-level example: its own metrics, no compiled loss."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.loss_tracker = keras.metrics.Mean(name="loss")
        self.mae_metric = keras.metrics.Mean(name="mae")
        self.unused = keras.metrics.Mean(name="unused")
        self.loss_fn = keras.losses.MeanSquaredError()

    def train_step(self, data):
        x, y = data
        with sl.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.loss_fn(y, y_pred)
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
        self.loss_tracker.update_state(loss)
        self.mae_metric.update_state(sl.reduce_mean(sl.abs(y - y_pred)))
        # a Metric stands for its result, a Python number passes through
        return {
            "loss": self.loss_tracker.result(),
            "mae": self.mae_metric,
            "lr": 0.5,
            "batch_loss": loss,
            "unused": self.unused,  # never updated: 0, as Keras's
        }

    @property
    def metrics(self):
        return [self.loss_tracker, self.mae_metric]


def test_metrics_listed_by_the_model_are_reset_at_each_epoch(tmp_path):
    x, y = _regression()
    model = _functional(TrackerModel)
    model.compile(optimizer=sl.optimizers.SGD(0.05))  # no loss: the step computes its own
    batches = []
    record = sl.callbacks.LambdaCallback(on_train_batch_end=lambda b, logs: batches.append(logs))
    csv = tmp_path / "log.csv"
    history = model.fit(
        x, y, batch_size=16, epochs=2, verbose=0, shuffle=False,
        callbacks=[record, sl.callbacks.CSVLogger(str(csv))],
    )  # fmt: skip
    assert model.metrics_names == ["loss", "mae"]
    assert batches[0]["lr"] == 0.5 and isinstance(batches[0]["mae"], float)
    assert batches[0]["unused"] == 0.0
    # the running mean restarts with each epoch: the trackers were reset
    losses = [logs["batch_loss"] for logs in batches]
    assert batches[2]["loss"] == pytest.approx(losses[2])
    assert batches[3]["loss"] == pytest.approx((losses[2] + losses[3]) / 2)
    assert history.history["loss"] == pytest.approx([batches[1]["loss"], batches[3]["loss"]])
    assert csv.read_text().splitlines()[0] == "epoch,batch_loss,loss,lr,mae,unused"


class WeightedModel(keras.Model):
    """The guide's sample_weight example: data is (x, y, sample_weight) when weights are given."""

    def train_step(self, data):
        x, y, sample_weight = sl.utils.unpack_x_y_sample_weight(data)
        self.seen = len(data)
        with sl.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compute_loss(y=y, y_pred=y_pred, sample_weight=sample_weight)
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply(grads, self.trainable_variables)
        for metric in self.metrics:
            if metric.name == "loss":
                metric.update_state(loss)
            elif metric.name == "mae":
                metric.update_state(y, y_pred, sample_weight=sample_weight)
        return {m.name: m.result() for m in self.metrics if m.name in ("loss", "mae")}

    def test_step(self, data):
        x, y = data
        y_pred = self(x, training=False)
        loss = self.compute_loss(y=y, y_pred=y_pred)
        self.loss_tracker_for_test.update_state(loss)
        return {"loss": self.loss_tracker_for_test.result(), "twice": 2 * loss}


def test_sample_weights_and_a_custom_test_step_for_validation():
    x, y = _regression()
    model = _functional(WeightedModel)
    model.loss_tracker_for_test = keras.metrics.Mean(name="test_loss")
    model.compile(optimizer="adam", loss="mse", metrics=["mae"])
    zero = np.zeros(len(x), np.float32)
    before = model.get_weights()
    logs = model.train_on_batch(x, y, sample_weight=zero, return_dict=True)
    assert model.seen == 3 and logs["loss"] == 0.0  # every sample weighs nothing
    for a, b in zip(before, model.get_weights()):
        np.testing.assert_array_equal(a, b)
    ones = np.ones(len(x), np.float32)
    history = model.fit(
        x, y, sample_weight=ones, epochs=2, batch_size=8, verbose=0, validation_data=(x, y)
    )
    assert model.seen == 3
    assert set(history.history) == {"loss", "mae", "val_loss", "val_twice"}
    assert model.metrics_names == ["loss", "mae", "test_loss"]
    results = model.evaluate(x, y, verbose=0, return_dict=True)
    assert results["twice"] == pytest.approx(2 * results["loss"], rel=1e-4)
    # the loss of the last batch, doubled: not a running mean
    assert model.test_on_batch(x[:4], y[:4], return_dict=True)["twice"] > 0
    # data of another structure traces a second step, which keeps the optimizer's state
    state = list(model.optimizer.variables())
    model.fit(x, y, epochs=1, verbose=0)
    assert list(model.optimizer.variables()) == state


class Gan(keras.Model):
    """A GAN in the guide's shape: no call, two optimizers given to an overridden compile, the
    discriminator trained, then the generator through the updated discriminator."""

    def __init__(self, latent_dim=3, features=4):
        super().__init__()
        self.latent_dim = latent_dim
        self.generator = [L.Dense(8, activation="relu"), L.Dense(features)]
        self.discriminator = [L.Dense(8, activation="relu"), L.Dense(1)]
        self.d_loss_tracker = keras.metrics.Mean(name="d_loss")
        self.g_loss_tracker = keras.metrics.Mean(name="g_loss")

    @property
    def metrics(self):
        return [self.d_loss_tracker, self.g_loss_tracker]

    def compile(self, d_optimizer, g_optimizer, loss_fn):
        super().compile()
        self.d_optimizer = d_optimizer
        self.g_optimizer = g_optimizer
        self.loss_fn = loss_fn

    def generate(self, z):
        for layer in self.generator:
            z = layer(z)
        return z

    def discriminate(self, images):
        for layer in self.discriminator:
            images = layer(images)
        return images

    def weights_of(self, layers):
        return [w for layer in layers for w in layer.trainable_weights]

    def train_step(self, real):
        if isinstance(real, tuple):
            real = real[0]
        batch_size = sl.shape(real)[0]
        z = sl.random_normal(sl.stack([batch_size, self.latent_dim]))
        fake = self.generate(z)
        combined = sl.concat([fake, real], axis=0)
        labels = sl.concat([sl.ones_like(real[:, :1]), sl.zeros_like(real[:, :1])], axis=0)
        with sl.GradientTape() as tape:
            d_loss = self.loss_fn(labels, self.discriminate(combined))
        d_weights = self.weights_of(self.discriminator)
        self.d_optimizer.apply(tape.gradient(d_loss, d_weights), d_weights)
        z = sl.random_normal(sl.stack([batch_size, self.latent_dim]))
        with sl.GradientTape() as tape:  # through the discriminator as just updated
            predictions = self.discriminate(self.generate(z))
            g_loss = self.loss_fn(sl.zeros_like(real[:, :1]), predictions)
        g_weights = self.weights_of(self.generator)
        self.g_optimizer.apply(tape.gradient(g_loss, g_weights), g_weights)
        self.d_loss_tracker.update_state(d_loss)
        self.g_loss_tracker.update_state(g_loss)
        return {"d_loss": self.d_loss_tracker.result(), "g_loss": self.g_loss_tracker.result()}


def _gan():
    gan = Gan()
    gan.compile(
        d_optimizer=sl.optimizers.Adam(0.01),
        g_optimizer=sl.optimizers.Adam(0.01),
        loss_fn=keras.losses.BinaryCrossentropy(from_logits=True),
    )
    return gan


def test_a_gan_without_call_trains_both_parts_from_x_alone():
    x, _ = _regression(n=24)
    gan = _gan()
    history = gan.fit(x, epochs=2, batch_size=8, verbose=0)
    assert set(history.history) == {"d_loss", "g_loss"}
    assert all(np.isfinite(history.history["d_loss"]))
    before = gan.get_weights()
    assert len(before) == 8  # both parts' kernels and biases
    gan.fit(sl.data.Dataset.from_tensor_slices(x).batch(8), epochs=1, verbose=0)
    assert all(not np.array_equal(a, b) for a, b in zip(before, gan.get_weights()))
    assert len(gan.d_optimizer.variables()) > 0 and len(gan.g_optimizer.variables()) > 0
    assert gan.steps_trained() == 9


class ProgramOrder(keras.Model):
    """A step reading a variable after writing it sees the new value, as in eager TensorFlow."""

    def __init__(self):
        super().__init__()
        self.dense = L.Dense(1, kernel_initializer="ones", use_bias=False)

    def call(self, x):
        return self.dense(x)

    def train_step(self, data):
        kernel = self.dense.kernel
        before = sl.reduce_sum(kernel.value())
        kernel.assign_add(sl.ones_like(kernel.value()), read_value=False)
        after = sl.reduce_sum(kernel.value())
        y = self(data, training=True)  # the forward pass reads the updated kernel too
        return {"before": before, "after": after, "out": sl.reduce_mean(y)}


@pytest.mark.parametrize("jit_compile", [True, False])
def test_reads_after_writes_in_a_step_see_the_new_value(jit_compile):
    model = ProgramOrder()
    model.compile(jit_compile=jit_compile)
    x = np.ones((2, 3), np.float32)
    logs = model.train_on_batch(x, return_dict=True)
    assert (logs["before"], logs["after"], logs["out"]) == (3.0, 6.0, 6.0)
    logs = model.train_on_batch(x, return_dict=True)
    assert (logs["before"], logs["after"], logs["out"]) == (6.0, 9.0, 9.0)


class ExtraMetric(keras.Model):
    """Keras's pattern of adding to the built-in step: super().train_step, then one more log."""

    def train_step(self, data):
        logs = super().train_step(data)
        x, y = data
        return {**logs, "y_mean": sl.reduce_mean(y)}


def test_an_override_may_call_the_built_in_step():
    x, y = _regression()
    model, builtin = _functional(ExtraMetric), _functional(keras.Model)
    builtin.set_weights(model.get_weights())
    for m in (model, builtin):
        m.compile(sl.optimizers.SGD(0.1), "mse", metrics=["mae"])
    got = model.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0).history
    want = builtin.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0).history
    assert list(got) == ["loss", "mae", "y_mean"]
    np.testing.assert_allclose(got["loss"], want["loss"], rtol=1e-5)
    assert got["y_mean"][-1] == pytest.approx(float(y[-8:].mean()), rel=1e-5)


class Sampling(L.Layer):
    def call(self, inputs):
        mean, log_var = inputs
        return mean + sl.exp(0.5 * log_var) * sl.random_normal(sl.shape(mean))


class Vae(keras.Model):
    """VAE-like: encoder and decoder layers in one subclassed model; the KL term by add_loss."""

    def __init__(self, features=4, latent=2):
        super().__init__()
        self.hidden = L.Dense(8, activation="relu")
        self.mean = L.Dense(latent)
        self.log_var = L.Dense(latent)
        self.sampling = Sampling()
        self.decoder = L.Dense(features)

    def call(self, x):
        h = self.hidden(x)
        mean, log_var = self.mean(h), self.log_var(h)
        kl = -0.5 * sl.reduce_mean(1 + log_var - sl.square(mean) - sl.exp(log_var))
        self.add_loss(kl)
        return self.decoder(self.sampling([mean, log_var]))


def test_a_vae_trained_by_compiled_loss_and_add_loss():
    x, _ = _regression(n=32)
    vae = Vae()
    vae.compile(sl.optimizers.Adam(0.02), loss="mse")
    history = vae.fit(x, x, epochs=4, batch_size=8, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]


class VaeStep(Vae):
    """The same VAE trained by its own step from x alone, the loss from `self.losses`."""

    def __init__(self):
        super().__init__()
        self.total = keras.metrics.Mean(name="total")
        self.kl = keras.metrics.Mean(name="kl")

    def train_step(self, data):
        with sl.GradientTape() as tape:
            reconstruction = self(data, training=True)
            kl = sl.add_n(self.losses)
            total = sl.reduce_mean(sl.square(data - reconstruction)) + kl
        grads = tape.gradient(total, self.trainable_weights)
        self.optimizer.apply_gradients(zip(grads, self.trainable_weights))
        self.total.update_state(total)
        self.kl.update_state(kl)
        return {"total": self.total.result(), "kl": self.kl.result()}


def test_a_vae_step_reads_its_add_loss_terms_from_losses():
    x, _ = _regression(n=32)
    vae = VaeStep()
    vae.compile(sl.optimizers.Adam(0.02))
    history = vae.fit(x, epochs=4, batch_size=8, verbose=0)
    assert list(history.history) == ["total", "kl"]
    # the compiled loss tracker is listed too, as in Keras 3; fit resets every metric listed
    assert vae.metrics_names == ["loss", "total", "kl"]
    assert history.history["total"][-1] < history.history["total"][0]
    assert all(k > 0 for k in history.history["kl"])


class LogisticEndpoint(L.Layer):
    def call(self, targets, logits):
        self.add_loss(keras.losses.BinaryCrossentropy(from_logits=True)(targets, logits))
        return sl.sigmoid(logits)


def test_the_endpoint_layer_pattern_fits_a_dict_without_targets():
    inputs = keras.Input(shape=(3,), name="inputs")
    targets = keras.Input(shape=(2,), name="targets")
    logits = L.Dense(2)(inputs)
    predictions = LogisticEndpoint(name="predictions")(targets, logits)
    model = keras.Model(inputs=[inputs, targets], outputs=predictions)
    model.compile(optimizer=sl.optimizers.Adam(0.05))  # no loss argument
    rng = np.random.default_rng(0)
    data = {"inputs": rng.random((16, 3)), "targets": (rng.random((16, 2)) > 0.5) * 1.0}
    history = model.fit(data, epochs=3, batch_size=8, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    assert model.evaluate(data, verbose=0) > 0  # the add_loss term, in inference mode
    with pytest.raises(ValueError, match="No loss to compute"):
        plain = _functional(keras.Model, features=3)
        plain.compile("sgd")
        plain.fit(data["inputs"], epochs=1, verbose=0)


def _shapes(data):
    if isinstance(data, dict):
        return {k: _shapes(v) for k, v in data.items()}
    if isinstance(data, tuple):
        return tuple(_shapes(v) for v in data)
    return tuple(data.shape.as_list())


class StructureProbe(keras.Model):
    def __init__(self):
        super().__init__()
        self.dense = L.Dense(1)

    def call(self, x):
        return self.dense(x)

    def train_step(self, data):
        self.seen = _shapes(data)
        x = data[0] if isinstance(data, tuple) else data
        y = self(x["a"] if isinstance(x, dict) else x, training=True)
        return {"out": sl.reduce_mean(y)}

    def predict_step(self, data):
        return {"twice": 2.0 * self(data["a"] if isinstance(data, dict) else data)}


@pytest.mark.parametrize(
    "args, kwargs, seen",
    [
        ((np.ones((4, 2)),), {}, (None, 2)),
        (
            ({"a": np.ones((4, 2)), "b": np.zeros((4, 1, 3))}, np.ones(4)),
            {},
            ({"a": (None, 2), "b": (None, 1, 3)}, (None,)),
        ),
        (  # class weights become the sample weights of (x, y, sample_weight)
            (np.ones((4, 2)), np.array([0, 1, 1, 0])),
            {"class_weight": {1: 2.0}},
            ((None, 2), (None,), (None,)),
        ),
    ],
)
def test_a_step_gets_the_data_as_keras_packs_it(args, kwargs, seen):
    model = StructureProbe()
    model.compile()
    model.fit(*args, **kwargs, epochs=1, batch_size=2, verbose=0)
    assert model.seen == seen


def test_an_overridden_predict_step_and_a_dataset_of_dicts():
    model = StructureProbe()
    model.compile()
    x = np.arange(12, dtype=np.float32).reshape(6, 2)
    model.fit(x, epochs=1, batch_size=3, verbose=0)
    direct = model(x)
    out = model.predict(x, batch_size=4, verbose=0)
    np.testing.assert_allclose(out["twice"], 2 * direct, rtol=1e-6)
    dataset = sl.data.Dataset.from_tensor_slices({"a": x}).batch(4)
    np.testing.assert_allclose(model.predict(dataset, verbose=0)["twice"], 2 * direct, rtol=1e-6)


def test_unpack_and_pack_as_keras():
    x, y, w = np.ones(2), np.zeros(2), np.full(2, 0.5)
    assert sl.utils.unpack_x_y_sample_weight(x)[1:] == (None, None)
    assert sl.utils.unpack_x_y_sample_weight((x,))[0] is x
    assert sl.utils.unpack_x_y_sample_weight([x, y])[1] is y
    assert sl.utils.unpack_x_y_sample_weight((x, y, w))[2] is w
    with pytest.raises(ValueError, match="found a tuple of 4"):
        sl.utils.unpack_x_y_sample_weight((x, y, w, w))
    assert sl.utils.pack_x_y_sample_weight(x) is x
    assert sl.utils.pack_x_y_sample_weight((x, y)) == ((x, y),)
    assert sl.utils.pack_x_y_sample_weight(x, y) == (x, y)
    assert len(sl.utils.pack_x_y_sample_weight(x, y, w)) == 3


def test_a_step_that_returns_no_dict_is_refused():
    class Bad(keras.Model):
        def __init__(self):
            super().__init__()
            self.dense = L.Dense(1)

        def call(self, x):
            return self.dense(x)

        def train_step(self, data):
            return sl.reduce_sum(self(data))

    model = Bad()
    model.compile()
    with pytest.raises(TypeError, match="Bad.train_step must return a dict of logs"):
        model.fit(np.ones((2, 2), np.float32), verbose=0)


def test_early_stopping_and_history_read_a_custom_steps_logs():
    x, y = _regression()
    model = _functional(TrackerModel)
    model.compile(optimizer=sl.optimizers.SGD(0.0))  # nothing improves
    stop = sl.callbacks.EarlyStopping(monitor="loss", patience=1, min_delta=1e-3)
    history = model.fit(x, y, epochs=10, batch_size=8, verbose=0, callbacks=[stop])
    assert len(history.history["loss"]) == 2


def test_a_metric_never_updated_gives_zero_in_the_logs():
    class Model(sl.Model):
        def __init__(self):
            super().__init__()
            self.dense = sl.layers.Dense(1)
            self.unused = sl.metrics.Mean(name="unused")
            self.tracker = sl.metrics.Mean(name="loss")

        def call(self, x):
            return self.dense(x)

        def train_step(self, data):
            x, y = data
            with sl.GradientTape() as tape:
                loss = sl.ops.mean((self(x) - y) ** 2)
            grads = tape.gradient(loss, self.trainable_variables)
            self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
            self.tracker.update_state(loss)
            return {m.name: m.result() for m in self.metrics}  # Keras's idiom

    model = Model()
    model.compile("adam")
    history = model.fit(np.ones((8, 2)), np.ones((8, 1)), epochs=2, verbose=0)
    assert history.history["unused"] == [0.0, 0.0]
    assert len(history.history["loss"]) == 2


def test_fit_a_model_without_trainable_weights_warns_and_logs_its_loss():
    # the subclassing guide: a model whose only layer adds an activity loss
    class ActivityRegularization(sl.layers.Layer):
        def call(self, inputs):
            self.add_loss(1e-2 * sl.ops.mean(inputs))
            return inputs

    inputs = sl.Input((3,))
    model = sl.Model(inputs, ActivityRegularization()(inputs))
    model.compile(optimizer="adam", loss="mse")
    x, y = np.full((2, 3), 1.0, np.float32), np.zeros((2, 3), np.float32)
    with pytest.warns(UserWarning, match="does not have any trainable weights"):
        history = model.fit(x, y, verbose=0)
    np.testing.assert_allclose(history.history["loss"], [1.0 + 1e-2], rtol=1e-5)

"""Weights belong to layers, not graphs: a layer or model (a Sequential built from an Input, a
functional or subclassed model, an application) can be called in any other model any number of
times, sharing its weights; training through one model changes what the other sees, in
get_weights, predict and saved files."""

import numpy as np
import pytest

import sluice as sl

L = sl.layers
RNG = np.random.default_rng(0)


def data(*shape):
    return RNG.normal(size=shape).astype("float32")


def test_siamese_twins_share_one_tower():
    tower = sl.Sequential([sl.Input((5,)), L.Dense(4, activation="tanh"), L.Dense(3)])
    a, b = sl.Input((5,)), sl.Input((5,))
    distance = L.Lambda(lambda t: sl.reduce_sum(sl.square(t[0] - t[1]), 1, keepdims=True))
    siamese = sl.Model([a, b], distance([tower(a), tower(b)]))
    assert len(siamese.trainable_weights) == 4  # one tower, counted once
    siamese.compile("sgd", "mse")
    before = tower.get_weights()
    xa, xb, y = data(16, 5), data(16, 5), np.ones((16, 1), "float32")
    siamese.fit([xa, xb], y, epochs=2, verbose=0)
    after = tower.get_weights()
    assert not np.allclose(before[0], after[0])
    ta, tb = tower.predict(xa, verbose=0), tower.predict(xb, verbose=0)
    expected = ((ta - tb) ** 2).sum(1, keepdims=True)
    np.testing.assert_allclose(siamese.predict([xa, xb], verbose=0), expected, rtol=1e-5)


def test_a_gan_trained_by_two_optimizers_through_two_models():
    generator = sl.Sequential([sl.Input((4,)), L.Dense(8, activation="relu"), L.Dense(3)])
    discriminator = sl.Sequential(
        [sl.Input((3,)), L.Dense(8, activation="relu"), L.Dense(1, activation="sigmoid")]
    )
    discriminator.compile(sl.optimizers.Adam(1e-2), "binary_crossentropy")
    discriminator.trainable = False  # frozen inside the combined model, as the Keras recipe
    z = sl.Input((4,))
    gan = sl.Model(z, discriminator(generator(z)))
    gan.compile(sl.optimizers.Adam(1e-2), "binary_crossentropy")
    assert len({layer.name for layer in gan.layers}) == len(gan.layers)
    noise, real = data(16, 4), data(16, 3) + 2.0
    g0, d0 = generator.get_weights(), discriminator.get_weights()
    for _ in range(3):
        fake = generator.predict(noise, verbose=0)
        discriminator.trainable = True
        x = np.concatenate([real, fake])
        y = np.concatenate([np.ones((16, 1)), np.zeros((16, 1))]).astype("float32")
        discriminator.train_on_batch(x, y)
        discriminator.trainable = False
        d_between = discriminator.get_weights()
        gan.train_on_batch(noise, np.ones((16, 1), "float32"))
        for before, now in zip(d_between, discriminator.get_weights()):
            np.testing.assert_array_equal(before, now)  # frozen in the combined step
    assert not np.allclose(g0[0], generator.get_weights()[0])
    assert not np.allclose(d0[0], discriminator.get_weights()[0])
    combined = discriminator.predict(generator.predict(noise, verbose=0), verbose=0)
    np.testing.assert_allclose(gan.predict(noise, verbose=0), combined, rtol=1e-5)


def test_a_frozen_base_under_a_new_head_then_fine_tuning():
    base = sl.Sequential(
        [sl.Input((6,)), L.Dense(5, activation="relu"), L.BatchNormalization(), L.Dense(4)]
    )
    base.trainable = False
    x = sl.Input((6,))
    head = L.Dense(1)
    model = sl.Model(x, head(base(x, training=False)))
    model.compile("adam", "mse")
    xs, ys = data(32, 6), data(32, 1)
    frozen = base.get_weights()
    model.fit(xs, ys, epochs=2, batch_size=8, verbose=0)
    for before, now in zip(frozen, base.get_weights()):
        np.testing.assert_array_equal(before, now)
    base.trainable = True
    model.compile(sl.optimizers.Adam(1e-3), "mse")  # Keras: compile again after unfreezing
    model.fit(xs, ys, epochs=1, batch_size=8, verbose=0)
    assert not np.allclose(frozen[0], base.get_weights()[0])


@pytest.mark.slow  # VGG16's compile: about 30 s
def test_an_application_model_called_on_a_new_input():
    base = sl.applications.VGG16(include_top=False, weights=None, input_shape=(32, 32, 3))
    base.trainable = False
    x = sl.Input((32, 32, 3))
    features = L.GlobalAveragePooling2D()(base(x))
    model = sl.Model(x, L.Dense(2, activation="softmax")(features))
    model.compile("adam", "sparse_categorical_crossentropy")
    images = data(4, 32, 32, 3)
    model.fit(images, np.array([0, 1, 0, 1]), epochs=1, verbose=0)
    direct = base.predict(images, verbose=0).mean(axis=(1, 2))
    probe = sl.Model(x, features)
    np.testing.assert_allclose(probe.predict(images, verbose=0), direct, rtol=1e-4, atol=1e-5)


def test_set_weights_through_one_model_is_seen_by_the_other():
    inner = sl.Sequential([sl.Input((3,)), L.Dense(2)])
    x = sl.Input((3,))
    outer = sl.Model(x, L.Dense(1, kernel_initializer="ones", use_bias=False)(inner(x)))
    kernel, bias = np.full((3, 2), 0.5, "float32"), np.zeros(2, "float32")
    outer.set_weights([kernel, bias, np.ones((2, 1), "float32")])
    np.testing.assert_array_equal(inner.get_weights()[0], kernel)
    ones = np.ones((1, 3), "float32")
    np.testing.assert_allclose(inner.predict(ones, verbose=0), [[1.5, 1.5]])
    np.testing.assert_allclose(outer.predict(ones, verbose=0), [[3.0]])


def test_saving_either_model_sees_the_shared_weights(tmp_path):
    inner = sl.Sequential([sl.Input((3,)), L.Dense(2, name="shared_dense")])
    x = sl.Input((3,))
    outer = sl.Model(x, L.Dense(1)(inner(x)))
    outer.compile("sgd", "mse")
    outer.fit(data(8, 3), data(8, 1), epochs=2, verbose=0)
    trained = inner.get_weights()
    inner.save(tmp_path / "inner.keras")
    outer.save(tmp_path / "outer.keras")
    loaded_inner = sl.models.load_model(tmp_path / "inner.keras")
    loaded_outer = sl.models.load_model(tmp_path / "outer.keras")
    for want, got in zip(trained, loaded_inner.get_weights()):
        np.testing.assert_array_equal(want, got)
    for want, got in zip(trained, loaded_outer.get_weights()[:2]):
        np.testing.assert_array_equal(want, got)
    ones = np.ones((2, 3), "float32")
    np.testing.assert_allclose(
        loaded_outer.predict(ones, verbose=0), outer.predict(ones, verbose=0), rtol=1e-6
    )
    inner.save_weights(tmp_path / "inner.weights.h5")
    fresh = sl.Sequential([sl.Input((3,)), L.Dense(2, name="shared_dense")])
    fresh.load_weights(tmp_path / "inner.weights.h5")
    np.testing.assert_array_equal(fresh.get_weights()[0], trained[0])


def test_load_weights_into_one_model_changes_the_other(tmp_path):
    inner = sl.Sequential([sl.Input((3,)), L.Dense(2)])
    x = sl.Input((3,))
    outer = sl.Model(x, inner(x))
    donor = sl.Sequential([sl.Input((3,)), L.Dense(2, kernel_initializer="ones")])
    donor.save_weights(tmp_path / "donor.weights.h5")
    inner.load_weights(tmp_path / "donor.weights.h5")
    np.testing.assert_allclose(outer.predict(np.ones((1, 3)), verbose=0), [[3.0, 3.0]])


def test_a_subclassed_model_holding_two_built_models():
    teacher = sl.Sequential([sl.Input((4,)), L.Dense(3)])
    student = sl.Sequential([sl.Input((4,)), L.Dense(3)])

    class Pair(sl.Model):
        def __init__(self, first, second):
            super().__init__()
            self.first, self.second = first, second

        def call(self, x):
            return self.first(x) + self.second(x)

    pair = Pair(teacher, student)
    xs = data(5, 4)
    want = teacher.predict(xs, verbose=0) + student.predict(xs, verbose=0)
    np.testing.assert_allclose(pair.predict(xs, verbose=0), want, rtol=1e-5)
    assert len(pair.weights) == 4


def test_clone_model_in_the_same_graph_has_its_own_weights():
    original = sl.Sequential([sl.Input((3,)), L.Dense(2)])
    clone = sl.models.clone_model(original)
    assert clone.name == original.name  # as Keras 3's clone_model
    clone.name = "clone"  # one model's layers need names of their own (Keras's check)
    x = sl.Input((3,))
    both = sl.Model(x, L.Concatenate()([original(x), clone(x)]))
    clone.set_weights([np.zeros((3, 2), "float32"), np.zeros(2, "float32")])
    out = both.predict(np.ones((1, 3)), verbose=0)
    np.testing.assert_allclose(out[:, :2], original.predict(np.ones((1, 3)), verbose=0))
    np.testing.assert_array_equal(out[:, 2:], [[0.0, 0.0]])


@pytest.mark.parametrize("engine", ["compiled", "interpreted"])
def test_shared_training_in_both_engines(engine):
    tower = sl.Sequential([sl.Input((2,)), L.Dense(1, kernel_initializer="ones")])
    x = sl.Input((2,))
    outer = sl.Model(x, tower(x))
    outer.compile(sl.optimizers.SGD(0.1), "mse", jit_compile=engine == "compiled")
    outer.fit(np.ones((4, 2), "float32"), np.zeros((4, 1), "float32"), epochs=1, verbose=0)
    # one SGD step from w=1, b=0 on x=1, y=0: pred 2, dL/dw = 2*2 = 4 -> w = 0.6, b = -0.4
    np.testing.assert_allclose(tower.get_weights()[0], [[0.6], [0.6]], rtol=1e-6)
    np.testing.assert_allclose(tower.get_weights()[1], [-0.4], rtol=1e-6)


def test_a_name_given_may_be_used_by_two_models_but_not_twice_in_one():
    # the functional API guide builds two models named "encoder" and two inputs named "img"
    def encoder():
        inputs = sl.Input((3,), name="img")
        return sl.Model(inputs, L.Dense(2, name="code")(inputs), name="encoder")

    first, second = encoder(), encoder()
    assert first.name == second.name == "encoder"
    x = np.ones((1, 3), np.float32)
    assert first(x).shape == second(x).shape == (1, 2)
    inputs = sl.Input((3,))
    with pytest.raises(ValueError, match="'code' is used 2 times in model 'twice'"):
        sl.Model(inputs, L.Dense(2, name="code")(L.Dense(3, name="code")(inputs)), name="twice")
    with pytest.raises(ValueError, match="unique names. Name 'd'"):
        sl.Sequential([L.Dense(2, name="d"), L.Dense(2, name="d")])

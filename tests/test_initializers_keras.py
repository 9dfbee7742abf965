"""keras.initializers (and keras.activations, keras.regularizers): Keras's formulas, Keras's seed
rules, get/serialize/deserialize, and the namespaces beside TF1's."""

import numpy as np
import pytest

import sluice as sl

I = sl.initializers  # noqa: E741


def values(init, shape, dtype=None):
    return sl.Session().run(init(shape, dtype))


# -- formulas -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "cls, scale, fan, uniform",
    [
        (I.GlorotUniform, 1.0, "avg", True),
        (I.GlorotNormal, 1.0, "avg", False),
        (I.HeUniform, 2.0, "in", True),
        (I.HeNormal, 2.0, "in", False),
        (I.LecunUniform, 1.0, "in", True),
        (I.LecunNormal, 1.0, "in", False),
    ],
)
def test_variance_scaling_presets_follow_kerass_formulas(cls, scale, fan, uniform):
    shape = (3, 3, 40, 60)  # a conv kernel: fans are channels times the 3x3 field
    fan_in, fan_out = 9 * 40, 9 * 60
    n = fan_in if fan == "in" else (fan_in + fan_out) / 2
    std = np.sqrt(scale / n)
    w = values(cls(seed=1), shape)
    assert w.shape == shape and w.dtype == np.float32
    assert abs(w.std() - std) < 0.02 * std and abs(w.mean()) < 0.02 * std
    if uniform:
        limit = np.sqrt(3 * scale / n)
        assert np.abs(w).max() <= limit and np.abs(w).max() > 0.99 * limit
    else:  # truncated at two of the untruncated stddevs, sqrt(scale / n) / .8796
        assert np.abs(w).max() <= 2 * std / 0.87962566103423978


@pytest.mark.parametrize("mode", ["fan_in", "fan_out", "fan_avg"])
def test_variance_scaling_untruncated_and_axes(mode):
    init = I.VarianceScaling(scale=3.0, mode=mode, distribution="untruncated_normal", seed=2)
    w = values(init, (200, 100))
    n = {"fan_in": 200, "fan_out": 100, "fan_avg": 150}[mode]
    assert abs(w.std() - np.sqrt(3.0 / n)) < 0.02 * np.sqrt(3.0 / n)
    axes = I.VarianceScaling(mode="fan_in", distribution="uniform", input_axes=[0, 1],
                             output_axes=[2], seed=2)  # fmt: skip
    limit = np.sqrt(3.0 / (4 * 5))
    assert np.abs(values(axes, (4, 5, 600))).max() <= limit
    assert axes.get_config()["input_axes"] == [0, 1]
    assert "input_axes" not in I.VarianceScaling().get_config()  # older Keras load the file
    assert I.VarianceScaling(distribution="normal").distribution == "truncated_normal"
    with pytest.raises(ValueError, match="mode"):
        I.VarianceScaling(mode="fan")
    with pytest.raises(ValueError, match="scale"):
        I.VarianceScaling(scale=0.0)


def test_random_normal_uniform_truncated():
    n = values(I.RandomNormal(mean=1.0, stddev=0.5, seed=3), (100, 100))
    assert abs(n.mean() - 1.0) < 0.02 and abs(n.std() - 0.5) < 0.01
    u = values(I.RandomUniform(-0.2, 0.6, seed=3), (100, 100))
    assert u.min() >= -0.2 and u.max() < 0.6 and abs(u.mean() - 0.2) < 0.01
    t = values(I.TruncatedNormal(mean=0.0, stddev=2.0, seed=3), (100, 100))
    assert np.abs(t).max() <= 4.0 and abs(t.std() - 2.0 * 0.8796) < 0.05
    assert values(I.RandomNormal(seed=1), (3,), "float64").dtype == np.float64


@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (3, 3, 2, 5)])
def test_orthogonal(shape):
    w = values(I.Orthogonal(gain=2.0, seed=4), shape)
    flat = w.reshape(-1, shape[-1])
    small = min(flat.shape)
    gram = flat.T @ flat if flat.shape[0] >= flat.shape[1] else flat @ flat.T
    np.testing.assert_allclose(gram, 4.0 * np.eye(small), atol=1e-5)
    with pytest.raises(ValueError, match="at least two-dimensional"):
        I.Orthogonal()((3,))


def test_constants_and_identity():
    np.testing.assert_array_equal(values(I.Zeros(), (2, 3)), np.zeros((2, 3)))
    assert values(I.Ones(), (2,), "int32").tolist() == [1, 1]
    np.testing.assert_array_equal(values(I.Constant(2.5), (2, 2)), np.full((2, 2), 2.5))
    np.testing.assert_array_equal(values(I.Constant([1.0, 2.0]), (3, 2)), [[1, 2]] * 3)
    np.testing.assert_array_equal(values(I.Identity(gain=3.0), (2, 3)), 3 * np.eye(2, 3))
    with pytest.raises(ValueError, match="2D matrices"):
        I.Identity()((2, 2, 2))


# -- seeds ----------------------------------------------------------------------------------------
def test_int_seeded_and_unseeded_initializers_repeat_their_values():
    seeded = I.GlorotUniform(seed=5)
    a, b = sl.Session().run([seeded((3, 4)), seeded((3, 4))])
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, values(I.GlorotUniform(seed=5), (3, 4)))
    unseeded = I.HeNormal()
    c, d = sl.Session().run([unseeded((3, 4)), unseeded((3, 4))])
    np.testing.assert_array_equal(c, d)  # Keras: an instance keeps its seed
    assert not np.array_equal(c, values(I.HeNormal(), (3, 4)))  # another instance: another seed


def test_a_seed_generator_gives_new_values_on_each_call():
    init = I.RandomUniform(seed=sl.random.SeedGenerator(8))
    a, b = sl.Session().run([init((5,)), init((5,))])
    assert not np.array_equal(a, b)


def test_set_random_seed_repeats_a_models_initial_weights():
    def weights():
        sl.utils.set_random_seed(3)
        model = sl.Sequential([sl.Input((4,)), sl.layers.Dense(5), sl.layers.Dense(2)])
        return model.get_weights()

    first, second = weights(), weights()
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(first[0][:, :2], first[2])  # two layers: two seeds


def test_outside_a_model_a_value_is_built_from_constants():
    w = I.Orthogonal(seed=1)((3, 3))
    todo, types = [w.op], set()
    while todo:
        op = todo.pop()
        types.add(op.type)
        todo += [t.op for t in op.inputs]
    assert "ReadVariableOp" not in types and "StatelessRandomNormal" in types


def test_an_add_weight_initializer_gives_the_layers_weight():
    init = I.GlorotNormal(seed=12)
    layer = sl.layers.Dense(3, kernel_initializer=init)
    layer(np.zeros((1, 4), np.float32))
    np.testing.assert_array_equal(layer.get_weights()[0], values(init, (4, 3)))


def test_attention_projections_get_their_own_initializer():
    mha = sl.layers.MultiHeadAttention(num_heads=2, key_dim=3)
    x = sl.Input((5, 6))
    mha(x, x)
    kernels = {
        v.op.name.split("/")[-2]: w
        for v, w in zip(mha.weights, mha.get_weights())
        if v.op.name.endswith("kernel")
    }
    assert kernels["query"].shape == kernels["key"].shape
    assert not np.array_equal(kernels["query"], kernels["key"])


# -- get, serialize, deserialize ------------------------------------------------------------------
def test_get_by_every_kind_of_identifier():
    names = ["glorot_uniform", "GlorotUniform", "he_normal", "zeros", "zero", "one", "uniform",
             "normal", "OrthogonalInitializer", "IdentityInitializer",
             "variance_scaling"]  # fmt: skip
    for name in names:
        assert isinstance(I.get(name), I.Initializer), name
    assert type(I.get("uniform")) is I.RandomUniform
    assert type(I.get(I.Ones)) is I.Ones
    init = I.Constant(3.0)
    assert I.get(init) is init and I.get(None) is None

    def fn(shape, dtype=None):
        return sl.zeros(shape, dtype)

    assert I.get(fn) is fn
    from_array = I.get(np.array([[1.0, 2.0]]))
    np.testing.assert_array_equal(sl.Session().run(from_array((1, 2))), [[1.0, 2.0]])
    with pytest.raises(ValueError, match="Expected `shape`"):
        from_array((2, 1))
    with pytest.raises(ValueError, match="Could not locate class 'glorot_unifrom'"):
        I.get("glorot_unifrom")


@pytest.mark.parametrize(
    "init",
    [
        I.GlorotUniform(seed=1),
        I.HeNormal(),
        I.RandomNormal(0.5, 2.0, seed=3),
        I.RandomUniform(-1.0, 1.0),
        I.TruncatedNormal(stddev=0.3, seed=4),
        I.VarianceScaling(2.0, "fan_out", "uniform", seed=5),
        I.Orthogonal(gain=0.5, seed=6),
        I.Identity(gain=2.0),
        I.Constant(4.0),
        I.Zeros(),
        I.Ones(),
    ],
    ids=lambda i: type(i).__name__,
)
def test_config_round_trips(init):
    config = I.serialize(init)
    assert config["module"] == "keras.initializers"
    assert config["class_name"] == type(init).__name__ and config["registered_name"] is None
    again = I.deserialize(config)
    assert type(again) is type(init) and again.get_config() == init.get_config()
    assert I.get(config).get_config() == init.get_config()
    assert type(init).from_config(init.get_config()).get_config() == init.get_config()
    old_format = {"class_name": config["class_name"], "config": config["config"]}
    assert type(I.get(old_format)) is type(init)


def test_a_seed_generator_seed_round_trips():
    init = I.RandomNormal(seed=sl.random.SeedGenerator(3, name="init_seed"))
    config = I.serialize(init)
    assert config["config"]["seed"]["class_name"] == "SeedGenerator"
    again = I.deserialize(config)
    assert isinstance(again.seed, sl.random.SeedGenerator)
    assert again.seed.get_config() == {"seed": 3, "name": "init_seed"}


def test_custom_initializers_through_the_registry():
    @sl.saving.register_keras_serializable(package="test_init")
    class Halves(I.Initializer):
        def __call__(self, shape, dtype=None):
            return sl.fill(list(shape), sl.constant(0.5, dtype or "float32"))

    config = I.serialize(Halves())
    assert config["registered_name"] == "test_init>Halves"
    assert type(I.deserialize(config)) is Halves
    assert type(I.get("test_init>Halves")) is Halves


def test_namespaces_keep_tf1s_lower_case_names():
    assert sl.initializers.GlorotUniform is sl.layers.initializers.GlorotUniform
    assert sl.initializers.get is sl.layers.initializers.get
    assert sl.initializers.glorot_uniform is sl.glorot_uniform_initializer  # TF1's class
    assert sl.initializers.OrthogonalInitializer is sl.initializers.Orthogonal


# -- activations ----------------------------------------------------------------------------------
def test_activations_namespace_get_serialize_deserialize():
    A = sl.activations
    assert A.relu is sl.layers.activations.relu and A.get("relu") is A.relu
    assert A.get(None) is A.linear and A.get("swish") is A.silu
    assert A.serialize(A.gelu) == "gelu" and A.deserialize("gelu") is A.gelu
    function_config = {"module": "keras.activations", "class_name": "function",
                       "config": "tanh", "registered_name": None}  # fmt: skip
    assert A.deserialize(function_config) is A.tanh and A.get(function_config) is A.tanh
    message = "Could not interpret activation function identifier: relu7"
    with pytest.raises(ValueError, match=message):
        A.get("relu7")


def test_relu_takes_kerass_arguments():
    x = np.array([-3.0, -1.0, 0.5, 2.0, 8.0], np.float32)
    got = sl.Session().run(
        [
            sl.activations.relu(x),
            sl.activations.relu(x, max_value=6.0),
            sl.activations.relu(x, threshold=1.0),
            sl.activations.relu(x, negative_slope=0.1),
            sl.activations.relu(x, negative_slope=0.1, max_value=6.0, threshold=1.0),
        ]
    )
    want = [
        np.maximum(x, 0),
        np.clip(x, 0, 6),
        np.where(x > 1.0, x, 0.0),
        np.where(x > 0, x, 0.1 * x),
        np.where(x > 1.0, np.minimum(x, 6.0), 0.1 * (x - 1.0)),
    ]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)
    sl.testing.check_gradients(
        lambda t: sl.activations.relu(t, negative_slope=0.2, max_value=1.5, threshold=0.5),
        [np.array([-1.3, 0.2, 0.9, 1.1, 2.0])],
    )


# -- regularizers ---------------------------------------------------------------------------------
def test_regularizers_namespace_and_round_trips():
    R = sl.regularizers
    assert R.L2 is sl.layers.regularizers.L2 and R.l2 is R.L2 and R.l1_l2 is R.L1L2
    for reg in (R.L1(0.3), R.L2(0.1), R.L1L2(0.01, 0.02), R.OrthogonalRegularizer(0.1, "columns")):
        config = R.serialize(reg)
        assert config["module"] == "keras.regularizers"
        again = R.deserialize(config)
        assert type(again) is type(reg) and again.get_config() == reg.get_config()
    assert type(R.get("orthogonal_regularizer")) is R.OrthogonalRegularizer
    assert R.get("l1_l2").get_config() == {"l1": 0.0, "l2": 0.0}  # Keras's defaults
    with pytest.raises(ValueError, match="non-negative"):
        R.L2(-1.0)
    with pytest.raises(ValueError, match="mode"):
        R.OrthogonalRegularizer(mode="diagonal")


@pytest.mark.parametrize("mode", ["rows", "columns"])
def test_orthogonal_regularizer_is_kerass_formula(mode):
    w = np.array([[1.0, 2.0, 0.0], [0.5, -1.0, 3.0], [2.0, 0.0, 1.0], [1.0, 1.0, 1.0]], np.float32)
    vectors = w if mode == "rows" else w.T
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    product = unit @ unit.T
    n = len(product)
    want = 0.1 * 0.5 * np.abs(product - np.diag(np.diag(product))).sum() / (n * (n - 1) / 2)
    got = sl.Session().run(sl.regularizers.OrthogonalRegularizer(0.1, mode)(w))
    np.testing.assert_allclose(got, want, rtol=1e-5)
    with pytest.raises(ValueError, match="rank 2"):
        sl.regularizers.OrthogonalRegularizer()(np.ones(3, np.float32))


def test_a_seed_generator_initializer_in_layers_draws_once_per_weight():
    init = I.RandomNormal(seed=sl.random.SeedGenerator(1))
    dense = [sl.layers.Dense(2, kernel_initializer=init) for _ in range(2)]
    model = sl.Sequential([sl.Input((2,)), *dense])
    first, second = model.get_weights()[0], model.get_weights()[2]
    outside = I.RandomNormal(seed=sl.random.SeedGenerator(1))  # the same stream, drawn here
    np.testing.assert_array_equal(first, values(outside, (2, 2)))
    np.testing.assert_array_equal(second, values(outside, (2, 2)))
    assert not np.array_equal(first, second)

"""`sl.IndexedSlices`: the gradient of `gather` (axis 0) and embedding lookups, as TF 1.x's
gradient tests check it: its fields and their dtypes, what a session returns for it, its dense
value against NumPy at 1e-6, how fan-out gradients add up, what loops and conds do with it, and
the sparse updates of the TF1 optimizers against NumPy transcriptions of TF1's kernels.
Everything runs in both engines."""

import warnings

import numpy as np
import pytest

import sluice as sl
from sluice.testing import check_gradients

ENGINES = ["interpreted", "compiled"]
F64 = np.float64
TABLE = np.arange(15, dtype=np.float32).reshape(5, 3) / 10.0


def session(engine, graph=None):
    return sl.Session(graph=graph, config=sl.SessionConfig(engine=engine))


def dense_of(values, indices, rows):
    out = np.zeros((rows,) + values.shape[1:], values.dtype)
    np.add.at(out, indices, values)
    return out


# -- the gradient of gather --------------------------------------------------------------------
@pytest.mark.parametrize("engine", ENGINES)
def test_gather_gradient_is_indexed_slices_with_tf1_fields(engine):
    params = sl.constant(np.ones((4, 3)))
    weights = np.arange(12, dtype=F64).reshape(2, 2, 3)
    (g,) = sl.gradients(sl.reduce_sum(sl.gather(params, [[2, 0], [2, 1]]) * weights), [params])
    assert isinstance(g, sl.IndexedSlices)
    assert g.dtype == np.float64 and g.indices.dtype == np.int32
    assert g.dense_shape.dtype == np.int32
    assert g.values.shape.as_list() == [4, 3] and g.shape.as_list() == [4, 3]
    assert g.name == g.values.name and g.op is g.values.op and g.graph is params.graph
    with session(engine) as sess:
        value = sess.run(g)
        dense = sess.run(sl.convert_to_tensor(g))
    assert isinstance(value, sl.IndexedSlicesValue) and isinstance(value, tuple)
    np.testing.assert_allclose(value.values, weights.reshape(4, 3), atol=1e-6)
    np.testing.assert_array_equal(value.indices, [2, 0, 2, 1])
    np.testing.assert_array_equal(value.dense_shape, [4, 3])
    expected = dense_of(weights.reshape(4, 3), [2, 0, 2, 1], 4)  # row 2 gathered twice: summed
    np.testing.assert_allclose(dense, expected, atol=1e-6)


@pytest.mark.parametrize("engine", ENGINES)
def test_int64_and_scalar_indices(engine):
    params = sl.placeholder(F64, [None, 2])
    loss = sl.reduce_sum(sl.gather(params, np.array([1, 1], np.int64))) + sl.reduce_sum(
        3.0 * sl.gather(params, 0)
    )
    (g,) = sl.gradients(loss, [params])
    assert isinstance(g, sl.IndexedSlices) and g.indices.dtype == np.int64  # int32 joined int64
    with session(engine) as sess, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unknown dense shape: TF's memory warning
        value, dense = sess.run([g, sl.convert_to_tensor(g)], {params: np.zeros((3, 2))})
    np.testing.assert_array_equal(value.indices, [1, 1, 0])
    np.testing.assert_array_equal(value.dense_shape, [3, 2])
    np.testing.assert_allclose(dense, [[3, 3], [2, 2], [0, 0]], atol=1e-6)


def test_gather_gradient_against_central_differences():
    indices = np.array([[3, 0, 3], [1, 3, 3]])
    check_gradients(
        lambda x: sl.gather(x, indices),
        [np.linspace(-1, 1, 10).reshape(5, 2)],
        rtol=1e-6,
        atol=1e-8,
    )


def test_gradient_of_the_densified_gradient_against_central_differences():
    # second order: the gradient of a gather's gradient goes through UnsortedSegmentSum
    x = np.linspace(-1, 1, 8).reshape(4, 2)

    def build(w):
        p = sl.constant(x)
        (g,) = sl.gradients(sl.reduce_sum(sl.gather(p, [2, 0, 2]) * w), [p])
        return sl.convert_to_tensor(g)

    check_gradients(build, [np.random.default_rng(0).normal(size=(3, 2))], rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("engine", ENGINES)
def test_two_gathers_concatenate_and_a_dense_use_densifies(engine):
    v = sl.Variable(TABLE, name="table")
    a, b = sl.gather(v, [4, 1]), sl.gather(v, [1])
    (sparse,) = sl.gradients(sl.reduce_sum(a) + sl.reduce_sum(2.0 * b), [v])
    (mixed,) = sl.gradients(sl.reduce_sum(a) + sl.reduce_sum(v * v), [v])
    assert isinstance(sparse, sl.IndexedSlices)
    assert isinstance(mixed, sl.Tensor)  # TF1: any dense part makes the sum dense
    with session(engine) as sess:
        sess.run(v.initializer)
        s, m = sess.run([sparse, mixed])
    assert sorted(s.indices.tolist()) == [1, 1, 4]
    np.testing.assert_allclose(
        dense_of(s.values, s.indices, 5),
        dense_of(np.array([[1.0] * 3, [1] * 3, [2] * 3]), [4, 1, 1], 5),
        atol=1e-6,
    )
    np.testing.assert_allclose(m, 2 * TABLE + dense_of(np.ones((2, 3)), [4, 1], 5), atol=1e-6)


@pytest.mark.parametrize("engine", ENGINES)
def test_other_axes_batch_dims_and_negative_axis_zero_give_dense_gradients(engine):
    x = np.arange(24, dtype=F64).reshape(2, 3, 4)
    p = sl.constant(x)
    cases = {
        "axis_1": sl.gather(p, [2, 2, 0], axis=1),
        "batch_dims": sl.gather(p, [[1], [0]], axis=1, batch_dims=1),
    }
    grads = {k: sl.gradients(sl.reduce_sum(y), [p])[0] for k, y in cases.items()}
    v = sl.constant([1.0, 2.0, 3.0])
    (neg,) = sl.gradients(sl.reduce_sum(sl.gather(v, [2, 2], axis=-1)), [v])
    # TF1 makes IndexedSlices only when the axis is the constant 0
    assert all(isinstance(g, sl.Tensor) for g in [*grads.values(), neg])
    with session(engine) as sess:
        got = sess.run(grads)
        np.testing.assert_allclose(sess.run(neg), [0, 0, 2], atol=1e-6)
    axis_1 = np.zeros_like(x)
    axis_1[:, 2] += 2
    axis_1[:, 0] += 1
    np.testing.assert_allclose(got["axis_1"], axis_1, atol=1e-6)
    batch = np.zeros_like(x)
    batch[0, 1] = batch[1, 0] = 1
    np.testing.assert_allclose(got["batch_dims"], batch, atol=1e-6)


def test_embedding_lookup_and_the_embedding_layer_give_indexed_slices():
    table = sl.Variable(TABLE, name="table")
    rows = sl.nn.embedding_lookup(table, [[0, 4], [4, 4]])
    layer = sl.layers.Embedding(6, 2)
    out = layer(sl.constant([[1, 5, 5]]))
    g_lookup, g_layer = sl.gradients(
        sl.reduce_sum(rows) + sl.reduce_sum(out), [table, layer.embeddings]
    )
    assert isinstance(g_lookup, sl.IndexedSlices) and isinstance(g_layer, sl.IndexedSlices)
    assert g_lookup.values.shape.as_list() == [4, 3]
    assert g_layer.values.shape.as_list() == [3, 2] and g_layer.shape.as_list() == [6, 2]


# -- the class and its conversion ---------------------------------------------------------------
def test_conversion_errors_and_warnings_follow_tf():
    values = sl.constant(np.ones((2, 3), np.float32))
    s = sl.IndexedSlices(values, sl.constant([0, 1]), sl.constant([4, 3]))
    with pytest.raises(ValueError, match="requested dtype float64 for IndexedSlices with dtype"):
        sl.convert_to_tensor(s, dtype=sl.float64)
    with pytest.raises(ValueError, match="without dense_shape"):
        sl.convert_to_tensor(sl.IndexedSlices(values, sl.constant([0, 1])))
    with pytest.warns(UserWarning, match="unknown shape"):
        sl.convert_to_tensor(sl.IndexedSlices(values, [0, 1], sl.placeholder(sl.int32, [2])))
    with pytest.warns(UserWarning, match="with 300000000 elements"):
        sl.convert_to_tensor(sl.IndexedSlices(values, [0, 1], [100_000_000, 3]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sl.convert_to_tensor(s)  # small and known: no warning
    with pytest.raises(TypeError, match="indices must be int32 or int64"):
        sl.IndexedSlices(values, sl.constant([0.0, 1.0]))
    mismatched = sl.IndexedSlices(values, [0, 1, 2], [4, 3])  # TF1 builds it; its parts work
    assert mismatched.indices.shape == [3] and mismatched.values.shape == [2, 3]
    with pytest.raises(ValueError, match="3 indices for 2 slices"):
        sl.convert_to_tensor(mismatched)
    with pytest.raises(ValueError, match="must be a vector"):
        sl.IndexedSlices(values, [[0, 1]])


@pytest.mark.parametrize("engine", ENGINES)
def test_negation_and_fetching_without_dense_shape(engine):
    s = sl.IndexedSlices(sl.constant([[1.0, 2.0]]), sl.constant([3]))
    neg = -s
    assert isinstance(neg, sl.IndexedSlices) and neg.indices is s.indices
    with session(engine) as sess:
        value = sess.run(neg)
    assert value.dense_shape is None
    np.testing.assert_allclose(value.values, [[-1.0, -2.0]], atol=1e-6)
    assert "IndexedSlices(indices=" in repr(s)


@pytest.mark.parametrize("engine", ENGINES)
def test_unsorted_segment_sum_matches_numpy(engine):
    data = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    ids = np.array([[0, 3, -1], [3, 3, 1]])
    total = sl.unsorted_segment_sum(data, ids, 5)
    assert total.shape.as_list() == [5, 4]
    with session(engine) as sess:
        got = sess.run(total)
    expected = np.zeros((5, 4), np.float32)
    for i, j in np.ndindex(ids.shape):
        if ids[i, j] >= 0:  # negative ids are dropped, as in TF
            expected[ids[i, j]] += data[i, j]
    np.testing.assert_allclose(got, expected, atol=1e-6)
    with pytest.raises(ValueError, match="UnsortedSegmentSum.*5, which is not < num_segments"):
        sl.unsorted_segment_sum(data[0], [0, 5, 1], 5)
    with pytest.raises(ValueError, match="must be a prefix of the shape of data"):
        sl.unsorted_segment_sum(data, [0, 1, 2], 5)
    check_gradients(
        lambda d: sl.unsorted_segment_sum(d, ids, 5),
        [np.linspace(-1, 1, 24).reshape(2, 3, 4)],
        rtol=1e-6,
        atol=1e-8,
    )


# -- loops and conds: densified at their boundary -----------------------------------------------
@pytest.mark.parametrize("engine", ENGINES)
def test_lookup_in_a_while_loop_and_in_a_cond(engine):
    table = sl.Variable(TABLE, name="table")
    ids = sl.constant([3, 0, 3])

    def body(i, acc):
        return i + 1, acc + sl.nn.embedding_lookup(table, ids[i]) * sl.cast(i + 1, sl.float32)

    _, acc = sl.while_loop(
        lambda i, acc: i < 3, body, [sl.constant(0), sl.zeros([3])], maximum_iterations=3
    )
    pred = sl.placeholder(sl.bool, [])
    picked = sl.cond(pred, lambda: sl.gather(table, [1, 1]), lambda: sl.gather(table, [2, 4]))
    (g_loop,) = sl.gradients(sl.reduce_sum(acc), [table])
    (g_cond,) = sl.gradients(sl.reduce_sum(picked), [table])
    with session(engine) as sess:
        sess.run(table.initializer)
        loop_value = sess.run(sl.convert_to_tensor(g_loop))
        true_value = sess.run(sl.convert_to_tensor(g_cond), {pred: True})
        false_value = sess.run(sl.convert_to_tensor(g_cond), {pred: False})
    np.testing.assert_allclose(
        loop_value, dense_of(np.ones((3, 3)) * [[1], [2], [3]], [3, 0, 3], 5), atol=1e-6
    )
    np.testing.assert_allclose(true_value, dense_of(np.ones((2, 3)), [1, 1], 5), atol=1e-6)
    np.testing.assert_allclose(false_value, dense_of(np.ones((2, 3)), [2, 4], 5), atol=1e-6)


@pytest.mark.parametrize(
    "engine", [pytest.param("interpreted", marks=pytest.mark.slow), "compiled"]
)
def test_an_embedding_dynamic_rnn_trains_with_sparse_updates(engine):
    rng = np.random.default_rng(0)
    tokens = rng.integers(0, 7, size=(2, 3)).astype(np.int32)
    targets = rng.normal(size=(2, 1)).astype(np.float32)
    with sl.variable_scope("model", initializer=sl.random_uniform_initializer(-0.3, 0.3, seed=1)):
        table = sl.get_variable("table", [7, 3])
        cell = sl.nn.rnn_cell.BasicRNNCell(4)
        outputs, state = sl.nn.dynamic_rnn(
            cell, sl.nn.embedding_lookup(table, tokens), dtype=sl.float32
        )
        w = sl.get_variable("w", [4, 1])
    loss = sl.reduce_mean(sl.square(sl.matmul(state, w) - targets))
    opt = sl.train.MomentumOptimizer(0.1, 0.9)
    grads_and_vars = opt.compute_gradients(loss)
    train = opt.apply_gradients(grads_and_vars)
    with session(engine) as sess:
        sess.run(sl.global_variables_initializer())
        losses = [sess.run([loss, train])[0] for _ in range(5)]
    assert losses[-1] < 0.7 * losses[0]


# -- optimizers: TF1's sparse updates ------------------------------------------------------------
# the ids looked up in three steps (one length: one compiled step); row 2 is never read
FEEDS = [[1, 1, 3], [0, 0, 0], [3, 4, 4]]


def _reference_sgd(lr):
    def step(var, slots, g, rows, t):
        var[rows] -= lr * g[rows]

    return step


def _reference_momentum(lr, momentum):
    def step(var, slots, g, rows, t):  # TF1 sparse_apply_momentum on the summed rows
        accum = slots.setdefault("trace", np.zeros_like(var))
        accum[rows] = momentum * accum[rows] + g[rows]
        var[rows] -= lr * accum[rows]

    return step


def _reference_adagrad(lr, initial):
    def step(var, slots, g, rows, t):  # TF1 sparse_apply_adagrad
        accum = slots.setdefault("sum_of_squares", np.full_like(var, initial))
        accum[rows] += g[rows] ** 2
        var[rows] -= lr * g[rows] / np.sqrt(accum[rows])

    return step


def _reference_rmsprop(lr, decay, momentum, eps):
    def step(var, slots, g, rows, t):  # TF1 sparse_apply_rms_prop
        ms = slots.setdefault("nu", np.ones_like(var))
        mom = slots.setdefault("trace", np.zeros_like(var))  # optax keeps -mom
        ms[rows] = decay * ms[rows] + (1 - decay) * g[rows] ** 2
        mom[rows] = momentum * mom[rows] - lr * g[rows] / np.sqrt(ms[rows] + eps)
        var[rows] += mom[rows]

    return step


def _reference_adam(lr, b1, b2, eps):
    def step(var, slots, g, rows, t):  # TF1's sparse Adam: m and v decay in every row
        m = slots.setdefault("mu", np.zeros_like(var))
        v = slots.setdefault("nu", np.zeros_like(var))
        m[:] = b1 * m + (1 - b1) * g
        v[:] = b2 * v + (1 - b2) * g * g
        var -= lr * np.sqrt(1 - b2**t) / (1 - b1**t) * m / (np.sqrt(v) + eps)

    return step


INITIAL_SLOTS = {"trace": 0.0, "nu": 1.0, "sum_of_squares": 0.1}
OPTIMIZERS = {
    "sgd": (lambda: sl.train.GradientDescentOptimizer(0.1), _reference_sgd(0.1)),
    "momentum": (lambda: sl.train.MomentumOptimizer(0.1, 0.9), _reference_momentum(0.1, 0.9)),
    "adagrad": (lambda: sl.train.AdagradOptimizer(0.1), _reference_adagrad(0.1, 0.1)),
    "rmsprop": (
        lambda: sl.train.RMSPropOptimizer(0.01, momentum=0.5),
        _reference_rmsprop(0.01, 0.9, 0.5, 1e-10),
    ),
    "adam": (lambda: sl.train.AdamOptimizer(0.1), _reference_adam(0.1, 0.9, 0.999, 1e-8)),
}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_sparse_updates_match_tf1_kernels(name, engine):
    make, reference = OPTIMIZERS[name]
    table = sl.Variable(TABLE, name="table")
    ids = sl.placeholder(sl.int32, [None])
    loss = sl.reduce_sum(sl.square(sl.gather(table, ids)))
    opt = make()
    ((grad, _),) = opt.compute_gradients(loss, [table])
    assert isinstance(grad, sl.IndexedSlices)
    train = opt.apply_gradients([(grad, table)])
    var, slots = TABLE.astype(F64), {}
    with session(engine) as sess:
        sess.run(sl.global_variables_initializer())
        for t, feed in enumerate(FEEDS, start=1):
            rows = np.unique(feed)
            g = dense_of(2 * var[feed], feed, 5)  # d/dv sum(v[ids]^2), repeats summed
            reference(var, slots, g, rows, t)
            sess.run(train, {ids: feed})
        got = sess.run(table)
        got_slots = {k: sess.run(opt.get_slot(table, k)) for k in slots}
    np.testing.assert_allclose(got, var, rtol=1e-5, atol=1e-6)
    for k, value in slots.items():
        np.testing.assert_allclose(got_slots[k], value, rtol=1e-5, atol=1e-6, err_msg=k)
    if name in ("momentum", "adagrad", "rmsprop"):  # only the rows looked up are touched
        np.testing.assert_array_equal(got[2], TABLE[2])
        for k, value in got_slots.items():
            np.testing.assert_array_equal(value[2], np.full(3, INITIAL_SLOTS[k], np.float32))


@pytest.mark.parametrize("engine", ENGINES)
def test_sgd_and_adam_sparse_updates_equal_dense_ones(engine):
    finals = {}
    for mode in ("sparse", "dense"):
        g = sl.Graph()
        with g.as_default():
            table = sl.Variable(TABLE, name="table")
            ids = sl.placeholder(sl.int32, [None])
            loss = sl.reduce_sum(sl.square(sl.gather(table, ids) - 1.0))
            ops = []
            for opt in (sl.train.GradientDescentOptimizer(0.1), sl.train.AdamOptimizer(0.1)):
                ((grad, _),) = opt.compute_gradients(loss, [table])
                grad = sl.convert_to_tensor(grad) if mode == "dense" else grad
                ops.append(opt.apply_gradients([(grad, table)]))
            with session(engine, g) as sess:
                sess.run(sl.global_variables_initializer())
                for feed in FEEDS:
                    sess.run(ops[0], {ids: feed})
                    sess.run(ops[1], {ids: feed})
                finals[mode] = sess.run(table)
    np.testing.assert_allclose(finals["sparse"], finals["dense"], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("engine", ENGINES)
def test_clip_by_global_norm_keeps_indexed_slices(engine):
    table = sl.Variable(TABLE, name="table")
    dense_var = sl.Variable([3.0, 4.0], name="dense")
    loss = sl.reduce_sum(sl.gather(table, [1, 1]) * 10.0) + sl.reduce_sum(dense_var * dense_var)
    grads = sl.gradients(loss, [table, dense_var])
    clipped, norm = sl.clip_by_global_norm(grads + [None], 5.0)
    assert isinstance(clipped[0], sl.IndexedSlices) and clipped[2] is None
    assert clipped[0].indices is grads[0].indices
    with session(engine) as sess:
        sess.run(sl.global_variables_initializer())
        c, n, gn = sess.run([clipped[:2], norm, sl.global_norm(grads)])
    # TF1 counts the slices' values, repeats included: 6 values of 10 and the dense [6, 8]
    expected = np.sqrt(6 * 100 + 36 + 64)
    np.testing.assert_allclose([n, gn], [expected, expected], rtol=1e-6)
    np.testing.assert_allclose(c[0].values, np.full((2, 3), 10 * 5 / expected), rtol=1e-6)
    np.testing.assert_array_equal(c[0].indices, [1, 1])
    np.testing.assert_allclose(c[1], np.array([6.0, 8.0]) * 5 / expected, rtol=1e-6)


@pytest.mark.parametrize(
    "jit_compile",
    [True, pytest.param(False, marks=pytest.mark.slow)],
    ids=["compiled", "interpreted"],
)
def test_keras_embedding_fit_trains_as_before(jit_compile):
    """TF1's GradientDescent applies the embedding's slices by rows; Keras's SGD applies them
    densely (the path every Embedding took before): the same maths, so the same weights."""
    rng = np.random.default_rng(0)
    x = rng.integers(0, 8, size=(16, 3)).astype(np.int32)
    y = rng.normal(size=(16, 1)).astype(np.float32)
    weights, histories = [], []
    for optimizer in (sl.train.GradientDescentOptimizer(0.1), sl.optimizers.SGD(0.1)):
        sl.utils.set_random_seed(3)
        model = sl.Sequential(
            [
                sl.Input((3,), dtype="int32"),
                sl.layers.Embedding(8, 2),
                sl.layers.Flatten(),
                sl.layers.Dense(1),
            ]
        )
        model.compile(optimizer=optimizer, loss="mse", jit_compile=jit_compile)
        history = model.fit(x, y, batch_size=8, epochs=3, shuffle=False, verbose=0)
        histories.append(history.history["loss"])
        weights.append(model.get_weights())
    assert histories[0][-1] < histories[0][0]
    np.testing.assert_allclose(histories[0], histories[1], rtol=1e-6)
    for a, b in zip(*weights):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("engine", ENGINES)
def test_embedding_lookup_max_norm_clips_each_row_as_tf1(engine):
    """TF1 scales each looked-up row (norm over params.shape[1:]) down to max_norm; the
    gradient goes through the clipping."""
    table = np.arange(12.0).reshape(4, 3) * 0.3 - 1.0
    ids = np.array([[1, 2], [1, 0]])
    weights = np.arange(12.0).reshape(2, 2, 3)
    params = sl.constant(table)
    rows = sl.nn.embedding_lookup(params, ids, max_norm=1.5)
    grad = sl.gradients(sl.reduce_sum(rows * weights), params)[0]
    with session(engine) as s:
        got, g = s.run([rows, grad])
    looked_up = table[ids]
    norms = np.linalg.norm(looked_up, axis=-1, keepdims=True)
    np.testing.assert_allclose(got, looked_up * 1.5 / np.maximum(norms, 1.5), atol=1e-12)
    dense = np.zeros_like(table)
    np.add.at(dense, g.indices.ravel(), g.values.reshape(-1, 3))
    for row in range(4):  # finite differences of the loss in each table entry
        for col in range(3):
            bumped = [table.copy(), table.copy()]
            bumped[0][row, col] += 1e-6
            bumped[1][row, col] -= 1e-6
            losses = []
            for t in bumped:
                r = t[ids]
                n = np.linalg.norm(r, axis=-1, keepdims=True)
                losses.append(np.sum(r * 1.5 / np.maximum(n, 1.5) * weights))
            np.testing.assert_allclose(dense[row, col], (losses[0] - losses[1]) / 2e-6, atol=1e-6)

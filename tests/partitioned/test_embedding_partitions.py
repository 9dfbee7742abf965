"""The partitioned parts of TF1's embedding_ops_test.py (EmbeddingLookupTest): lookups over a
list of partitions or a PartitionedVariable, "mod" and "div" with uneven partitions, max_norm,
gradients (IndexedSlices per partition) and sparse optimizer updates, in both engines."""

import numpy as np
import pytest

import sluice as sl

ENGINES = ["interpreted", "compiled"]


def _session(engine="interpreted"):
    return sl.Session(config=sl.SessionConfig(engine=engine))


def _shard_sizes(vocab, num_shards):
    """TF1's partition sizes: the first vocab % num_shards partitions hold one row more."""
    return [vocab // num_shards + (1 if i < vocab % num_shards else 0) for i in range(num_shards)]


def _where(i, vocab, num_shards, strategy):
    """(partition, row) of id i, written as TF1's test computes it."""
    if strategy == "mod":
        return i % num_shards, i // num_shards
    per, extras = divmod(vocab, num_shards)
    threshold = extras * (per + 1)
    if i < threshold:
        return i // (per + 1), i % (per + 1)
    return extras + (i - threshold) // per, (i - threshold) % per


def _params(vocab, num_shards, dims, seed=0):
    rng = np.random.RandomState(seed)
    return [rng.rand(n, *dims).astype(np.float32) for n in _shard_sizes(vocab, num_shards)]


def _expected(shards, ids, vocab, strategy):
    flat = [shards[p][r] for p, r in (_where(i, vocab, len(shards), strategy) for i in ids.flat)]
    return np.reshape(flat, ids.shape + shards[0].shape[1:])


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("strategy", ["mod", "div"])
@pytest.mark.parametrize("ids_dtype", [np.int32, np.int64])
def test_sharded_lookup(engine, strategy, ids_dtype):
    vocab, num_shards = 13, 5
    shards = _params(vocab, num_shards, [2])
    ids = np.random.RandomState(1).randint(0, vocab, size=[3, 10]).astype(ids_dtype)
    placeholders = [sl.placeholder(sl.float32, s.shape) for s in shards]
    out = sl.nn.embedding_lookup(placeholders, ids, partition_strategy=strategy)
    assert out.shape == (3, 10, 2) and out.dtype == sl.float32
    with _session(engine) as sess:
        value = sess.run(out, dict(zip(placeholders, shards)))
    np.testing.assert_allclose(value, _expected(shards, ids, vocab, strategy), atol=1e-6)


@pytest.mark.parametrize("strategy", ["mod", "div"])
def test_sharded_lookup_with_unknown_param_shapes(strategy):
    vocab, num_shards = 10, 3
    shards = _params(vocab, num_shards, [])  # partitions of a vector: rows are scalars
    placeholders = [sl.placeholder(sl.float32) for _ in shards]  # no static shape at all
    ids = np.array([0, 9, 3, 4, 7, 2])
    out = sl.nn.embedding_lookup(placeholders, ids, partition_strategy=strategy)
    with _session() as sess:
        value = sess.run(out, dict(zip(placeholders, shards)))
    np.testing.assert_allclose(value, _expected(shards, ids, vocab, strategy), atol=1e-6)


@pytest.mark.parametrize("engine", ENGINES)
def test_higher_rank_matches_the_unsharded_lookup(engine):
    rng = np.random.RandomState(8)
    lookups = []
    for params_shape in [(12,), (6, 3)]:
        params = rng.randn(*params_shape).astype(np.float32)
        for ids_shape in [(3, 2)]:
            ids = rng.randint(params.shape[0], size=ids_shape)
            simple = sl.nn.embedding_lookup(params, ids)
            for procs in (1, 3):
                split = [params[p::procs] for p in range(procs)]
                lookups.append((simple, sl.nn.embedding_lookup(split, ids)))
                lookups.append((simple, sl.nn.embedding_lookup(split, ids, max_norm=1.0)))
    with _session(engine) as sess:
        values = sess.run(lookups)
    for i, (simple, sharded) in enumerate(values):
        if i % 2 == 0:
            np.testing.assert_array_equal(simple, sharded)
        else:  # each row (the elements after ids' dimensions) scaled to norm <= 1
            axes = tuple(range(2, simple.ndim))  # none for scalar rows: each element clipped
            norms = np.sqrt((simple * simple).sum(axis=axes, keepdims=True))
            expected = simple / np.maximum(norms, 1.0)
            np.testing.assert_allclose(sharded, expected, atol=1e-6)


def test_max_norm():
    one = sl.nn.embedding_lookup([sl.constant([[2.0]])], [0], max_norm=1.0)
    table = np.array([[2.0, 4.0], [3.0, 1.0]], np.float32)
    clipped = sl.nn.embedding_lookup([table[:1], table[1:]], [0, 1], max_norm=2.0)
    with _session() as sess:
        np.testing.assert_allclose(sess.run(one), [[1.0]], atol=1e-6)
        norms = np.sqrt((table * table).sum(1, keepdims=True))
        np.testing.assert_allclose(sess.run(clipped), 2 * table / norms, atol=1e-6)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("strategy", ["mod", "div"])
def test_partitioned_variable_lookup(engine, strategy):
    full = np.arange(22, dtype=np.float32).reshape(11, 2)
    emb = sl.get_variable("emb", initializer=full, partitioner=sl.fixed_size_partitioner(3))
    ids = np.array([[10, 0, 4], [7, 3, 3]])
    out = sl.nn.embedding_lookup(emb, ids, partition_strategy=strategy)
    with _session(engine) as sess:
        sess.run(sl.global_variables_initializer())
        value = sess.run(out)
    if strategy == "div":  # the parts are the contiguous row ranges "div" assumes
        np.testing.assert_allclose(value, full[ids], atol=1e-6)
    else:
        shards = [full[0:4], full[4:8], full[8:11]]
        np.testing.assert_allclose(value, _expected(shards, ids, 11, "mod"), atol=1e-6)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("strategy", ["mod", "div"])
def test_gradients_are_indexed_slices_per_partition(engine, strategy):
    vocab, num_shards = 10, 3
    shards = _params(vocab, num_shards, [2])
    tables = [sl.constant(s) for s in shards]
    ids = np.array([[1, 9, 1], [0, 5, 6]])
    weights = np.random.RandomState(2).rand(2, 3, 2).astype(np.float32)
    out = sl.nn.embedding_lookup(tables, ids, partition_strategy=strategy)
    grads = sl.gradients(sl.reduce_sum(out * weights), tables)
    assert all(isinstance(g, sl.IndexedSlices) for g in grads)
    dense = [sl.convert_to_tensor(g) for g in grads]
    with _session(engine) as sess:
        slices, values = sess.run([grads, dense])
    expected = [np.zeros_like(s) for s in shards]
    for i, w in zip(ids.flat, weights.reshape(-1, 2)):
        p, r = _where(i, vocab, num_shards, strategy)
        expected[p][r] += w
    for p in range(num_shards):
        np.testing.assert_allclose(values[p], expected[p], atol=1e-6)
        held = slices[p].indices >= 0  # the ids this partition holds; the others are -1
        assert held.sum() == sum(_where(i, vocab, num_shards, strategy)[0] == p for i in ids.flat)
        np.testing.assert_array_equal(slices[p].values[~held], 0.0)
        np.testing.assert_array_equal(slices[p].dense_shape, shards[p].shape)


def test_gradients_through_computed_params_and_central_differences():
    vocab, num_shards = 7, 3
    shards = [s.astype(np.float64) for s in _params(vocab, num_shards, [2])]
    xs = [sl.constant(s) for s in shards]
    ids = np.array([2, 6, 0, 2])
    y = sl.reduce_sum(sl.nn.embedding_lookup([x * x for x in xs], ids, partition_strategy="div"))
    grads = [sl.convert_to_tensor(g) for g in sl.gradients(y, xs)]
    with _session() as sess:
        analytic = sess.run(grads)
    for p, shard in enumerate(shards):
        expected = np.zeros_like(shard)
        for i in ids:
            q, r = _where(i, vocab, num_shards, "div")
            if q == p:
                expected[r] += 2 * shard[r]
        np.testing.assert_allclose(analytic[p], expected, atol=1e-6)


@pytest.mark.parametrize(
    "engine", [pytest.param("interpreted", marks=pytest.mark.slow), "compiled"]
)  # ~3-4 s of CPU each
def test_momentum_updates_only_the_rows_looked_up(engine):
    """A partitioned table trains as the same table unpartitioned: sparse Momentum touches the
    rows looked up, and no other (index -1 of the other partitions' ids is dropped)."""
    full = np.random.RandomState(3).rand(7, 2).astype(np.float32)
    split = sl.get_variable("split", initializer=full, partitioner=sl.fixed_size_partitioner(3))
    whole = sl.get_variable("whole", initializer=full)
    ids = sl.placeholder(sl.int32, [None])
    opt = sl.train.MomentumOptimizer(0.1, momentum=0.9)
    steps = [
        opt.minimize(sl.reduce_sum(sl.square(sl.nn.embedding_lookup(v, ids, "div"))), var_list=vl)
        for v, vl in ((split, list(split)), (whole, [whole]))
    ]
    with _session(engine) as sess:
        sess.run(sl.global_variables_initializer())
        for batch in ([0, 3, 6], [1, 6, 6], [4]):  # row 0 of part 0 in the first step only
            sess.run(steps, {ids: batch})
        trained_split, trained_whole = sess.run([split.as_tensor(), whole])
    np.testing.assert_allclose(trained_split, trained_whole, atol=1e-6)
    untouched = [2, 5]
    np.testing.assert_array_equal(trained_split[untouched], full[untouched])


def test_errors():
    tables = [sl.zeros([3, 2]), sl.zeros([2, 2])]
    with pytest.raises(ValueError, match="at least one"):
        sl.nn.embedding_lookup([], [0])
    with pytest.raises(ValueError, match="partition_strategy must be 'mod' or 'div'"):
        sl.nn.embedding_lookup(tables, [0], partition_strategy="hash")
    with pytest.raises(ValueError, match="agree on every dimension but the first"):
        sl.nn.embedding_lookup([sl.zeros([3, 2]), sl.zeros([2, 3])], [0])
    with pytest.raises(TypeError, match="one dtype"):
        sl.nn.embedding_lookup([sl.zeros([3, 2]), sl.zeros([2, 2], sl.float64)], [0])
    with pytest.raises(TypeError, match="int32 or int64"):
        sl.nn.embedding_lookup(tables, sl.constant([0.0]))


@pytest.mark.parametrize("engine", ENGINES)
def test_out_of_range_ids_raise_in_both_engines(engine):
    tables = [sl.zeros([3, 2]), sl.zeros([2, 2])]
    ids = sl.placeholder(sl.int32, [None])
    div = sl.nn.embedding_lookup(tables, ids, partition_strategy="div")
    mod = sl.nn.embedding_lookup(tables, ids, partition_strategy="mod")
    with _session(engine) as sess:
        with pytest.raises(sl.errors.InvalidArgumentError, match="ids contain 5, which is not in"):
            sess.run(div, {ids: [1, 5]})
        with pytest.raises(sl.errors.InvalidArgumentError, match="ids contain -1"):
            sess.run(mod, {ids: [-1, 2]})
        assert sess.run(mod, {ids: []}).shape == (0, 2)

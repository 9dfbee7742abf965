"""sl.data.Dataset transformations: values against plain Python/NumPy, element structure and the
TF1 properties (output_types/shapes/classes), in both engines."""

import collections

import numpy as np
import pytest

import sluice as sl

ENGINES = ["compiled", "interpreted"]


def session(engine="compiled"):
    return sl.Session(config=sl.SessionConfig(engine=engine))


def collect(ds, engine="compiled"):
    """Every element of `ds`, read through a one-shot iterator until OutOfRangeError."""
    nxt = ds.make_one_shot_iterator().get_next()
    out = []
    with session(engine) as sess:
        while True:
            try:
                out.append(sess.run(nxt))
            except sl.errors.OutOfRangeError:
                return out


def flat_values(elements):
    return [np.asarray(e).tolist() for e in elements]


# -- sources --------------------------------------------------------------------------------
@pytest.mark.parametrize("engine", ENGINES)
def test_from_tensor_slices_keeps_tuples_and_dicts(engine):
    a = np.arange(6, dtype=np.float32).reshape(3, 2)
    b = np.array([1, 2, 3], np.int64)
    ds = sl.data.Dataset.from_tensor_slices((a, {"label": b, "w": [0.5, 1.0, 2.0]}))
    assert ds.output_types == (sl.float32, {"label": sl.int64, "w": sl.float32})
    assert ds.output_shapes[0].as_list() == [2] and ds.output_shapes[1]["w"].as_list() == []
    assert ds.output_classes == (sl.Tensor, {"label": sl.Tensor, "w": sl.Tensor})
    got = collect(ds, engine)
    assert len(got) == 3
    for i, (row, d) in enumerate(got):
        np.testing.assert_allclose(row, a[i], rtol=1e-6)
        assert d["label"] == b[i] and d["label"].dtype == np.int64
        assert d["w"].dtype == np.float32


def test_from_tensor_slices_needs_one_first_dimension():
    with pytest.raises(ValueError, match="Dimensions"):
        sl.data.Dataset.from_tensor_slices((np.zeros(3), np.zeros(4)))
    with pytest.raises(ValueError, match="first dimension"):
        sl.data.Dataset.from_tensor_slices(np.float32(1.0))


def test_from_tensors_range_and_namedtuples():
    point = collections.namedtuple("Point", "x y")
    whole = collect(sl.data.Dataset.from_tensors(point(np.ones(2), 3)))
    assert len(whole) == 1 and isinstance(whole[0], point)
    np.testing.assert_array_equal(whole[0].x, np.ones(2))
    assert flat_values(collect(sl.data.Dataset.range(2, 11, 3))) == list(range(2, 11, 3))
    assert sl.data.Dataset.range(5).output_types == sl.int64
    with pytest.raises(ValueError):
        sl.data.Dataset.range(0, 5, 0)


# -- map / filter ---------------------------------------------------------------------------
@pytest.mark.parametrize("engine", ENGINES)
def test_map_unpacks_tuples_and_runs_sluice_ops(engine):
    x = np.arange(12, dtype=np.int32).reshape(4, 3)
    y = np.array([0, 2, 1, 2], np.int64)

    def fn(row, label):
        flat = sl.reshape(sl.cast(row, sl.float32) * 0.5 + 1.0, [3, 1])
        return flat, sl.one_hot(label, 3)

    ds = sl.data.Dataset.from_tensor_slices((x, y)).map(fn)
    assert ds.output_types == (sl.float32, sl.float32)
    assert [s.as_list() for s in ds.output_shapes] == [[3, 1], [3]]
    got = collect(ds, engine)
    for i, (a, b) in enumerate(got):
        np.testing.assert_allclose(a, (x[i] * 0.5 + 1.0).reshape(3, 1), rtol=1e-6)
        np.testing.assert_allclose(b, np.eye(3)[y[i]], rtol=1e-6)


def test_map_passes_a_dict_whole_and_converts_returned_lists():
    ds = sl.data.Dataset.from_tensor_slices({"a": [1, 2], "b": [10, 20]})
    got = collect(ds.map(lambda d: [d["a"] + d["b"], d["a"] * 2]))
    assert [tuple(int(v) for v in e) for e in got] == [(11, 2), (22, 4)]


def test_filter_keeps_the_elements_its_predicate_holds_for():
    ds = sl.data.Dataset.range(10).filter(lambda v: sl.equal(v % 3, 0))
    assert flat_values(collect(ds)) == [0, 3, 6, 9]
    with pytest.raises(ValueError, match="scalar boolean"):
        sl.data.Dataset.range(3).filter(lambda v: v * 2)


# -- batching -------------------------------------------------------------------------------
@pytest.mark.parametrize("engine", ENGINES)
def test_batch_values_and_static_shapes(engine):
    x = np.arange(14, dtype=np.float32).reshape(7, 2)
    ds = sl.data.Dataset.from_tensor_slices(x).batch(3)
    assert ds.output_shapes.as_list() == [None, 2]
    got = collect(ds, engine)
    assert [b.shape for b in got] == [(3, 2), (3, 2), (1, 2)]
    np.testing.assert_allclose(np.concatenate(got), x, rtol=1e-6)
    dropped = sl.data.Dataset.from_tensor_slices(x).batch(3, drop_remainder=True)
    assert dropped.output_shapes.as_list() == [3, 2]
    nxt = dropped.make_one_shot_iterator().get_next()
    assert nxt.shape.as_list() == [3, 2]
    assert [b.shape for b in collect(dropped, engine)] == [(3, 2), (3, 2)]


def test_batch_of_elements_with_different_shapes_is_an_error():
    ds = sl.data.Dataset.from_generator(lambda: iter([[1, 2], [3]]), sl.int32, [None]).batch(2)
    with pytest.raises(sl.errors.InvalidArgumentError, match="different shapes in component 0"):
        collect(ds)


@pytest.mark.parametrize("engine", ENGINES)
def test_padded_batch_pads_to_the_longest_or_the_given_shape(engine):
    seqs = [[1], [2, 3, 4], [5, 6], [7, 8, 9, 10]]
    ds = sl.data.Dataset.from_generator(
        lambda: ((s, len(s)) for s in seqs), (sl.int32, sl.int32), ([None], [])
    )
    batched = ds.padded_batch(2, padded_shapes=([None], []), padding_values=(-1, 0))
    assert [s.as_list() for s in batched.output_shapes] == [[None, None], [None]]
    got = collect(batched, engine)
    np.testing.assert_array_equal(got[0][0], [[1, -1, -1], [2, 3, 4]])
    np.testing.assert_array_equal(got[1][0], [[5, 6, -1, -1], [7, 8, 9, 10]])
    np.testing.assert_array_equal(got[1][1], [2, 4])
    fixed = ds.padded_batch(3, padded_shapes=([5], []), drop_remainder=True)
    assert [s.as_list() for s in fixed.output_shapes] == [[3, 5], [3]]
    (only,) = collect(fixed, engine)
    np.testing.assert_array_equal(only[0], [[1, 0, 0, 0, 0], [2, 3, 4, 0, 0], [5, 6, 0, 0, 0]])
    too_small = ds.padded_batch(2, padded_shapes=([2], []))
    with pytest.raises(sl.errors.InvalidArgumentError, match="smaller size"):
        collect(too_small)


# -- shuffle --------------------------------------------------------------------------------
def test_shuffle_is_a_permutation_deterministic_with_a_seed():
    ds = sl.data.Dataset.range(20).shuffle(8, seed=3)
    first, second = flat_values(collect(ds)), flat_values(collect(ds))
    assert sorted(first) == list(range(20)) and first == second and first != list(range(20))
    unseeded = sl.data.Dataset.range(20).shuffle(20)
    assert flat_values(collect(unseeded)) != flat_values(collect(unseeded))


def test_shuffle_uses_a_buffer_of_buffer_size():
    # TF1's buffer: element i cannot come out before position i - (buffer_size - 1)
    order = flat_values(collect(sl.data.Dataset.range(40).shuffle(4, seed=1)))
    assert all(pos >= value - 3 for pos, value in enumerate(order))
    assert flat_values(collect(sl.data.Dataset.range(6).shuffle(1, seed=1))) == list(range(6))


def test_shuffle_reshuffles_each_epoch_of_a_repeat_unless_told_not_to():
    epochs = np.reshape(
        flat_values(collect(sl.data.Dataset.range(10).shuffle(10, seed=5).repeat(3))), (3, 10)
    )
    assert all(sorted(e) == list(range(10)) for e in epochs)
    assert not np.array_equal(epochs[0], epochs[1])
    same = np.reshape(
        flat_values(
            collect(
                sl.data.Dataset.range(10)
                .shuffle(10, seed=5, reshuffle_each_iteration=False)
                .repeat(3)
            )
        ),
        (3, 10),
    )
    assert np.array_equal(same[0], same[1]) and np.array_equal(same[1], same[2])


# -- ordering transformations ---------------------------------------------------------------
def test_repeat_take_skip_concatenate_zip():
    r = sl.data.Dataset.range
    assert flat_values(collect(r(3).repeat(2))) == [0, 1, 2, 0, 1, 2]
    assert collect(r(3).repeat(0)) == []
    assert flat_values(collect(r(3).repeat().take(7))) == [0, 1, 2, 0, 1, 2, 0]
    assert flat_values(collect(r(5).take(-1))) == list(range(5))
    assert flat_values(collect(r(5).skip(2))) == [2, 3, 4]
    assert collect(r(5).skip(-1)) == []
    assert flat_values(collect(r(2).concatenate(r(5, 7)))) == [0, 1, 5, 6]
    zipped = collect(sl.data.Dataset.zip((r(3), {"sq": r(5).map(lambda v: v * v)})))
    assert [(int(a), int(b["sq"])) for a, b in zipped] == [(0, 0), (1, 1), (2, 4)]
    with pytest.raises(TypeError, match="different types"):
        r(2).concatenate(sl.data.Dataset.from_tensor_slices(np.zeros(2, np.float32)))


def test_flat_map_and_interleave():
    ds = sl.data.Dataset.range(1, 4)
    flat = ds.flat_map(lambda n: sl.data.Dataset.from_tensors(n).repeat(n))
    assert flat_values(collect(flat)) == [1, 2, 2, 3, 3, 3]
    mixed = sl.data.Dataset.range(1, 4).interleave(
        lambda n: sl.data.Dataset.from_tensors(n * 10).repeat(3), cycle_length=2, block_length=2
    )
    assert flat_values(collect(mixed)) == [10, 10, 20, 20, 10, 20, 30, 30, 30]


def test_cache_replays_the_first_full_pass():
    calls = []

    def gen():
        calls.append(1)
        yield from range(3)

    ds = sl.data.Dataset.from_generator(gen, sl.int64, []).cache().repeat(3)
    assert flat_values(collect(ds)) == [0, 1, 2] * 3
    assert len(calls) == 1


# -- from_generator -------------------------------------------------------------------------
@pytest.mark.parametrize("engine", ENGINES)
def test_from_generator_values_args_and_shapes(engine):
    def gen(n, scale):
        for i in range(int(n)):
            yield np.full([i + 1], i * scale), i

    ds = sl.data.Dataset.from_generator(gen, (sl.float32, sl.int64), ([None], []), args=(3, 0.5))
    assert ds.output_shapes[0].as_list() == [None]
    got = collect(ds, engine)
    assert [a.tolist() for a, _ in got] == [[0.0], [0.5, 0.5], [1.0, 1.0, 1.0]]
    assert [a.dtype for a, _ in got] == [np.float32] * 3
    unknown = sl.data.Dataset.from_generator(lambda: iter([1]), sl.int32)
    assert unknown.output_shapes.rank is None


def test_from_generator_with_wrong_values_is_a_clear_error():
    wrong_type = sl.data.Dataset.from_generator(lambda: iter(["abc"]), sl.float32)
    with pytest.raises(sl.errors.InvalidArgumentError, match="expected type was float32"):
        collect(wrong_type)
    wrong_shape = sl.data.Dataset.from_generator(lambda: iter([[1, 2, 3]]), sl.int32, [2])
    with pytest.raises(sl.errors.InvalidArgumentError, match=r"shape \(3,\)"):
        collect(wrong_shape)
    wrong_structure = sl.data.Dataset.from_generator(lambda: iter([1]), (sl.int32, sl.int32))
    with pytest.raises(sl.errors.InvalidArgumentError, match="expected structure"):
        collect(wrong_structure)

    def broken():
        yield 1
        raise RuntimeError("disk on fire")

    with pytest.raises(sl.errors.UnknownError, match="disk on fire"):
        collect(sl.data.Dataset.from_generator(broken, sl.int32))


# -- regressions found by the independent check (issue 17, item 3) ----------------------------
@pytest.mark.parametrize("engine", ENGINES)
def test_padded_batch_takes_tensor_padding_values_and_checks_their_dtype(engine):
    ds = sl.data.Dataset.range(1, 4).map(lambda n: (sl.fill([n], n), n))
    fill = sl.placeholder(sl.int64, [])
    padded = ds.padded_batch(2, ([None], []), (fill, sl.constant(0, sl.int64)))
    it = padded.make_initializable_iterator()
    nxt = it.get_next()
    with session(engine) as sess:
        sess.run(it.initializer, {fill: -7})
        rows, lengths = sess.run(nxt)
    np.testing.assert_array_equal(rows, [[1, -7], [2, 2]])
    np.testing.assert_array_equal(lengths, [1, 2])
    with pytest.raises(TypeError, match="dtype int32.*dtype int64"):  # TF1: no silent cast
        ds.padded_batch(2, ([None], []), (sl.constant(-1), 0))
    with pytest.raises(TypeError, match="dtype float32.*dtype int64"):
        ds.padded_batch(2, ([None], []), (-1.5, 0))
    with pytest.raises(ValueError, match="should be a scalar"):
        ds.padded_batch(2, ([None], []), ([1, 2], 0))
    with pytest.raises(ValueError, match="padding_values"):
        ds.padded_batch(2, ([None], []), (1,))


def test_a_seeded_random_op_in_map_restarts_with_each_iterator():
    # TF1 instantiates the map function anew per iterator: the same numbers every time
    ds = sl.data.Dataset.range(3).map(lambda _: sl.random_uniform([], seed=3))
    it = ds.make_initializable_iterator()
    nxt = it.get_next()
    runs = []
    for _ in range(2):  # two sessions, each initialising twice
        with session() as sess:
            for _ in range(2):
                sess.run(it.initializer)
                runs.append([float(sess.run(nxt)) for _ in range(3)])
    assert all(r == runs[0] for r in runs) and len(set(runs[0])) == 3


def test_interleave_refills_the_slot_of_an_ended_dataset_in_place():
    # TF1's order: a slot whose dataset ends takes the next input element when its turn comes
    sizes = sl.data.Dataset.from_tensor_slices(np.array([1, 3, 3], np.int64))
    ds = sizes.interleave(lambda n: sl.data.Dataset.range(10 * n, 10 * n + n), cycle_length=2)
    assert flat_values(collect(ds)) == [10, 30, 31, 30, 32, 31, 32]
    repeated = sl.data.Dataset.range(1, 6).interleave(
        lambda x: sl.data.Dataset.from_tensors(x).repeat(6), cycle_length=2, block_length=4
    )
    assert (
        flat_values(collect(repeated))
        == [1] * 4 + [2] * 4 + [1, 1, 2, 2] + [3] * 4 + [4] * 4 + [3, 3, 4, 4] + [5] * 6
    )  # the example of TF1's docstring


def test_range_takes_tensor_bounds():
    nested = sl.data.Dataset.range(4).flat_map(lambda n: sl.data.Dataset.range(n, 2 * n))
    assert flat_values(collect(nested)) == [1, 2, 3, 3, 4, 5]  # [1, 2), [2, 4), [3, 6)
    stop = sl.placeholder(sl.int32, [])
    it = sl.data.Dataset.range(1, stop, 2).make_initializable_iterator()
    nxt = it.get_next()
    with session() as sess:
        sess.run(it.initializer, {stop: 6})
        assert [int(sess.run(nxt)) for _ in range(3)] == [1, 3, 5]
    with pytest.raises(TypeError, match="integer"):
        sl.data.Dataset.range(sl.placeholder(sl.float32, []))


def test_cardinality_follows_tf1_kernels():
    D = sl.data.Dataset
    cases = [
        (D.range(10), 10),
        (D.range(10).batch(3), 4),
        (D.range(10).batch(3, True), 3),
        (D.range(10).repeat(), -1),
        (D.range(0).repeat(), 0),
        (D.range(10).repeat(3), 30),
        (D.range(10).filter(lambda x: x > 2), -2),
        (D.range(10).repeat().take(7), 7),
        (D.range(10).skip(3), 7),
        (D.range(10).skip(-1), 0),
        (D.range(10).take(-1), 10),
        (D.zip((D.range(3), D.range(5).repeat())), 3),
        (D.range(3).concatenate(D.range(4)), 7),
        (D.from_tensor_slices(np.zeros((5, 2))).map(lambda x: x * 2).shuffle(3).prefetch(1), 5),
        (D.from_tensors(1), 1),
        (D.from_generator(lambda: iter([1]), sl.int32), -2),
        (D.from_tensor_slices(sl.placeholder(sl.float32, [None])), -2),
    ]
    cardinality = sl.data.experimental.cardinality
    with session() as sess:
        got = sess.run([cardinality(ds) for ds, _ in cases])
    assert [int(n) for n in got] == [n for _, n in cases]
    assert sl.data.experimental.INFINITE_CARDINALITY == -1
    assert sl.data.experimental.UNKNOWN_CARDINALITY == -2


@pytest.mark.parametrize("engine", ENGINES)
def test_batch_size_and_shuffle_buffer_may_be_fed_placeholders(engine):
    size, buffer = sl.placeholder(sl.int64, []), sl.placeholder(sl.int64, [])
    ds = sl.data.Dataset.range(7).shuffle(buffer, seed=1).batch(size, drop_remainder=True)
    assert ds.output_shapes.as_list() == [None]  # the size is known only when fed
    it = ds.make_initializable_iterator()
    nxt = it.get_next()
    with session(engine) as sess:
        sess.run(it.initializer, {size: 3, buffer: 1})  # a buffer of 1 keeps the order
        assert [sess.run(nxt).tolist() for _ in range(2)] == [[0, 1, 2], [3, 4, 5]]
        with pytest.raises(sl.errors.OutOfRangeError):
            sess.run(nxt)
        sess.run(it.initializer, {size: 0, buffer: 1})
        with pytest.raises(sl.errors.InvalidArgumentError, match="greater than zero"):
            sess.run(nxt)


def test_values_that_make_no_tensor_are_clear_errors():
    D = sl.data.Dataset
    with pytest.raises(ValueError, match="non-rectangular"):
        D.from_tensor_slices([[1, 2], [3]])
    with pytest.raises(TypeError, match="no string tensors"):
        D.from_tensor_slices(np.array(["a", "b"]))
    with pytest.raises(TypeError, match="Python objects"):
        D.from_tensors(np.array([1, "x"], dtype=object))
    with pytest.raises(ValueError, match=r"Dimensions \[3, 4\]"):
        D.from_tensor_slices((np.zeros(3), np.zeros(4)))
    for bad in (0, -2):
        with pytest.raises(ValueError, match="batch_size must be positive"):
            D.range(3).batch(bad)
        with pytest.raises(ValueError, match="buffer_size must be positive"):
            D.range(3).shuffle(bad)
    with pytest.raises(ValueError, match=r"padded shape \[\?,\?\].*\[\?\]"):
        D.range(3).map(lambda n: sl.fill([n], n)).padded_batch(2, [None, None])


def test_padded_batch_shape_as_a_constant_and_rank_errors():
    lengths = sl.data.Dataset.range(3).map(lambda n: sl.fill([n], n))
    fixed = lengths.padded_batch(2, sl.constant([4], sl.int64))
    assert fixed.output_shapes.as_list() == [None, 4]
    assert flat_values(collect(fixed)) == [[[0, 0, 0, 0], [1, 0, 0, 0]], [[2, 2, 0, 0]]]
    with pytest.raises(ValueError, match="unknown rank"):
        lengths.padded_batch(2, sl.TensorShape(None))

    def ranks():
        yield np.zeros(2, np.float32)
        yield np.zeros((2, 2), np.float32)

    mixed = sl.data.Dataset.from_generator(ranks, sl.float32).padded_batch(2, [None])
    with pytest.raises(sl.errors.InvalidArgumentError, match="expected rank 1 but got"):
        collect(mixed)


def test_a_dataset_iterates_as_values_outside_graph_code():
    # Keras 3 code reads datasets eagerly: `for x, y in dataset:` (the custom loop guide)
    ds = sl.data.Dataset.from_tensor_slices((np.arange(6.0).reshape(3, 2), np.arange(3))).batch(2)
    got = [(x.numpy().tolist(), y.tolist()) for x, y in ds]
    assert got == [([[0.0, 1.0], [2.0, 3.0]], [0, 1]), ([[4.0, 5.0]], [2])]
    assert [x.tolist() for x, _ in ds.take(1).as_numpy_iterator()] == [[[0.0, 1.0], [2.0, 3.0]]]
    from sluice.framework.ir import tracing

    with tracing.tracing(), pytest.raises(RuntimeError, match="make_one_shot_iterator"):
        next(iter(ds))

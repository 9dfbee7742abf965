"""TF1's partitioned_variables_test.py: the partitioners, `create_partitioned_variables`, and
the `PartitionedVariable` object (iteration, concat, slice specs, assignment)."""

import numpy as np
import pytest

import sluice as sl

ENGINES = ["interpreted", "compiled"]


def _session(engine="interpreted"):
    return sl.Session(config=sl.SessionConfig(engine=engine))


def _specs(parts):
    return [v._save_slice_info.spec for v in parts]


# -- PartitionerCreatorsTest ---------------------------------------------------------------------
def test_fixed_size_partitioner():
    with sl.variable_scope("root", partitioner=sl.fixed_size_partitioner(5, axis=0)):
        v0 = sl.get_variable("v0", dtype=sl.float32, shape=(10, 10))
    assert isinstance(v0, sl.PartitionedVariable)
    assert len(v0._get_variable_list()) == 5
    assert v0._get_partitions() == [5, 1]


def test_fixed_size_partitioner_int64_and_resource_scope():
    with sl.variable_scope("root", partitioner=sl.fixed_size_partitioner(4), use_resource=True):
        v0 = sl.get_variable("v0", dtype=sl.int64, shape=[20])
    assert len(v0._get_variable_list()) == 4
    assert all(v.dtype == sl.int64 for v in v0)


def test_fixed_size_partitioner_caps_at_the_axis_length():
    assert sl.fixed_size_partitioner(7, axis=1)(sl.TensorShape([4, 3])) == [1, 3]


@pytest.mark.parametrize(
    "name, axis, max_shard_bytes, max_shards, partitions",
    [
        ("v0", 0, 131072, None, [1, 1, 1, 1]),  # 65536 bytes fit in one shard
        ("v1", 1, 65536, None, [1, 1, 1, 1]),  # exactly one shard
        ("v2", 2, 32768, None, [1, 1, 2, 1]),  # 8 slices of 4096 bytes per shard
        ("v3a", 3, 2048, None, [1, 1, 1, 32]),  # one slice per shard
        ("v3b", 3, 1024, None, [1, 1, 1, 32]),  # a slice is larger than a shard: one each
        ("v3c", 3, 1024, 33, [1, 1, 1, 32]),  # max_shards above: no effect
        ("v3d", 3, 1024, 2, [1, 1, 1, 2]),  # max_shards wins
    ],
)
def test_variable_axis_size_partitioner(name, axis, max_shard_bytes, max_shards, partitions):
    part = sl.variable_axis_size_partitioner(
        axis=axis, max_shard_bytes=max_shard_bytes, max_shards=max_shards
    )
    with sl.variable_scope("root", partitioner=part):
        v = sl.get_variable(name, dtype=sl.float32, shape=(4, 8, 16, 32))
    assert len(v._get_variable_list()) == max(partitions)
    assert v._get_partitions() == partitions


def test_variable_axis_size_partitioner_counts_string_elements_by_the_estimate():
    part = sl.variable_axis_size_partitioner(
        axis=3, max_shard_bytes=32768, bytes_per_string_element=8
    )
    assert part(sl.TensorShape([4, 8, 16, 32]), np.dtype(object)) == [1, 1, 1, 4]


def test_variable_axis_size_partitioner_errors():
    with pytest.raises(ValueError, match="must be positive"):
        sl.variable_axis_size_partitioner(0)
    with pytest.raises(ValueError, match="must be positive"):
        sl.variable_axis_size_partitioner(4, bytes_per_string_element=0)
    with pytest.raises(ValueError, match="max_shards must be positive"):
        sl.variable_axis_size_partitioner(4, max_shards=-1)
    part = sl.variable_axis_size_partitioner(4)
    with pytest.raises(ValueError, match="not a TensorShape"):
        part([4, 4], sl.float32)
    with pytest.raises(ValueError, match="not fully defined"):
        part(sl.TensorShape([None, 4]), sl.float32)
    with pytest.raises(ValueError, match="not a DType"):
        part(sl.TensorShape([4, 4]), "float32")


@pytest.mark.parametrize(
    "max_partitions, axis, min_slice_size, shape, partitions",
    [
        (100, 0, 2 << 10, [2048], [4]),
        (100, 0, 256 << 10, [2048, 1024], [32, 1]),
        (16, 0, 256 << 10, [2048, 1024], [16, 1]),  # max_partitions restricts
        (1, 0, 256 << 10, [2048, 1024], [1, 1]),
        (100, 0, 128 << 10, [2048, 1024], [64, 1]),  # smaller slices, more parts
        (100, 0, 512 << 10, [2048, 1024], [16, 1]),
        (100, 1, 256 << 10, [64, 1024, 1, 3], [1, 3, 1, 1]),  # another axis
        (100, 3, 256 << 10, [64, 1024, 1, 3], [1, 1, 1, 3]),
        (100, 0, 256 << 10, [16, 128, 1024], [16, 1, 1]),  # no more than the shape allows
        (100, 0, 256 << 10, [4, 512, 1024], [4, 1, 1]),
    ],
)
def test_min_max_variable_partitioner(max_partitions, axis, min_slice_size, shape, partitions):
    # the partitions are computed from shape and dtype alone (TF1's test creates the variables;
    # these shapes are too large for a fast test, so the partitioner is called directly and one
    # small variable below goes through get_variable)
    part = sl.min_max_variable_partitioner(
        max_partitions=max_partitions, axis=axis, min_slice_size=min_slice_size
    )
    assert part(shape=sl.TensorShape(shape), dtype=sl.float32) == partitions


def test_min_max_variable_partitioner_through_get_variable_and_its_axis_check():
    part = sl.min_max_variable_partitioner(max_partitions=3, min_slice_size=16)
    with sl.variable_scope("root", partitioner=part):
        v = sl.get_variable("v", shape=[10, 2])  # 80 bytes / 16 = 5 parts, at most 3
    assert v._get_partitions() == [3, 1]
    bad = sl.min_max_variable_partitioner(axis=2)
    with pytest.raises(ValueError, match="Can not partition variable along axis 2"):
        bad(sl.TensorShape([4, 4]), sl.float32)


def test_partitioners_are_in_compat_v1():
    assert sl.compat.v1.fixed_size_partitioner is sl.fixed_size_partitioner
    assert sl.compat.v1.variable_axis_size_partitioner is sl.variable_axis_size_partitioner
    assert sl.compat.v1.min_max_variable_partitioner is sl.min_max_variable_partitioner
    assert sl.compat.v1.PartitionedVariable is sl.PartitionedVariable


# -- PartitionedVariablesTestCase (create_partitioned_variables) ---------------------------------
def _iota(shape, dtype=sl.float32, partition_info=None):
    assert dtype == sl.float32
    if len(shape) == 1:
        return list(range(shape[0]))
    inner = _iota(shape[1:], dtype)
    return [[(10**i) * v for v in inner] for i in range(shape[0])]


@pytest.mark.parametrize("engine", ENGINES)
def test_vec_constant_init(engine):
    value = sl.constant([1, 2, 3, 4])
    vs = sl.create_partitioned_variables([4], [4], value)
    with _session(engine) as sess:
        sess.run(sl.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(sl.concat(vs, 0)), [1, 2, 3, 4])
    assert [v.dtype for v in vs] == [sl.int32] * 4
    assert _specs(vs) == ["4 0,1", "4 1,1", "4 2,1", "4 3,1"]


def test_constant_init_along_axis_1():
    value = sl.constant([[1, 2, 3, 4], [5, 6, 7, 8]])
    vs = sl.create_partitioned_variables([2, 4], [1, 2], value)
    with _session() as sess:
        sess.run(sl.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(sl.concat(vs, 1)), sess.run(value))
    assert [v.dtype for v in vs] == [sl.int32] * 2
    assert _specs(vs) == ["2 4 0,2:0,2", "2 4 0,2:2,2"]


def test_names_are_unique_and_reused_and_ignore_name_scopes():
    value = sl.constant([[1, 2, 3, 4], [5, 6, 7, 8]])
    with sl.variable_scope("hi"):
        vs1 = sl.create_partitioned_variables([2, 4], [1, 2], value)
        vs2 = sl.create_partitioned_variables([2, 4], [1, 2], value)
    name1, name2 = (v[0]._save_slice_info.full_name for v in (vs1, vs2))
    assert (name1, name2) == ("hi/PartitionedVariable", "hi/PartitionedVariable_1")
    assert [v.name for v in vs1 + vs2] == [
        f"{name1}/part_0:0",
        f"{name1}/part_1:0",
        f"{name2}/part_0:0",
        f"{name2}/part_1:0",
    ]
    with sl.variable_scope("hola") as scope:
        vs1 = sl.create_partitioned_variables([2, 4], [1, 2], value, dtype=sl.int32)
    with sl.variable_scope(scope, reuse=True):
        vs2 = sl.create_partitioned_variables([2, 4], [1, 2], value, dtype=sl.int32)
    assert vs1[0]._save_slice_info.full_name == "hola/PartitionedVariable"
    assert vs1[0] is vs2[0] and vs1[1] is vs2[1]
    with sl.name_scope("ola"):  # the name scope has no effect, as in TF1
        vs1 = sl.create_partitioned_variables([2, 4], [1, 2], value)
        vs2 = sl.create_partitioned_variables([2, 4], [1, 2], value)
    assert vs1[0].name == "PartitionedVariable/part_0:0"
    assert vs2[1].name == "PartitionedVariable_1/part_1:0"


def test_random_init_value_is_sliced():
    rnd = sl.Variable(sl.random_uniform([200, 40]))
    vs = sl.create_partitioned_variables(rnd.shape, [1, 10], rnd.initialized_value())
    with _session() as sess:
        sess.run(sl.global_variables_initializer())
        np.testing.assert_allclose(sess.run(sl.concat(vs, 1)), sess.run(rnd), atol=1e-6)
    assert [v.dtype for v in vs] == [sl.float32] * 10
    assert _specs(vs) == [f"200 40 0,200:{4 * i},4" for i in range(10)]


def test_random_init_uneven_partitions():
    rnd = sl.Variable(sl.random_uniform([20, 43], dtype=sl.float64))
    var_lists = [
        sl.create_partitioned_variables(rnd.shape, [1, i], rnd.initialized_value())
        for i in range(1, 10)
    ]
    expected_specs = [
        ["20 43 0,20:0,43"],
        ["20 43 0,20:0,22", "20 43 0,20:22,21"],
        ["20 43 0,20:0,15", "20 43 0,20:15,14", "20 43 0,20:29,14"],
        ["20 43 0,20:0,11", "20 43 0,20:11,11", "20 43 0,20:22,11", "20 43 0,20:33,10"],
        ["20 43 0,20:0,9", "20 43 0,20:9,9", "20 43 0,20:18,9"]
        + ["20 43 0,20:27,8", "20 43 0,20:35,8"],
    ]
    with _session() as sess:
        sess.run(sl.global_variables_initializer())
        full = sess.run(rnd)
        values = sess.run([sl.concat(vs, 1) for vs in var_lists])
    for i, (vs, value) in enumerate(zip(var_lists, values)):
        np.testing.assert_allclose(value, full, atol=1e-6)
        assert [v.dtype for v in vs] == [sl.float64] * len(vs)
        if i < len(expected_specs):
            assert _specs(vs) == expected_specs[i]


def test_degenerate_and_slice_size_one():
    rnd = sl.Variable(sl.random_uniform([10, 43]))
    whole = sl.create_partitioned_variables(rnd.shape, [1, 1], rnd.initialized_value())
    rows = sl.create_partitioned_variables(rnd.shape, [10, 1], rnd.initialized_value())
    with _session() as sess:
        sess.run(sl.global_variables_initializer())
        full = sess.run(rnd)
        np.testing.assert_allclose(sess.run(sl.concat(whole, 0)), full, atol=1e-6)
        np.testing.assert_allclose(sess.run(sl.concat(rows, 0)), full, atol=1e-6)
    assert _specs(whole) == ["10 43 0,10:0,43"]
    assert _specs(rows) == [f"10 43 {i},1:0,43" for i in range(10)]


def test_iota_initializer_is_called_per_part():
    vs = sl.create_partitioned_variables([13, 5], [3, 1], _iota)
    with _session() as sess:
        sess.run(sl.global_variables_initializer())
        value = sess.run(sl.concat(vs, 0))
    np.testing.assert_allclose(value, _iota([5, 5]) + _iota([4, 5]) + _iota([4, 5]), atol=1e-6)
    assert _specs(vs) == ["13 5 0,5:0,5", "13 5 5,4:0,5", "13 5 9,4:0,5"]


def test_random_initializer_draws_per_part_unless_seeded():
    var0, var1 = sl.create_partitioned_variables([20, 12], [1, 2], sl.random_uniform_initializer())
    seeded = sl.create_partitioned_variables(
        [20, 12], [1, 2], sl.random_uniform_initializer(seed=201)
    )
    with _session() as sess:
        sess.run(sl.global_variables_initializer())
        val0, val1, s0, s1 = sess.run([var0, var1, *seeded])
    assert np.linalg.norm(val0 - val1) > 1e-6
    np.testing.assert_allclose(s0, s1, atol=1e-6)


@pytest.mark.parametrize(
    "shape, slicing",
    [([10], [1, 1]), ([10, 20], [1]), ([10, 43], [1]), ([10, 43], [1, 2, 3])]
    + [([10, 43], [11, 1]), ([10, 43], [20, 1]), ([10, 43], [1, 50]), ([10, 43], [2, 2])],
)
def test_some_errors(shape, slicing):
    rnd = sl.Variable(sl.random_uniform([10, 43]))
    with pytest.raises(ValueError):
        sl.create_partitioned_variables(shape, slicing, rnd.initialized_value())


def test_control_dependencies_do_not_reach_as_tensor_but_reach_concat():
    c = sl.constant(1.0)
    with sl.control_dependencies([c]):
        d = sl.constant(2.0)
        x = sl.get_variable(
            "x",
            shape=[2],
            initializer=sl.ones_initializer(),
            partitioner=sl.variable_axis_size_partitioner(4),
        )
        before = set(sl.get_default_graph().get_operations())
        x.as_tensor()
        reading = [op for op in sl.get_default_graph().get_operations() if op not in before]
        before = set(sl.get_default_graph().get_operations())
        concat = x._concat()
        concat_ops = [op for op in sl.get_default_graph().get_operations() if op not in before]
    assert list(d.op.control_inputs) == [c.op]
    assert reading and all(not op.control_inputs for op in reading)
    assert any(c.op in op.control_inputs for op in concat_ops)
    with _session() as sess:
        sess.run(sl.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(concat), sess.run(x.as_tensor()))


# -- the PartitionedVariable object --------------------------------------------------------------
@pytest.mark.parametrize("engine", ENGINES)
def test_partitioned_variable_api(engine):
    full = np.arange(14, dtype=np.float32).reshape(7, 2)
    w = sl.get_variable("w", initializer=full, partitioner=sl.fixed_size_partitioner(3))
    assert (w.name, w.dtype, w.shape, w.get_shape()) == ("w", sl.float32, (7, 2), (7, 2))
    assert len(w) == 3 and [v.name for v in w] == [f"w/part_{i}:0" for i in range(3)]
    assert w._get_variable_list() == list(w) and w._partition_axes() == [0]
    infos = [v._save_slice_info for v in w]
    assert [i.full_name for i in infos] == ["w"] * 3
    assert [i.full_shape for i in infos] == [[7, 2]] * 3
    assert [i.var_offset for i in infos] == [[0, 0], [3, 0], [5, 0]]
    assert [i.var_shape for i in infos] == [[3, 2], [2, 2], [2, 2]]
    assert [i.spec for i in infos] == ["7 2 0,3:0,2", "7 2 3,2:0,2", "7 2 5,2:0,2"]
    assert sl.global_variables() == list(w) and sl.trainable_variables() == list(w)
    y = sl.matmul(w, sl.ones([2, 1]))  # converted by concatenating the parts
    assign = w.assign(full * 2)
    with _session(engine) as sess:
        sess.run(sl.global_variables_initializer())
        np.testing.assert_allclose(sess.run(w.as_tensor()), full, atol=1e-6)
        np.testing.assert_allclose(sess.run(sl.convert_to_tensor(w)), full, atol=1e-6)
        np.testing.assert_allclose(sess.run(y)[:, 0], full.sum(1), atol=1e-6)
        sess.run(assign)
        np.testing.assert_allclose(sess.run(w.as_tensor()), full * 2, atol=1e-6)
    with pytest.raises(ValueError, match="Incompatible type conversion"):
        sl.convert_to_tensor(w, dtype=sl.int32)


def test_as_tensor_along_axis_1_and_one_part():
    w = sl.get_variable("w", [2, 5], partitioner=sl.fixed_size_partitioner(2, axis=1))
    one = sl.get_variable("one", [3, 2], partitioner=sl.fixed_size_partitioner(1))
    assert w._partition_axes() == [1] and [v.shape.as_list() for v in w] == [[2, 3], [2, 2]]
    assert w.as_tensor().shape == (2, 5) and w.as_tensor().op.name.startswith("w")
    assert len(one) == 1 and one._partition_axes() == [0]
    with _session() as sess:
        sess.run(sl.global_variables_initializer())
        parts = sess.run(list(w))
        np.testing.assert_array_equal(sess.run(w.as_tensor()), np.concatenate(parts, 1))
        np.testing.assert_array_equal(sess.run(one.as_tensor()), sess.run(list(one))[0])


def test_partitioned_variable_constructor_errors():
    w = sl.get_variable("w", [4, 2], partitioner=sl.fixed_size_partitioner(2))
    parts = list(w)
    with pytest.raises(TypeError, match="variable_list is not a list"):
        sl.PartitionedVariable("w", [4, 2], sl.float32, parts[0], [2, 1])
    with pytest.raises(TypeError, match="partitions is not a list"):
        sl.PartitionedVariable("w", [4, 2], sl.float32, parts, 2)
    with pytest.raises(ValueError, match="must be positive"):
        sl.PartitionedVariable("w", [4, 2], sl.float32, parts, [0, 1])
    with pytest.raises(ValueError, match="may not be empty"):
        sl.PartitionedVariable("w", [4, 2], sl.float32, [], [2, 1])
    with pytest.raises(ValueError, match="save_slice_info"):
        sl.PartitionedVariable("w", [4, 2], sl.float32, [sl.Variable([1.0])], [2, 1])
    with pytest.raises(ValueError, match="full shapes must match"):
        sl.PartitionedVariable("w", [5, 2], sl.float32, parts, [2, 1])
    reversed_parts = sl.PartitionedVariable("w", [4, 2], sl.float32, parts[::-1], [2, 1])
    assert list(reversed_parts) == parts  # sorted by offset


@pytest.mark.parametrize("layout", ["data", "model"])
def test_parts_stay_separate_variables_under_a_distribution(layout):
    # each part is its own variable: replicated, or laid out by a LayoutMap entry for its name
    g = sl.Graph()
    with g.as_default():
        emb = sl.get_variable(
            "emb",
            [8, 4],
            initializer=sl.ones_initializer(),
            partitioner=sl.fixed_size_partitioner(2),
        )
        ids = sl.placeholder(sl.int32, [None])
        looked_up = sl.nn.embedding_lookup(emb, ids, partition_strategy="div")
        train = sl.train.GradientDescentOptimizer(0.5).minimize(sl.reduce_sum(looked_up))
        init = sl.global_variables_initializer()
    mesh = sl.distribution.DeviceMesh((2,), ["model"], sl.distribution.list_devices()[:2])
    if layout == "data":
        distribution = sl.distribution.DataParallel(device_mesh=mesh)
    else:
        layout_map = sl.distribution.LayoutMap(mesh)
        layout_map["emb/part_.*"] = ("model", None)
        distribution = sl.distribution.ModelParallel(layout_map=layout_map)
    with sl.Session(graph=g, config=sl.SessionConfig(distribution=distribution)) as sess:
        sess.run(init)
        np.testing.assert_array_equal(sess.run(looked_up, {ids: [1, 6, 6, 2]}), np.ones([4, 4]))
        sess.run(train, {ids: [1, 6, 6, 2]})  # a batch the mesh splits evenly
        parts = sess.run(list(emb))
    want = np.ones([8, 4], np.float32)
    want[[1, 2]] -= 0.5
    want[6] -= 1.0  # looked up twice
    np.testing.assert_allclose(np.concatenate(parts), want, rtol=1e-6)
    assert [p.shape for p in parts] == [(4, 4), (4, 4)]

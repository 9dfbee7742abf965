"""The partitioned parts of TF1's variable_scope_test.py: VariableScopeWithPartitioningTest and
PartitionInfoTest, with the getter's other partitioned paths (custom getters, initializers,
regularizers, reuse errors)."""

import numpy as np
import pytest

import sluice as sl
from sluice.framework.partitioned_variables import PartitionInfo


def _into(n, axis=0, rank=3):
    def partitioner(shape, dtype):
        parts = [1] * rank
        parts[axis] = n
        return parts

    return partitioner


# -- VariableScopeWithPartitioningTest -----------------------------------------------------------
def test_result_name_matches_requested():
    with sl.variable_scope("scope0", partitioner=_into(2)):
        v = sl.get_variable("name0", shape=(3, 1, 1))
    assert v.name == "scope0/name0"
    assert v.as_tensor().name == "scope0/name0:0"
    names = [x.name for x in sl.get_collection(sl.GraphKeys.GLOBAL_VARIABLES)]
    assert "scope0/name0/part_0:0" in names and "scope0/name0/part_1:0" in names
    assert "scope0/name0/part_2:0" not in names


def test_breaks_if_partitioning_changes():
    with sl.variable_scope("scope0", partitioner=_into(2)):
        sl.get_variable("name0", shape=(3, 1, 1))
    for other in (_into(3), _into(1)):
        with sl.variable_scope("scope0", partitioner=other, reuse=True):
            with pytest.raises(
                ValueError,
                match="Trying to reuse partitioned variable .* but specified partitions .* "
                "and found partitions .*",
            ):
                sl.get_variable("name0", shape=(3, 1, 1))


def test_returns_the_same_object_when_reused():
    with sl.variable_scope("scope0", partitioner=_into(2)):
        v = sl.get_variable("name0", shape=(3, 1, 1))
        sl.get_variable_scope().reuse_variables()
        assert sl.get_variable("name0", shape=(3, 1, 1)) is v
    with sl.variable_scope("scope0", reuse=sl.AUTO_REUSE, partitioner=_into(2)):
        assert sl.get_variable("name0", shape=(3, 1, 1)) is v


def test_allows_reuse_without_partitioner():
    with sl.variable_scope("scope0", partitioner=_into(2)):
        v = sl.get_variable("name0", shape=(3, 1, 1))
    with sl.variable_scope("scope0", reuse=True):
        assert sl.get_variable("name0") is v


def test_propagates_partitioner_on_reopening():
    part = _into(2)
    with sl.variable_scope("scope0", partitioner=part) as scope:
        assert scope.partitioner is part
        with sl.variable_scope(scope) as inner:
            assert inner.partitioner is part


def test_scalar_ignores_partitioner():
    with sl.variable_scope("scope0", partitioner=_into(2)):
        v = sl.get_variable("name0", shape=())
    assert isinstance(v, sl.Variable) and v.name == "scope0/name0:0"


@pytest.mark.parametrize("use_resource", [False, True])
def test_partition_concatenates_along_correct_axis(use_resource):
    with sl.variable_scope("root", use_resource=use_resource):
        v0 = sl.get_variable("n0", shape=(2, 2, 2), partitioner=lambda **_: (2, 1, 1))
        v1 = sl.get_variable("n1", shape=(2, 2, 2), partitioner=lambda **_: (1, 2, 1))
    assert v0.get_shape() == (2, 2, 2) and v1.get_shape() == (2, 2, 2)
    assert [p.shape for p in v0] == [(1, 2, 2), (1, 2, 2)]
    assert [p.shape for p in v1] == [(2, 1, 2), (2, 1, 2)]
    assert v0._partition_axes() == [0] and v1._partition_axes() == [1]
    with sl.Session() as sess:
        sess.run(sl.global_variables_initializer())
        p0, p1 = sess.run(list(v1))
        np.testing.assert_array_equal(sess.run(v1.as_tensor()), np.concatenate([p0, p1], 1))


# -- what the getter refuses, in TF1's words -----------------------------------------------------
def test_reuse_errors():
    with sl.variable_scope("s", partitioner=_into(2, rank=2)):
        sl.get_variable("w", [4, 2])
        with pytest.raises(ValueError, match="Partitioned variable with name s/w already exists"):
            sl.get_variable("w", [4, 2])
    with sl.variable_scope("s", reuse=True, partitioner=_into(2, rank=2)):
        with pytest.raises(ValueError, match="Trying to reuse partitioned variable s/w, but "
                           "specified shape"):  # fmt: skip
            sl.get_variable("w", [5, 2])
        with pytest.raises(ValueError, match="specified dtype float64 and found dtype float32"):
            sl.get_variable("w", [4, 2], dtype=sl.float64)
        with pytest.raises(ValueError, match="PartitionedVariable s/new does not exist"):
            sl.get_variable("new", [4, 2])


def test_partitioned_and_unpartitioned_versions_of_one_name_are_refused():
    sl.get_variable("plain", [4, 2])
    with pytest.raises(ValueError, match="unpartitioned version of the variable was found"):
        sl.get_variable("plain", [4, 2], partitioner=sl.fixed_size_partitioner(2))
    sl.get_variable("split", [4, 2], partitioner=sl.fixed_size_partitioner(2))
    with pytest.raises(ValueError, match="a partitioned version of the variable was found"):
        sl.get_variable("split", [4, 2])


def test_a_different_part_count_over_existing_parts_is_refused():
    sl.get_variable("w", [6, 2], partitioner=sl.fixed_size_partitioner(2))
    store = sl.get_default_graph().attachments["variable_scopes"]
    del store.partitioned_variables["w"]  # as a second store over the same graph would see it
    with pytest.raises(ValueError, match="but w/part_2 was not"):
        sl.get_variable("w", [6, 2], partitioner=sl.fixed_size_partitioner(3))
    with pytest.raises(ValueError, match="so was the extra shard w/part_1"):
        sl.get_variable("w", [6, 2], partitioner=sl.fixed_size_partitioner(1))


@pytest.mark.parametrize(
    "partitioner, shape, match",
    [
        (lambda **_: 2, [4], "must return a sequence"),
        (lambda **_: [2], [4, 2], "does not match the Variable's rank"),
        (lambda **_: [0, 1], [4, 2], "zero partitions"),
        (lambda **_: [2, 2], [4, 2], "Can only slice a variable along one dimension"),
        (lambda **_: [2, 1], [None, 2], "must be fully defined"),
        (lambda **_: [5, 1], [4, 2], "Cannot create 5 slices for size 4"),
    ],
)
def test_partitioner_results_are_checked(partitioner, shape, match):
    with pytest.raises(ValueError, match=match):
        sl.get_variable("w", shape, partitioner=partitioner)


# -- initializers, regularizers, custom getters --------------------------------------------------
def test_initializers_get_the_part_shape_and_partition_info():
    seen = []

    def init(shape, dtype=None, partition_info=None):
        seen.append((list(shape), partition_info.full_shape, partition_info.var_offset))
        offset = partition_info.single_offset(shape)
        return np.arange(offset, offset + shape[0], dtype=np.float32)[:, None] * np.ones(shape)

    w = sl.get_variable("w", [5, 2], initializer=init, partitioner=sl.fixed_size_partitioner(2))
    assert seen == [([3, 2], [5, 2], [0, 0]), ([2, 2], [5, 2], [3, 0])]
    with sl.Session() as sess:
        sess.run(sl.global_variables_initializer())
        np.testing.assert_allclose(sess.run(w.as_tensor())[:, 0], np.arange(5.0), atol=1e-6)


def test_glorot_scales_each_part_by_the_full_shape():
    # limit = sqrt(6 / (fan_in + fan_out)) of the full [400, 2] shape, not of a [100, 2] part
    w = sl.get_variable("w", [400, 2], partitioner=sl.fixed_size_partitioner(4))
    with sl.Session() as sess:
        sess.run(sl.global_variables_initializer())
        value = sess.run(w.as_tensor())
    limit = np.sqrt(6.0 / 402.0)
    assert np.abs(value).max() <= limit and np.abs(value).max() > 0.9 * limit


def test_regularizer_applies_to_each_part():
    w = sl.get_variable(
        "w",
        initializer=np.ones([4, 2], np.float32),
        regularizer=lambda v: sl.reduce_sum(v),
        partitioner=sl.fixed_size_partitioner(2),
    )
    losses = sl.losses.get_regularization_losses()
    assert len(losses) == 2 and len(w) == 2
    with sl.Session() as sess:
        sess.run(sl.global_variables_initializer())
        assert sess.run(sl.losses.get_regularization_loss()) == pytest.approx(8.0, abs=1e-6)


def test_custom_getter_receives_the_partitioner():
    calls = []

    def getter(getter, name, *args, **kwargs):
        calls.append((name, kwargs["partitioner"]))
        return getter(name, *args, **kwargs)

    part = sl.fixed_size_partitioner(2)
    with sl.variable_scope("s", custom_getter=getter, partitioner=part):
        w = sl.get_variable("w", [4, 3])
    assert calls == [("s/w", part)] and isinstance(w, sl.PartitionedVariable)


# -- PartitionInfoTest ---------------------------------------------------------------------------
def test_partition_info_constructor():
    info = PartitionInfo(full_shape=[2, 3], var_offset=[0, 1])
    assert info.full_shape == [2, 3] and info.var_offset == [0, 1]
    for full_shape, var_offset in ((None, [0, 1]), ([0, 1], None), ("foo", [0, 1]), ([0, 1], "f")):
        with pytest.raises(TypeError):
            PartitionInfo(full_shape=full_shape, var_offset=var_offset)
    with pytest.raises(ValueError):
        PartitionInfo(full_shape=[0, 1], var_offset=[0])  # lengths differ
    with pytest.raises(ValueError):
        PartitionInfo(full_shape=[1, 1], var_offset=[0, 1])  # offset beyond the shape


def test_partition_info_single_offset_and_slice_dim():
    assert PartitionInfo([9, 3], [4, 0]).single_offset([1, 3]) == 4
    assert PartitionInfo([9, 3], [0, 0]).single_offset([9, 3]) == 0
    info = PartitionInfo([9, 3], [4, 0])
    with pytest.raises(TypeError):
        info.single_slice_dim(None)
    for shape in ([1, 2, 3], [6, 3], [1, 1]):  # rank, too large, two candidate axes
        with pytest.raises(ValueError):
            info.single_slice_dim(shape)
    assert PartitionInfo([9, 3], [0, 0]).single_slice_dim([9, 2]) == 1
    assert PartitionInfo([9, 3], [4, 0]).single_slice_dim([2, 3]) == 0

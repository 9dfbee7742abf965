"""The partitioned parts of TF1's saver_test.py (`_testPartitionedVariables`): a partitioned
variable is saved as one full tensor under its full name and restores into the same
partitioning, another one, or an unpartitioned variable, and the reverse; Saver's var_list
forms for partitioned variables, and what it refuses."""

import h5py
import numpy as np
import pytest

import sluice as sl

SHAPE = [10, 3]


def _save(path, partitioner=None, with_dict=False):
    rnd = np.random.RandomState(0).rand(*SHAPE).astype(np.float32)
    with sl.Graph().as_default(), sl.Session() as sess:
        if partitioner:
            var = sl.get_variable("my_var", shape=SHAPE, initializer=rnd, partitioner=partitioner)
        else:
            var = sl.get_variable("my_var", initializer=rnd)
        sess.run(sl.global_variables_initializer())
        saver = sl.train.Saver({"my_var": var} if with_dict else [var])
        assert saver.save(sess, path) == path + ".h5"
    return rnd


def _restore(path, partitioner=None, with_dict=False):
    with sl.Graph().as_default(), sl.Session() as sess:
        zeros = sl.zeros(SHAPE)
        if partitioner:
            var = sl.get_variable("my_var", shape=SHAPE, initializer=zeros, partitioner=partitioner)
        else:
            var = sl.get_variable("my_var", initializer=zeros)
        sess.run(sl.global_variables_initializer())
        saver = sl.train.Saver({"my_var": var} if with_dict else [var])
        saver.restore(sess, path + ".h5")
        return sess.run(sl.convert_to_tensor(var))


@pytest.mark.parametrize("with_dict", [False, True])
def test_partitioned_variables_restore_into_any_partitioning(tmp_path, with_dict):
    path = str(tmp_path / "ckpt")
    saved = _save(path, sl.fixed_size_partitioner(2), with_dict)
    with h5py.File(path + ".h5", "r") as f:  # one logical variable, the full tensor
        assert list(f["variables"]) == ["my_var"]
        np.testing.assert_array_equal(f["variables/my_var"][()], saved)
    for partitioner in (None, sl.fixed_size_partitioner(2), sl.fixed_size_partitioner(3)):
        np.testing.assert_allclose(_restore(path, partitioner, with_dict), saved, atol=1e-6)
    saved = _save(path, None, with_dict)  # a whole variable restores into parts
    np.testing.assert_allclose(
        _restore(path, sl.fixed_size_partitioner(3), with_dict), saved, atol=1e-6
    )


def test_default_saver_groups_parts_and_keeps_other_variables(tmp_path):
    emb = sl.get_variable(
        "emb", initializer=np.arange(12.0, dtype=np.float32).reshape(6, 2),
        partitioner=sl.fixed_size_partitioner(4, axis=0),
    )  # fmt: skip
    bias = sl.get_variable("bias", initializer=np.ones(2, np.float32))
    with sl.Session() as sess:
        sess.run(sl.global_variables_initializer())
        path = sl.train.Saver().save(sess, str(tmp_path / "model"))
        sess.run([emb.assign(np.zeros([6, 2], np.float32)), bias.assign([5.0, 5.0])])
        sl.train.Saver().restore(sess, path)
        np.testing.assert_array_equal(sess.run(emb.as_tensor()), np.arange(12.0).reshape(6, 2))
        np.testing.assert_array_equal(sess.run(bias), [1.0, 1.0])
    with h5py.File(path, "r") as f:
        assert sorted(f["variables"]) == ["bias", "emb"]
    reader = sl.train.load_checkpoint(path)
    assert reader.get_variable_to_shape_map()["emb"] == [6, 2]


def test_parts_listed_alone_group_under_their_full_name(tmp_path):
    w = sl.get_variable("w", [4, 2], partitioner=sl.fixed_size_partitioner(2))
    saver = sl.train.Saver(list(w))  # the parts in a list: one entry, "w"
    with sl.Session() as sess:
        sess.run(sl.global_variables_initializer())
        path = saver.save(sess, str(tmp_path / "parts"))
        value = sess.run(w.as_tensor())
    with h5py.File(path, "r") as f:
        np.testing.assert_array_equal(f["variables/w"][()], value)


def test_what_the_saver_refuses():
    w = sl.get_variable("w", [4, 2], partitioner=sl.fixed_size_partitioner(2))
    v = sl.get_variable("v", [4, 2], partitioner=sl.fixed_size_partitioner(2))
    with pytest.raises(ValueError, match="do not make up its full shape"):
        sl.train.Saver([list(w)[0]])
    with pytest.raises(ValueError, match="Slices must all be from the same tensor"):
        sl.train.Saver({"mixed": [list(w)[0], list(v)[1]]})
    with pytest.raises(ValueError, match="parts of one partitioned variable"):
        sl.train.Saver({"plain": [sl.Variable(1.0)]})
    with pytest.raises(ValueError, match="two variables have the same name: w"):
        sl.train.Saver([w, sl.Variable(np.zeros([4, 2], np.float32), name="w")])


def test_a_shape_mismatch_names_the_full_variable(tmp_path):
    path = str(tmp_path / "ckpt")
    _save(path, sl.fixed_size_partitioner(2))
    with sl.Graph().as_default(), sl.Session() as sess:
        var = sl.get_variable("my_var", [12, 3], partitioner=sl.fixed_size_partitioner(3))
        with pytest.raises(sl.errors.InvalidArgumentError, match="my_var"):
            sl.train.Saver([var]).restore(sess, path + ".h5")

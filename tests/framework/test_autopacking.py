"""TF1's auto-packing: a (nested) list holding Tensors converts to one Tensor (issue 25)."""

import numpy as np
import pytest

import sluice as sl


def test_list_of_tensors_packs_with_plain_entries_and_variables():
    a = sl.constant([1.0, 2.0])
    b = sl.placeholder(sl.float32, [2])
    v = sl.Variable(3.0)
    packed = sl.convert_to_tensor([a, b])
    nested = sl.convert_to_tensor([[a[0], 1.0], [2.0, b[1]]])
    with_var = sl.convert_to_tensor([v, 2.0])
    total = sl.reduce_sum([a, [3.0, 4.0]])  # any op argument packs too
    assert packed.shape.as_list() == [2, 2] and nested.shape.as_list() == [2, 2]
    with sl.Session() as sess:
        sess.run(sl.global_variables_initializer())
        got = sess.run([packed, nested, with_var, total], {b: [5.0, 6.0]})
    np.testing.assert_array_equal(got[0], [[1, 2], [5, 6]])
    np.testing.assert_array_equal(got[1], [[1, 1], [2, 6]])
    np.testing.assert_array_equal(got[2], [3, 2])
    assert got[3] == 10.0 and got[0].dtype == np.float32


def test_packing_tensors_of_different_dtypes_is_refused():
    with pytest.raises(TypeError, match="int32"):
        sl.convert_to_tensor([sl.constant([1.0]), sl.constant([1])])


@pytest.mark.parametrize("value", [None, object()], ids=["None", "object"])
def test_values_numpy_only_holds_as_objects_are_refused(value):
    with pytest.raises(TypeError, match="Failed to convert object of type"):
        sl.convert_to_tensor(value)


def test_a_tensor_array_is_not_a_tensor():
    with pytest.raises(TypeError, match="TensorArray"):
        sl.convert_to_tensor(sl.TensorArray(sl.float32, 3))

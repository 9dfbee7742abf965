"""sparse_tensor_dense_matmul, as TF1's sparse_tensor_dense_matmul_op_test.py and
sparse_tensor_dense_matmul_grad_test.py: every adjoint against NumPy, repeated indices, errors,
gradients with respect to the values and the dense operand against central differences."""

import numpy as np
import pytest

import sluice as sl
from sluice.testing import check_gradients
from tests.sparse.conftest import session


def random_sparse(rng, shape, density=0.5):
    dense = rng.normal(size=shape) * (rng.random(shape) < density)
    indices = np.argwhere(dense != 0)
    return indices, dense[dense != 0], dense


def test_matmul_matches_numpy(engine):
    rng = np.random.default_rng(0)
    ind, val, dense_a = random_sparse(rng, [4, 3])
    sp = sl.SparseTensor(ind, val.astype(np.float32), [4, 3])
    cases, outs = [], []
    for adjoint_a in (False, True):
        for adjoint_b in (False, True):
            inner, cols = (4 if adjoint_a else 3), 2
            b = rng.normal(size=[cols, inner] if adjoint_b else [inner, cols])
            a = dense_a.T if adjoint_a else dense_a
            cases.append((adjoint_a, adjoint_b, a @ (b.T if adjoint_b else b)))
            outs.append(
                sl.sparse_tensor_dense_matmul(sp, b.astype(np.float32), adjoint_a, adjoint_b)
            )
    with session(engine) as sess:
        values = sess.run(outs)
    for (adjoint_a, adjoint_b, expected), out_t, out in zip(cases, outs, values):
        assert out_t.shape.as_list() == list(expected.shape)
        np.testing.assert_allclose(
            out, expected, rtol=1e-5, atol=1e-6, err_msg=f"adjoints {adjoint_a}, {adjoint_b}"
        )


def test_repeated_indices_add_up(engine):
    sp = sl.SparseTensor([[0, 1], [0, 1], [1, 0]], [1.0, 2.0, 4.0], [2, 2])
    with session(engine) as sess:
        out = sess.run(sl.sparse_tensor_dense_matmul(sp, [[1.0, 0.0], [0.0, 1.0]]))
    np.testing.assert_allclose(out, [[0.0, 3.0], [4.0, 0.0]], atol=1e-6)


def test_fed_sparse_operand(engine):
    rng = np.random.default_rng(1)
    sp = sl.sparse_placeholder(sl.float64, shape=[5, 3])
    b = rng.normal(size=[3, 2])
    out_t = sl.sparse_tensor_dense_matmul(sp, b)
    with session(engine) as sess:
        for density in (0.2, 0.7):
            ind, val, dense = random_sparse(rng, [5, 3], density)
            out = sess.run(out_t, {sp: (ind, val, [5, 3])})
            np.testing.assert_allclose(out, dense @ b, atol=1e-6)


def test_construction_errors():
    sp = sl.SparseTensor([[0, 1]], [1.0], [2, 3])
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 3 and 2"):
        sl.sparse_tensor_dense_matmul(sp, np.ones([2, 2], np.float32))
    with pytest.raises(ValueError, match="'b' is not a matrix"):
        sl.sparse_tensor_dense_matmul(sp, np.ones([3], np.float32))
    with pytest.raises(ValueError, match="'a' is not a matrix"):
        sl.sparse_tensor_dense_matmul(
            sl.SparseTensor([[0, 0, 0]], [1.0], [1, 1, 1]), np.ones([1, 1], np.float32)
        )
    with pytest.raises(TypeError, match="float64"):
        sl.sparse_tensor_dense_matmul(sp, sl.constant(np.ones([3, 2])))


def test_run_time_errors(engine):
    sp = sl.sparse_placeholder(sl.float32, shape=[2, 3])
    out_t = sl.sparse_tensor_dense_matmul(sp, np.ones([3, 1], np.float32))
    with session(engine) as sess:
        with pytest.raises(  # TF1's message: the entry, its column and the bound
            sl.errors.InvalidArgumentError, match=r"k \(3\) from index\[1,1\] out of bounds \(>=3\)"
        ):
            sess.run(out_t, {sp: ([[0, 0], [1, 3]], [1.0, 1.0], [2, 3])})


@pytest.mark.parametrize("adjoint_a", [False, True])
@pytest.mark.parametrize("adjoint_b", [False, True])
def test_gradients_against_central_differences(adjoint_a, adjoint_b):
    rng = np.random.default_rng(2)
    ind, val, _ = random_sparse(rng, [3, 4], 0.6)
    inner = 3 if adjoint_a else 4
    b = rng.normal(size=[2, inner] if adjoint_b else [inner, 2])

    def build(values, dense):
        sp = sl.SparseTensor(ind, values, [3, 4])
        return sl.sparse_tensor_dense_matmul(sp, dense, adjoint_a, adjoint_b)

    check_gradients(build, [val, b])

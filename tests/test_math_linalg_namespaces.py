"""`sl.math` and `sl.linalg` (issue 17, item 4, in part): TF1's namespaces over sluice's ops."""

import numpy as np
import pytest

import sluice as sl


@pytest.mark.parametrize("module", [sl.math, sl.linalg])
def test_every_listed_name_is_a_sluice_function(module):
    for name in module.__all__:
        assert callable(getattr(module, name)), name


def test_math_and_linalg_compute_as_their_sl_names():
    a = np.array([[4.0, 1.0], [1.0, 3.0]])
    x = sl.constant(a)
    fetches = [
        sl.math.reduce_logsumexp(x),
        sl.math.divide_no_nan(x, sl.zeros_like(x)),
        sl.math.top_k(x, 1).values,
        sl.linalg.inv(x),
        sl.linalg.det(x),
        sl.linalg.cholesky(x),
        sl.linalg.trace(x),
        sl.linalg.matmul(x, x),
    ]
    with sl.Session() as sess:
        lse, nan_free, top, inv, det, chol, trace, mm = sess.run(fetches)
    np.testing.assert_allclose(lse, np.log(np.exp(a).sum()), rtol=1e-6)
    np.testing.assert_array_equal(nan_free, np.zeros_like(a))
    np.testing.assert_array_equal(top, [[4.0], [3.0]])
    np.testing.assert_allclose(inv, np.linalg.inv(a), rtol=1e-6)
    np.testing.assert_allclose(det, np.linalg.det(a), rtol=1e-6)
    np.testing.assert_allclose(chol, np.linalg.cholesky(a), rtol=1e-6)
    assert trace == 7.0
    np.testing.assert_allclose(mm, a @ a, rtol=1e-6)


ENGINES = ["compiled", "interpreted"]


@pytest.mark.parametrize("engine", ENGINES)
def test_slogdet_matches_numpy_on_a_batch(engine):
    a = np.array([[[1.0, 2.0], [3.0, -4.0]], [[2.0, 0.0], [0.0, 3.0]], [[1.0, 2.0], [2.0, 4.0]]])
    config = sl.SessionConfig(engine=engine)
    with sl.Graph().as_default(), sl.Session(config=config) as sess:
        result = sl.linalg.slogdet(sl.constant(a))
        assert result._fields == ("sign", "log_abs_determinant")
        assert result.sign.shape.as_list() == [3] and result.sign.dtype == sl.float64
        sign, logdet = sess.run(result)
    want_sign, want_logdet = np.linalg.slogdet(a)
    np.testing.assert_allclose(sign, want_sign, rtol=1e-12)
    np.testing.assert_allclose(logdet[:2], want_logdet[:2], rtol=1e-12)
    assert sign[2] == 0.0 and logdet[2] == -np.inf  # singular: sign 0, log|det| -inf


def test_slogdet_stays_finite_where_det_underflows():
    a = np.eye(60, dtype=np.float32) * 0.1  # det 1e-60 underflows float32
    with sl.Graph().as_default(), sl.Session() as sess:
        det, (sign, logdet) = sess.run([sl.linalg.det(a), sl.linalg.slogdet(a)])
    assert det == 0.0 and sign == 1.0
    np.testing.assert_allclose(logdet, 60 * np.log(0.1), rtol=1e-5)


def test_slogdet_gradient_matches_finite_differences():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(2, 3, 3)) + 3 * np.eye(3)
    sl.testing.check_gradients(lambda x: sl.linalg.slogdet(x).log_abs_determinant, [a])


def test_slogdet_refuses_non_square_and_integer_matrices():
    with sl.Graph().as_default():
        with pytest.raises(ValueError, match="square"):
            sl.linalg.slogdet(np.zeros((2, 3)))
        with pytest.raises(TypeError):
            sl.linalg.slogdet(np.zeros((2, 2), np.int32))


def test_linalg_covers_the_tf1_core_names():
    wanted = {
        "matmul",
        "inv",
        "det",
        "slogdet",
        "solve",
        "cholesky",
        "qr",
        "svd",
        "eye",
        "diag",
        "trace",
        "norm",
    }
    assert wanted <= set(sl.linalg.__all__)

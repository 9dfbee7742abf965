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
    fetches = [sl.math.reduce_logsumexp(x), sl.math.divide_no_nan(x, sl.zeros_like(x)),
               sl.math.top_k(x, 1).values, sl.linalg.inv(x), sl.linalg.det(x),
               sl.linalg.cholesky(x), sl.linalg.trace(x), sl.linalg.matmul(x, x)]
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

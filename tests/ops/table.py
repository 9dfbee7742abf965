"""The checks every `sl.ops` family's table of cases runs (see tests/ops/test_*.py).

A case is `(id, function, args, kwargs, want)`: the function on the args (arrays, numbers,
lists) gives sl.Arrays close to `want` (NumPy's or JAX's values); on placeholders for the
array args it builds graph tensors whose run gives the same values; `gradient_cases` picks the
differentiable ones for central differences.
"""

import numpy as np

import sluice as sl
from sluice.testing import check_gradients


def flat(value):
    return list(value) if isinstance(value, (list, tuple)) else [value]


def check_values(fn, args, kwargs, want, rtol=1e-6, atol=1e-7):
    got = fn(*args, **kwargs)
    for g, w in zip(flat(got), flat(want), strict=True):
        assert isinstance(g, sl.Array), type(g)
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=rtol, atol=atol)


def _placeholders(args, fed):
    out = []
    for a in args:
        if isinstance(a, np.ndarray):
            out.append(sl.placeholder(sl.as_dtype(a.dtype), a.shape))
            fed[out[-1]] = a
        else:
            out.append(a)
    return out


INTERPRETED = sl.SessionConfig(engine="interpreted")  # many small ops, run once: no compile


def check_graph(cases, rtol=1e-6, atol=1e-7):
    """Every case with an array argument, built on placeholders in one graph, run once."""
    fed, symbolic, expected = {}, {}, {}
    with sl.Graph().as_default():
        for name, fn, args, kwargs, *_ in cases:
            if not any(isinstance(a, np.ndarray) for a in args):
                continue
            symbolic[name] = fn(*_placeholders(args, fed), **kwargs)
            assert all(isinstance(t, sl.Tensor) for t in flat(symbolic[name])), name
            expected[name] = fn(*args, **kwargs)
        with sl.Session(config=INTERPRETED) as sess:
            got = sess.run(symbolic, fed)
    for name, value in got.items():
        for g, e in zip(flat(value), flat(expected[name]), strict=True):
            assert g.shape == e.shape and g.dtype == e.dtype, (name, g.shape, e.shape)
            np.testing.assert_allclose(g, e, rtol=rtol, atol=atol, err_msg=name)


def check_case_gradients(fn, args, kwargs, wrt, **tolerances):
    """Central differences of fn with respect to the args at positions `wrt` (float64)."""

    def build(*xs):
        full = list(args)
        for i, x in zip(wrt, xs):
            full[i] = x
        outs = flat(fn(*full, **kwargs))  # one vector of every output, projected at random
        return sl.concat([sl.reshape(sl.cast(o, sl.float64), [-1]) for o in outs], 0)

    inputs = [np.asarray(args[i], np.float64) for i in wrt]
    check_gradients(build, inputs, **tolerances)

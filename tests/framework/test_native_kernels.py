"""sluice's native CPU kernel (`sluice.framework.native`) and the loop pass that calls it: the
panel matmul equals NumPy's on every shape class (tails of rows and panels, one row, one
column, empty), the pass gives the interpreted engine's numbers for the RNN cells, and
everything runs as before where the kernel is off."""

import os
import shutil
import subprocess
import sys

import jax
import numpy as np
import pytest

import sluice as sl
from sluice.framework import native
from sluice.framework.compiler.loop_passes import PACKED_MAX_ROWS

built = pytest.mark.skipif(
    not native.panel_matmul_built(), reason="the native kernel is not built on this machine"
)
used = pytest.mark.skipif(
    not native.panel_matmul_available(),
    reason="compiled steps do not use the native kernel here (not built, or not its AVX-512 tile)",
)


def test_kernel_is_built_where_a_compiler_is():
    # `pip install` builds it with the machine's compiler: a checkout installed that way (CI
    # says so with SLUICE_EXPECT_NATIVE=1) on a machine with one must have it
    if shutil.which("c++") is None and shutil.which("g++") is None:
        pytest.skip("no C++ compiler on this machine: XLA's lowering runs instead")
    if os.environ.get("SLUICE_EXPECT_NATIVE") != "1" and not native.panel_matmul_built():
        pytest.skip("not built in this checkout: `pip install -e .` builds it")
    assert native.panel_matmul_built()


@built
@pytest.mark.parametrize(
    "m, k, n",
    [(16, 288, 1024), (16, 1024, 288), (1, 1, 1), (3, 5, 7), (9, 33, 65), (17, 100, 31)]
    + [(8, 64, 32), (0, 4, 4), (4, 0, 4), (4, 4, 0)],
)
def test_panel_matmul_equals_numpy(m, k, n):
    rng = np.random.default_rng(m * 1000 + k + n)
    a = rng.standard_normal((m, k)).astype(np.float32)
    w = rng.standard_normal((k, n)).astype(np.float32)
    got = jax.jit(lambda a, w: native.panel_matmul(a, native.pack_panels(w), n))(a, w)
    expected = a.astype(np.float64) @ w.astype(np.float64)
    assert got.shape == (m, n) and got.dtype == np.float32
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5 * max(1.0, np.sqrt(k)))


def test_pack_panels_layout():
    w = np.arange(3 * 40, dtype=np.float32).reshape(3, 40)
    panels = np.asarray(native.pack_panels(w))
    assert panels.shape == (2, 3, native.PANEL)
    np.testing.assert_array_equal(panels[0], w[:, :32])
    np.testing.assert_array_equal(panels[1, :, :8], w[:, 32:])
    assert not panels[1, :, 8:].any()  # the last panel is zero padded


def lstm_loop(batch):
    g = sl.Graph()
    with g.as_default():
        x = sl.placeholder(sl.float32, [batch, 5, 3], name="x")
        outputs, _ = sl.nn.dynamic_rnn(sl.nn.rnn_cell.BasicLSTMCell(4), x, dtype=sl.float32)
        loss = sl.reduce_sum(sl.square(outputs))
        fetches = [loss] + sl.gradients(loss, sl.trainable_variables())
        init = sl.global_variables_initializer()
    feed = {x: np.random.default_rng(batch).normal(size=(batch, 5, 3)).astype(np.float32)}
    return g, init, fetches, feed


def run(g, init, fetches, feed, **config):
    metadata = sl.RunMetadata()
    with sl.Session(graph=g, config=sl.SessionConfig(**config)) as sess:
        sess.run(init)
        return sess.run(fetches, feed, run_metadata=metadata), metadata


@used
@pytest.mark.parametrize("batch", [2, PACKED_MAX_ROWS + 1])
def test_pass_on_a_batch_of_any_size_gives_the_interpreted_numbers(batch):
    # beyond PACKED_MAX_ROWS rows the replacement falls back to XLA's dot while tracing
    g, init, fetches, feed = lstm_loop(batch)
    compiled, md = run(g, init, fetches, feed, engine="compiled")
    interpreted, _ = run(g, init, fetches, feed, engine="interpreted")
    applied = [name for name, _ in md.graph_passes]
    assert applied.count("packed_recurrent_matmul") == 2  # forward [x, h] @ W, backward dz @ W^T
    for a, b in zip(compiled, interpreted):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@used
def test_pass_leaves_other_dtypes_to_xla():
    g = sl.Graph()
    with g.as_default():
        w = sl.constant(np.eye(3))  # float64

        def body(t, h):
            return t + 1, sl.tanh(sl.matmul(h, w))

        _, h = sl.while_loop(lambda t, h: t < 3, body, (0, sl.ones([2, 3], sl.float64)))
    with sl.Session(graph=g, config=sl.SessionConfig(engine="compiled")) as sess:
        metadata = sl.RunMetadata()
        value = sess.run(h, run_metadata=metadata)
    assert "packed_recurrent_matmul" not in [name for name, _ in metadata.graph_passes]
    expected = np.ones((2, 3))
    for _ in range(3):
        expected = np.tanh(expected)
    np.testing.assert_allclose(value, expected)


def test_off_by_the_environment_and_for_another_jaxlib():
    # a build for another jaxlib (its FFI headers) is never registered: XLA's dot runs instead
    code = (
        "import os; from sluice.framework import native; "
        "assert not native.panel_matmul_available(); "
        "os.environ['SLUICE_NATIVE_KERNELS'] = '1'; native.panel_matmul_available.cache_clear(); "
        "import jaxlib; jaxlib.__version__ = '0.0.0'; "
        "assert not native.panel_matmul_available() and not native.panel_matmul_built(); "
        "print('off')"
    )
    env = {"SLUICE_NATIVE_KERNELS": "0", "JAX_PLATFORMS": "cpu"}
    result = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0 and "off" in result.stdout, result.stderr

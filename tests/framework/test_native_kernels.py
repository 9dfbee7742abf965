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
from sluice import _host_memory
from sluice.framework import native
from sluice.framework.compiler.loop_passes import PACKED_MAX_ROWS

built = pytest.mark.skipif(
    not native.panel_matmul_built(), reason="the native kernel is not built on this machine"
)
used = pytest.mark.skipif(
    not native.panel_matmul_available(),
    reason="compiled steps do not use the native kernel here (not built, or the portable tile)",
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
    + [(8, 64, 32), (0, 4, 4), (4, 0, 4), (4, 4, 0)]
    # blocks of 6 rows (the AVX2 tile) and of 8 (AVX-512), whole and with tails, k past and
    # short of the 8 columns a packing step transposes at once; W1's forward and backward
    + [(6, 16, 16), (12, 17, 70), (13, 24, 33), (5, 8, 8), (7, 9, 48), (32, 160, 512)]
    + [(32, 512, 128)],
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


@built
@pytest.mark.parametrize("k, n", [(3, 40), (5, 32), (1, 1), (7, 65)])
def test_native_packing_equals_the_jnp_one(k, n):
    # the packer of loop_buffers.cc, plain and transposed, against the layout written in jnp
    w = np.random.default_rng(k * n).standard_normal((k, n)).astype(np.float32)
    count = -(-n // native.PANEL)
    padded = np.pad(w, ((0, 0), (0, count * native.PANEL - n)))
    expected = padded.reshape(k, count, native.PANEL).transpose(1, 0, 2)
    np.testing.assert_array_equal(jax.jit(native.pack_panels)(w), expected)
    pack_transposed = jax.jit(lambda t: native.pack_panels(t, transposed=True))
    transposed = pack_transposed(np.ascontiguousarray(w.T))
    np.testing.assert_array_equal(transposed, expected)


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
    # both loops run exactly 5 times and save rows: their buffers are taken unfilled
    assert applied.count("unwritten_loop_buffers") == 2
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


@built
def test_unfilled_buffers_carry_no_effect():
    # a jitted step with an effect is dispatched by JAX's Python path, not its C++ one: about
    # 0.6 ms more per call, 7% of a W1 step
    shapes = [jax.ShapeDtypeStruct((3, 2), np.float32), jax.ShapeDtypeStruct((4,), np.int32)]
    jaxpr = jax.make_jaxpr(lambda: native.unwritten_buffers(shapes))()
    assert not jaxpr.effects
    assert [v.aval.shape for v in jaxpr.jaxpr.outvars] == [(3, 2), (4,)]


@built
def test_loops_with_unfilled_buffers_give_the_numbers_of_zero_filled_ones():
    # the same step with and without the pass: the saved rows are all written before any read,
    # so what the unfilled memory held never shows (NaN-poisoned memory would)
    g, init, fetches, feed = lstm_loop(3)
    with_pass, md = run(g, init, fetches, feed, engine="compiled")
    others = tuple(p for p in sl.SessionConfig().graph_passes if p != "unwritten_loop_buffers")
    without, _ = run(g, init, fetches, feed, engine="compiled", graph_passes=others)
    assert "unwritten_loop_buffers" in [name for name, _ in md.graph_passes]
    for a, b in zip(with_pass, without):
        np.testing.assert_array_equal(a, b)


def test_host_allocator_keeps_large_blocks():
    # importing sluice tunes glibc's malloc so that a large block freed by one compiled step is
    # reused by the next, not unmapped and faulted in again (sluice/_host_memory.py). The child
    # loads that module alone (fast) and mallocs as XLA does (NumPy asks for huge pages itself).
    code = (
        "import ctypes, importlib.util, resource, sys; "
        "spec = importlib.util.spec_from_file_location('host_memory', sys.argv[1]); "
        "h = importlib.util.module_from_spec(spec); spec.loader.exec_module(h); h.tune(); "
        "libc = ctypes.CDLL(None); libc.malloc.restype = ctypes.c_void_p; "
        "libc.free.argtypes = [ctypes.c_void_p]; size = 64 << 20; "
        "a = libc.malloc(size); ctypes.memset(a, 1, size); libc.free(a); "
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt; "
        "b = libc.malloc(size); ctypes.memset(b, 1, size); "
        "print(h.tuned, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)"
    )
    outputs = {}
    for setting in ("", "system"):
        result = subprocess.run(
            [sys.executable, "-c", code, _host_memory.__file__],
            env={**os.environ, "SLUICE_HOST_MALLOC": setting},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 0, result.stderr
        outputs[setting] = result.stdout.split()
    if outputs[""][0] != "True":
        pytest.skip("not glibc: the allocator is left as it is")
    assert _host_memory.tuned or os.environ.get("SLUICE_HOST_MALLOC") == "system"  # this process
    assert int(outputs[""][1]) < 1000  # the 64 MB block came back from the heap, pages resident
    assert outputs["system"][0] == "False" and int(outputs["system"][1]) > 10000

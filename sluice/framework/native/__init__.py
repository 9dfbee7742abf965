"""sluice's own CPU kernels, called from compiled steps through `jax.ffi`.

`pip install` builds them from the C++ sources here with the machine's compiler (see setup.py).
Where that was not possible (no compiler, a failed build), the build belongs to another jaxlib
than the one running, or it was compiled for instructions this CPU lacks,
`panel_matmul_available()` is False and the compiled engine keeps XLA's own lowering: nothing
else depends on them, and no GPU or TPU step ever calls them.

- `sluice_panel_matmul`: `A[M, K] @ B[K, N]` for a small M, with B packed once into column
  panels by `pack_panels` (loop_passes.packed_recurrent_matmul uses it for the recurrent
  matmuls of RNN loops; see docs/lstm_performance.md).
"""

from __future__ import annotations

import ctypes
import functools
import importlib.machinery
import os
import pathlib

import jax
import jax.numpy as jnp

PANEL = 32  # columns per panel; the kernel's register tile is two AVX-512 vectors wide
_TARGET = "sluice_panel_matmul"
_LIBRARY = "_panel_matmul"


def _library_path() -> pathlib.Path | None:
    here = pathlib.Path(__file__).parent
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = here / (_LIBRARY + suffix)
        if path.is_file():
            return path
    return None


@functools.cache
def _load() -> str | None:
    """Loads and registers the kernel; its register tile ("avx512", "avx2", "portable"), or None
    where it is not built, built for another jaxlib, or built for instructions this CPU lacks."""
    path = _library_path()
    if path is None:
        return None
    try:
        library = ctypes.cdll.LoadLibrary(str(path))
        library.SluiceBuiltForJaxlib.restype = ctypes.c_char_p
        library.SluiceKernelIsa.restype = ctypes.c_char_p
        import jaxlib

        if library.SluiceBuiltForJaxlib().decode() != jaxlib.__version__:
            return None  # the FFI headers it was built with may not match
        if not library.SluiceCpuSupported():  # built for another CPU (a copied environment)
            return None
        jax.ffi.register_ffi_target(
            _TARGET, jax.ffi.pycapsule(library.SluicePanelMatmul), platform="cpu"
        )
        return library.SluiceKernelIsa().decode()
    except (OSError, AttributeError, ValueError, TypeError):
        return None


def panel_matmul_built() -> bool:
    """Whether the kernel is built for this jaxlib and CPU and registered with XLA:CPU."""
    return _load() is not None


@functools.cache
def panel_matmul_available() -> bool:
    """Whether compiled steps use the kernel: where it is built with its AVX-512 tile, the one
    measured faster than XLA's dot (docs/lstm_performance.md). SLUICE_NATIVE_KERNELS=0 turns it
    off; =1 uses any build (the AVX2 or portable tile, to measure them)."""
    setting = os.environ.get("SLUICE_NATIVE_KERNELS", "")
    if setting == "0":
        return False
    isa = _load()
    return isa is not None and (isa == "avx512" or setting == "1")


def pack_panels(weight: jax.Array) -> jax.Array:
    """`weight[K, N]` as `[ceil(N / 32), K, 32]`: panel p holds columns 32p..32p+31, zero padded."""
    k, n = weight.shape
    count = -(-n // PANEL)
    padded = jnp.pad(weight, ((0, 0), (0, count * PANEL - n)))
    return jnp.transpose(jnp.reshape(padded, (k, count, PANEL)), (1, 0, 2))


def panel_matmul(a: jax.Array, panels: jax.Array, n: int) -> jax.Array:
    """`a[M, K] @ weight[K, n]` where `panels = pack_panels(weight)`; float32 on the CPU only."""
    out = jax.ShapeDtypeStruct((a.shape[0], n), jnp.float32)
    return jax.ffi.ffi_call(_TARGET, out)(a, panels)

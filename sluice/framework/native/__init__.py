"""sluice's own CPU kernels, called from compiled steps through `jax.ffi`.

`pip install` builds them from the C++ sources here with the machine's compiler (see setup.py).
Where that was not possible (no compiler, a failed build), the build belongs to another jaxlib
than the one running, or it was compiled for instructions this CPU lacks,
`panel_matmul_available()` is False and the compiled engine keeps XLA's own lowering: nothing
else depends on them, and no GPU or TPU step ever calls them.

- `sluice_panel_matmul`: `A[M, K] @ B[K, N]` for a small M, with B packed once into column
  panels by `pack_panels` (loop_passes.packed_recurrent_matmul uses it for the recurrent
  matmuls of RNN loops; see docs/lstm_performance.md).
- `sluice_pack_panels`: that packing, in one pass over the weight (loop_buffers.cc).
- `sluice_unwritten_buffers`: buffers left as XLA allocated them, for the rows a loop of a known
  trip count saves for its gradient, which it writes before any is read (`unwritten_buffers`;
  lowering.run_loop). A lax.scan zero-fills them first.
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
_PACK_TARGET = "sluice_pack_panels"
_BUFFERS_TARGET = "sluice_unwritten_buffers"
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
        for target, handler in (
            (_TARGET, library.SluicePanelMatmul),
            (_PACK_TARGET, library.SluicePackPanels),
            (_BUFFERS_TARGET, library.SluiceUnwrittenBuffers),
        ):
            jax.ffi.register_ffi_target(target, jax.ffi.pycapsule(handler), platform="cpu")
        return library.SluiceKernelIsa().decode()
    except (OSError, AttributeError, ValueError, TypeError):
        return None


def panel_matmul_built() -> bool:
    """Whether the kernel is built for this jaxlib and CPU and registered with XLA:CPU."""
    return _load() is not None


@functools.cache
def panel_matmul_available() -> bool:
    """Whether compiled steps use the kernel: where it is built with its AVX-512 or AVX2 tile,
    the ones measured faster than XLA's dot (docs/lstm_performance.md). SLUICE_NATIVE_KERNELS=0
    turns it off; =1 uses any build (the portable tile too, to measure it)."""
    setting = os.environ.get("SLUICE_NATIVE_KERNELS", "")
    if setting == "0":
        return False
    isa = _load()
    return isa is not None and (isa in ("avx512", "avx2") or setting == "1")


@functools.cache
def unwritten_buffers_available() -> bool:
    """Whether compiled steps may take a loop's saved-value buffers unfilled (any build of the
    library for this jaxlib and CPU; SLUICE_NATIVE_KERNELS=0 turns it off)."""
    return os.environ.get("SLUICE_NATIVE_KERNELS", "") != "0" and _load() is not None


def unwritten_buffers(shapes: list) -> list:
    """Arrays of `shapes` (`jax.ShapeDtypeStruct`s) whose contents are whatever their memory
    held: only for buffers whose every element is written before it is read. CPU only."""
    if not shapes:
        return []
    # no side effect declared: a step with an effect leaves JAX's C++ dispatch for its Python
    # one (0.6 ms more per W1 step). XLA may then merge two such calls of the same shapes; its
    # value semantics copy the buffer for the second loop, and any contents are valid here.
    return list(jax.ffi.ffi_call(_BUFFERS_TARGET, list(shapes))())


def pack_panels(weight: jax.Array, transposed: bool = False) -> jax.Array:
    """`weight[K, N]` (or `weight^T`, `transposed`) as `[ceil(N / 32), K, 32]`: panel p holds
    columns 32p..32p+31, zero padded. By the native packer where it is built (float32, CPU)."""
    if transposed:
        n, k = weight.shape
    else:
        k, n = weight.shape
    count = -(-n // PANEL)
    if _load() is not None and weight.dtype == jnp.float32 and jax.default_backend() == "cpu":
        out = jax.ShapeDtypeStruct((count, k, PANEL), jnp.float32)
        return jax.ffi.ffi_call(_PACK_TARGET, out)(weight, transposed=transposed)
    weight = jnp.swapaxes(weight, 0, 1) if transposed else weight
    padded = jnp.pad(weight, ((0, 0), (0, count * PANEL - n)))
    return jnp.transpose(jnp.reshape(padded, (k, count, PANEL)), (1, 0, 2))


def panel_matmul(a: jax.Array, panels: jax.Array, n: int) -> jax.Array:
    """`a[M, K] @ weight[K, n]` where `panels = pack_panels(weight)`; float32 on the CPU only."""
    out = jax.ShapeDtypeStruct((a.shape[0], n), jnp.float32)
    return jax.ffi.ffi_call(_TARGET, out)(a, panels)

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
- `sluice_lstm_cell`: one LSTM step, `A @ W + b` with the cell's gates applied in the same call
  to W packed gate-interleaved by `pack_gate_panels` (lstm_cell.cc;
  loop_passes.fused_lstm_cell uses it).
- `sluice_lstm_cell_rows`: the same step, with the results the gradient's stacks save written
  as rows of the loop's buffers of saved values, in place (aliased operands; `row_sink`).
- `sluice_lstm_cell_grad`: the backward step of those gates, from the forward loop's saved
  values read in place (lstm_cell_grad.cc; compiler/fused_cell_grads uses it).
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
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

PANEL = 32  # columns per panel; the kernel's register tile is two AVX-512 vectors wide
_TARGET = "sluice_panel_matmul"
_PACK_TARGET = "sluice_pack_panels"
_BUFFERS_TARGET = "sluice_unwritten_buffers"
_LSTM_TARGET = "sluice_lstm_cell"
_LSTM_GRAD_TARGET = "sluice_lstm_cell_grad"
_LSTM_ROWS_TARGET = "sluice_lstm_cell_rows"
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
            (_LSTM_TARGET, library.SluiceLstmCell),
            (_LSTM_GRAD_TARGET, library.SluiceLstmCellGrad),
            (_LSTM_ROWS_TARGET, library.SluiceLstmCellRows),
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


GATE_UNITS = PANEL // 4  # units of each of an LSTM's four slices in one panel


def pack_gate_panels(weight: jax.Array, bias: jax.Array) -> tuple[jax.Array, jax.Array]:
    """An LSTM's `weight[K, 4H]` and `bias[4H]` (four slices of H columns) as panels of 32
    columns that each hold 8 units of all four slices, `[ceil(H / 8), K, 32]`, and the bias in
    the same order, `[ceil(H / 8) * 32]`; zero past unit H."""
    k, n = weight.shape
    units = n // 4
    count = -(-units // GATE_UNITS)
    pad = count * GATE_UNITS - units
    w = jnp.pad(jnp.reshape(weight, (k, 4, units)), ((0, 0), (0, 0), (0, pad)))
    w = jnp.transpose(jnp.reshape(w, (k, 4, count, GATE_UNITS)), (2, 0, 1, 3))
    b = jnp.pad(jnp.reshape(bias, (4, units)), ((0, 0), (0, pad)))
    b = jnp.transpose(jnp.reshape(b, (4, count, GATE_UNITS)), (1, 0, 2))
    return jnp.reshape(w, (count, k, PANEL)), jnp.reshape(b, (count * PANEL,))


def lstm_cell(
    a: jax.Array,
    panels: jax.Array,
    bias: jax.Array,
    c_prev: jax.Array,
    slices: tuple[int, int, int, int],
    offsets: tuple[float, float, float, float],
    rows: tuple[Any, dict] | None = None,
) -> list:
    """One LSTM step on the CPU, float32: `z = a @ W + b` (W, b packed by `pack_gate_panels`)
    in four slices, of which `slices` names the input, forget, candidate and output gates;
    each slice plus its `offsets` entry goes through sigmoid (tanh for the candidate). Returns
    the four activations in z's order, then c = f * c_prev + i * g, tanh(c) and h = o * tanh(c).

    `rows = (index, {j: buffer})`: result j is written as row `index` of `buffer` [N, M, H]
    (a loop's buffer of saved values, updated in place) and returned as the updated buffer."""
    if _load() is None:
        raise RuntimeError("sluice_lstm_cell: sluice's native kernels are not built here")
    row = jax.ShapeDtypeStruct(c_prev.shape, jnp.float32)
    names = ("input_slice", "forget_slice", "candidate_slice", "output_slice")
    attrs = {name: np.int64(s) for name, s in zip(names, slices)}
    attrs.update({f"offset{s}": np.float32(offsets[s]) for s in range(4)})
    if not rows:
        return list(jax.ffi.ffi_call(_LSTM_TARGET, [row] * 7)(a, panels, bias, c_prev, **attrs))
    index, buffers = rows
    written = sorted(buffers)
    results = [
        jax.ShapeDtypeStruct(buffers[j].shape, jnp.float32) if j in buffers else row
        for j in range(7)
    ]
    aliases = {5 + n: j for n, j in enumerate(written)}  # operand -> the result it becomes
    call = jax.ffi.ffi_call(_LSTM_ROWS_TARGET, results, input_output_aliases=aliases)
    index = jnp.asarray(index, jnp.int32)
    return list(call(a, panels, bias, c_prev, index, *(buffers[j] for j in written), **attrs))


def lstm_cell_grad(
    dh: jax.Array,
    dc_next: jax.Array,
    saved: list,
    row: jax.Array,
    slices: tuple[int, int, int, int],
) -> list:
    """The backward step of an LSTM cell's gates on the CPU, float32 (see lstm_cell_grad.cc):
    `saved` is the forward loop's buffers [N, M, H] of i, f, g, o, tanh(c) and c_prev, of which
    row `row` holds this step's; `slices` names the slices of z that are i, f, g and o. Returns
    dz [M, 4H] (in z's order), the gradient of c_prev [M, H] and the column sums of dz [4H]."""
    if _load() is None:
        raise RuntimeError("sluice_lstm_cell_grad: sluice's native kernels are not built here")
    m, h = dh.shape
    outs = [
        jax.ShapeDtypeStruct((m, 4 * h), jnp.float32),
        jax.ShapeDtypeStruct((m, h), jnp.float32),
        jax.ShapeDtypeStruct((4 * h,), jnp.float32),
    ]
    names = ("input_slice", "forget_slice", "candidate_slice", "output_slice")
    attrs = {name: np.int64(s) for name, s in zip(names, slices)}
    row = jnp.asarray(row, jnp.int32)
    return list(jax.ffi.ffi_call(_LSTM_GRAD_TARGET, outs)(dh, dc_next, *saved, row, **attrs))

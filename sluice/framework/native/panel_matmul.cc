// A matmul for the small-batch products inside recurrent loops: C[M, N] = A[M, K] @ B[K, N],
// where B was packed once before the loop into column panels of 32 (`panels[P, K, 32]`, zero
// padded past N). XLA:CPU hands such a product to a general matmul library that repacks B in
// every iteration; here the packing is paid once per step, each panel stays in the core's cache
// across iterations, and the panels are split between the calling thread and one thread of
// XLA's own intra-op pool.
//
// Registered with XLA as the FFI target "sluice_panel_matmul" (see native/__init__.py).

#include <Python.h>  // only for the module's init: the kernel itself is called by XLA

#include "panel_tile.h"

namespace ffi = xla::ffi;

namespace {

using sluice_native::ForPanels;
using sluice_native::kPanel;
using sluice_native::kRows;
using sluice_native::PackRows;
using sluice_native::Tile;

// Panels [first, last) of the product, all rows; `a` packed by PackRows.
void Panels(const float* a, int64_t m, int64_t k, const float* panels, float* c, int64_t n,
            int64_t first, int64_t last) {
  for (int64_t p = first; p < last; ++p) {
    const float* panel = panels + p * k * kPanel;
    const int64_t col = p * kPanel;
    const int64_t cols = std::min(kPanel, n - col);
    for (int64_t row = 0; row < m; row += kRows) {
      Tile(a + row * k, panel, k, c + row * n + col, n, std::min(kRows, m - row), cols);
    }
  }
}

ffi::Error PanelMatmul(ffi::ThreadPool pool, ffi::Buffer<ffi::F32> a, ffi::Buffer<ffi::F32> panels,
                       ffi::ResultBuffer<ffi::F32> c) {
  const auto a_dims = a.dimensions();
  const auto p_dims = panels.dimensions();
  const auto c_dims = c->dimensions();
  if (a_dims.size() != 2 || p_dims.size() != 3 || c_dims.size() != 2 || p_dims[2] != kPanel ||
      p_dims[1] != a_dims[1] || c_dims[0] != a_dims[0] || c_dims[1] > p_dims[0] * kPanel ||
      c_dims[1] <= (p_dims[0] - 1) * kPanel) {
    return ffi::Error::InvalidArgument("sluice_panel_matmul: operand shapes do not agree");
  }
  const int64_t m = a_dims[0], k = a_dims[1], n = c_dims[1], count = p_dims[0];
  const float* p_data = panels.typed_data();
  float* c_data = c->typed_data();
  if (m == 0 || n == 0) return ffi::Error::Success();
  if (k == 0) {
    std::memset(c_data, 0, m * n * sizeof(float));
    return ffi::Error::Success();
  }
  // reused by this thread's later calls; a pool thread reads it only while this call waits
  thread_local std::vector<float> packed_rows;
  packed_rows.resize((m + kRows - 1) / kRows * kRows * k + 8);  // + TransposeBlockx8's slack
  PackRows(a.typed_data(), m, k, packed_rows.data());
  const float* a_data = packed_rows.data();
  ForPanels(pool, count, m * k * n, [=](int64_t first, int64_t last) {
    Panels(a_data, m, k, p_data, c_data, n, first, last);
  });
  return ffi::Error::Success();
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(SluicePanelMatmul, PanelMatmul,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::ThreadPool>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>());

// The jaxlib whose FFI headers this library was compiled with (setup.py defines it); the loader
// registers the kernel only with that jaxlib.
#ifndef SLUICE_JAXLIB_VERSION
#define SLUICE_JAXLIB_VERSION "unknown"
#endif
extern "C" __attribute__((visibility("default"))) const char* SluiceBuiltForJaxlib() {
  return SLUICE_JAXLIB_VERSION;
}

// Whether this CPU runs the instructions the library was compiled for (-march=native on the
// installing machine): a virtualenv copied to an older CPU must fall back, not crash.
extern "C" __attribute__((visibility("default"))) int SluiceCpuSupported() {
#if defined(__x86_64__)
  __builtin_cpu_init();
#if defined(__AVX512F__)
  if (!__builtin_cpu_supports("avx512f")) return 0;
#endif
#if defined(__AVX2__)
  if (!__builtin_cpu_supports("avx2")) return 0;
#endif
#if defined(__FMA__)
  if (!__builtin_cpu_supports("fma")) return 0;
#endif
#endif
  return 1;
}

// Which register tile this build runs: the loader uses the kernel by default only where it was
// measured faster than XLA's dot (the AVX-512 tile; see native/__init__.py).
extern "C" __attribute__((visibility("default"))) const char* SluiceKernelIsa() {
#if defined(__AVX512F__)
  return "avx512";
#elif defined(__AVX2__) && defined(__FMA__)
  return "avx2";
#else
  return "portable";
#endif
}

// An importable (empty) Python module, so that the package's modules can all be imported; the
// loader reads the two symbols above through ctypes.
static PyModuleDef panel_matmul_module = {
    PyModuleDef_HEAD_INIT, "_panel_matmul",
    "sluice's native panel matmul, an XLA FFI handler (see sluice/framework/native)", -1, nullptr};

PyMODINIT_FUNC PyInit__panel_matmul() { return PyModule_Create(&panel_matmul_module); }

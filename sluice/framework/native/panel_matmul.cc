// A matmul for the small-batch products inside recurrent loops: C[M, N] = A[M, K] @ B[K, N],
// where B was packed once before the loop into column panels of 32 (`panels[P, K, 32]`, zero
// padded past N). XLA:CPU hands such a product to a general matmul library that repacks B in
// every iteration; here the packing is paid once per step, each panel stays in the core's cache
// across iterations, and the panels are split between the calling thread and one thread of
// XLA's own intra-op pool.
//
// Registered with XLA as the FFI target "sluice_panel_matmul" (see native/__init__.py).

#include <Python.h>  // only for the module's init: the kernel itself is called by XLA

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

constexpr int64_t kPanel = 32;  // columns per panel: two AVX-512 vectors of float
// rows of C per register tile: AVX-512's 32 registers hold 8 rows of two vectors, AVX2's 16
// hold 6 rows of two (see Tile)
#if !defined(__AVX512F__) && defined(__AVX2__) && defined(__FMA__)
constexpr int64_t kRows = 6;
#else
constexpr int64_t kRows = 8;
#endif

#if defined(__AVX512F__)
// C[0:rows, 0:cols] = A[kRows, K] @ panel[K, 32], A packed k-major (`a[k * kRows + r]`, rows past
// `rows` zero), rows <= kRows, cols <= 32. 2 * kRows accumulators stay in registers throughout.
inline void Tile(const float* a, const float* panel, int64_t k_size, float* c, int64_t ldc,
                 int64_t rows, int64_t cols) {
  constexpr int kTileRows = kRows;
  __m512 lo[kTileRows], hi[kTileRows];
  for (int r = 0; r < kTileRows; ++r) {
    lo[r] = _mm512_setzero_ps();
    hi[r] = _mm512_setzero_ps();
  }
  for (int64_t k = 0; k < k_size; ++k) {
    const __m512 w_lo = _mm512_loadu_ps(panel + k * kPanel);
    const __m512 w_hi = _mm512_loadu_ps(panel + k * kPanel + 16);
    for (int r = 0; r < kTileRows; ++r) {
      const __m512 x = _mm512_set1_ps(a[k * kRows + r]);
      lo[r] = _mm512_fmadd_ps(x, w_lo, lo[r]);
      hi[r] = _mm512_fmadd_ps(x, w_hi, hi[r]);
    }
  }
  const __mmask16 mask_lo = cols >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << cols) - 1);
  const __mmask16 mask_hi =
      cols >= 32 ? 0xFFFF : (cols <= 16 ? 0 : static_cast<__mmask16>((1u << (cols - 16)) - 1));
  for (int r = 0; r < rows; ++r) {
    _mm512_mask_storeu_ps(c + r * ldc, mask_lo, lo[r]);
    _mm512_mask_storeu_ps(c + r * ldc + 16, mask_hi, hi[r]);
  }
}
#elif defined(__AVX2__) && defined(__FMA__)
// AVX2 (16 vector registers): the 6x32 tile in two passes of 16 columns, each with 6 x 2
// accumulators, two weight vectors and one broadcast in registers (15 of 16). Twelve
// independent FMA chains cover the FMA units' latency (4-5 cycles, two units), where the
// earlier 4x16 passes' eight did not. `Rows` is the tile's rows, so a tail block computes no
// zero rows.
template <int Rows>
inline void TileRows(const float* a, const float* panel, int64_t k_size, float* c, int64_t ldc,
                     int64_t cols) {
  for (int64_t half = 0; half < kPanel; half += 16) {
    if (half >= cols) break;
    const int64_t width = std::min<int64_t>(16, cols - half);
    __m256 lo[Rows], hi[Rows];
    for (int r = 0; r < Rows; ++r) {
      lo[r] = _mm256_setzero_ps();
      hi[r] = _mm256_setzero_ps();
    }
    const float* w = panel + half;
    for (int64_t k = 0; k < k_size; ++k) {
      const __m256 w_lo = _mm256_loadu_ps(w + k * kPanel);
      const __m256 w_hi = _mm256_loadu_ps(w + k * kPanel + 8);
      for (int r = 0; r < Rows; ++r) {
        const __m256 x = _mm256_broadcast_ss(a + k * kRows + r);
        lo[r] = _mm256_fmadd_ps(x, w_lo, lo[r]);
        hi[r] = _mm256_fmadd_ps(x, w_hi, hi[r]);
      }
    }
    for (int r = 0; r < Rows; ++r) {
      float* out = c + r * ldc + half;
      if (width == 16) {
        _mm256_storeu_ps(out, lo[r]);
        _mm256_storeu_ps(out + 8, hi[r]);
      } else {
        float row[16];
        _mm256_storeu_ps(row, lo[r]);
        _mm256_storeu_ps(row + 8, hi[r]);
        std::memcpy(out, row, width * sizeof(float));
      }
    }
  }
}

inline void Tile(const float* a, const float* panel, int64_t k_size, float* c, int64_t ldc,
                 int64_t rows, int64_t cols) {
  static_assert(kRows == 6, "the AVX2 tile has six rows");
  switch (rows) {
    case 6: return TileRows<6>(a, panel, k_size, c, ldc, cols);
    case 5: return TileRows<5>(a, panel, k_size, c, ldc, cols);
    case 4: return TileRows<4>(a, panel, k_size, c, ldc, cols);
    case 3: return TileRows<3>(a, panel, k_size, c, ldc, cols);
    case 2: return TileRows<2>(a, panel, k_size, c, ldc, cols);
    default: return TileRows<1>(a, panel, k_size, c, ldc, cols);
  }
}
#else
// Portable version: the compiler vectorises the 32-wide inner loop for the machine it builds on.
inline void Tile(const float* a, const float* panel, int64_t k_size, float* c, int64_t ldc,
                 int64_t rows, int64_t cols) {
  float acc[kRows][kPanel] = {};
  for (int64_t k = 0; k < k_size; ++k) {
    const float* w = panel + k * kPanel;
    for (int r = 0; r < kRows; ++r) {
      const float x = a[k * kRows + r];
      for (int64_t j = 0; j < kPanel; ++j) acc[r][j] += x * w[j];
    }
  }
  for (int r = 0; r < rows; ++r) std::memcpy(c + r * ldc, acc[r], cols * sizeof(float));
}
#endif

// A[M, K] as blocks of kRows rows, each k-major, so that a tile's broadcasts read consecutive
// floats (rows of A a page apart would share L1 sets); rows past M are zero.
#if defined(__AVX2__)
// dst[c * kRows + r] = src[r * lda + c] for kRows (8 or 6) rows of 8 columns: the standard 8x8
// unpack/shuffle/permute transpose, with zero rows past kRows. Each column is stored as 8 floats
// in increasing order, so with 6 rows a store's last two floats land where the next column (or,
// after the last, the caller's 2 floats of slack) is written later.
inline void TransposeBlockx8(const float* src, int64_t lda, float* dst) {
  static_assert(kRows == 8 || kRows == 6, "blocks of 8 or 6 rows");
  const __m256 zero = _mm256_setzero_ps();
  __m256 r0 = _mm256_loadu_ps(src + 0 * lda), r1 = _mm256_loadu_ps(src + 1 * lda);
  __m256 r2 = _mm256_loadu_ps(src + 2 * lda), r3 = _mm256_loadu_ps(src + 3 * lda);
  __m256 r4 = _mm256_loadu_ps(src + 4 * lda), r5 = _mm256_loadu_ps(src + 5 * lda);
  __m256 r6 = kRows == 8 ? _mm256_loadu_ps(src + 6 * lda) : zero;
  __m256 r7 = kRows == 8 ? _mm256_loadu_ps(src + 7 * lda) : zero;
  const __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
  const __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
  const __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
  const __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
  const __m256 u0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 u1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 u2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 u3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 u4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 u5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 u6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 u7 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2));
  _mm256_storeu_ps(dst + 0 * kRows, _mm256_permute2f128_ps(u0, u4, 0x20));
  _mm256_storeu_ps(dst + 1 * kRows, _mm256_permute2f128_ps(u1, u5, 0x20));
  _mm256_storeu_ps(dst + 2 * kRows, _mm256_permute2f128_ps(u2, u6, 0x20));
  _mm256_storeu_ps(dst + 3 * kRows, _mm256_permute2f128_ps(u3, u7, 0x20));
  _mm256_storeu_ps(dst + 4 * kRows, _mm256_permute2f128_ps(u0, u4, 0x31));
  _mm256_storeu_ps(dst + 5 * kRows, _mm256_permute2f128_ps(u1, u5, 0x31));
  _mm256_storeu_ps(dst + 6 * kRows, _mm256_permute2f128_ps(u2, u6, 0x31));
  _mm256_storeu_ps(dst + 7 * kRows, _mm256_permute2f128_ps(u3, u7, 0x31));
}
#endif

void PackRows(const float* a, int64_t m, int64_t k, float* packed) {
  for (int64_t row = 0; row < m; row += kRows) {
    float* block = packed + row * k;
    const int64_t rows = std::min(kRows, m - row);
    int64_t done = 0;  // columns packed by whole blocks of 8
#if defined(__AVX2__)
    if (rows == kRows) {
      for (; done + 8 <= k; done += 8) {
        TransposeBlockx8(a + row * k + done, k, block + done * kRows);
      }
    }
#endif
    for (int64_t r = 0; r < rows; ++r) {
      const float* src = a + (row + r) * k;
      for (int64_t j = done; j < k; ++j) block[j * kRows + r] = src[j];
    }
    for (int64_t r = rows; r < kRows; ++r) {
      for (int64_t j = done; j < k; ++j) block[j * kRows + r] = 0.0f;
    }
  }
}

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

// Below this many multiply-adds one thread is faster than handing part to another.
constexpr int64_t kSplitWork = 1 << 19;

// One product split into chunks of panels that the calling thread and a pool thread claim in
// turn. Shared ownership: the pool thread may start only after the caller has finished (then it
// finds nothing left to claim), so nothing here may live on the caller's stack.
struct SplitProduct {
  const float* a;
  const float* panels;
  float* c;
  int64_t m, k, n, count, chunk, chunks;
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> finished{0};

  void Run() {
    for (int64_t i = next.fetch_add(1); i < chunks; i = next.fetch_add(1)) {
      Panels(a, m, k, panels, c, n, i * chunk, std::min(count, (i + 1) * chunk));
      finished.fetch_add(1, std::memory_order_release);
    }
  }
};

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
  if (count < 2 || pool.num_threads() < 1 || m * k * n < kSplitWork) {
    Panels(a_data, m, k, p_data, c_data, n, 0, count);
    return ffi::Error::Success();
  }
  auto work = std::make_shared<SplitProduct>();
  work->a = a_data;
  work->panels = p_data;
  work->c = c_data;
  work->m = m;
  work->k = k;
  work->n = n;
  work->count = count;
  work->chunks = std::min<int64_t>(count, 4);
  work->chunk = (count + work->chunks - 1) / work->chunks;
  work->chunks = (count + work->chunk - 1) / work->chunk;
  pool.Schedule([work] { work->Run(); });
  work->Run();
  // wait only for chunks the pool thread has claimed and is computing
  while (work->finished.load(std::memory_order_acquire) < work->chunks) {
#if defined(__x86_64__)
    _mm_pause();
#endif
  }
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

// The register tiles and row packing of sluice's panel matmuls, shared by the kernels that run
// them (panel_matmul.cc: the product alone; lstm_cell.cc: an LSTM step's gates fused into it),
// and the split of a product's panels between the calling thread and one of XLA's pool threads.

#ifndef SLUICE_NATIVE_PANEL_TILE_H_
#define SLUICE_NATIVE_PANEL_TILE_H_

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "xla/ffi/api/ffi.h"

namespace sluice_native {

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

inline void PackRows(const float* a, int64_t m, int64_t k, float* packed) {
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

// Below this many multiply-adds one thread is faster than handing part to another.
constexpr int64_t kSplitWork = 1 << 19;

// Panels [0, count) in chunks that the calling thread and a pool thread claim in turn, each
// chunk run as `run(first, last)`. Shared ownership: the pool thread may start only after the
// caller has finished (then it finds nothing left to claim), so nothing here may live on the
// caller's stack.
struct SplitPanels {
  std::function<void(int64_t, int64_t)> run;
  int64_t count, chunk, chunks;
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> finished{0};

  void Run() {
    for (int64_t i = next.fetch_add(1); i < chunks; i = next.fetch_add(1)) {
      run(i * chunk, std::min(count, (i + 1) * chunk));
      finished.fetch_add(1, std::memory_order_release);
    }
  }
};

// Runs `run` over panels [0, count): on this thread alone for a small product (`work`
// multiply-adds) or where XLA gave no pool; else in up to 4 chunks shared with a pool thread.
inline void ForPanels(xla::ffi::ThreadPool& pool, int64_t count, int64_t work,
                      std::function<void(int64_t, int64_t)> run) {
  if (count < 2 || pool.num_threads() < 1 || work < kSplitWork) {
    run(0, count);
    return;
  }
  auto split = std::make_shared<SplitPanels>();
  split->run = std::move(run);
  split->count = count;
  split->chunks = std::min<int64_t>(count, 4);
  split->chunk = (count + split->chunks - 1) / split->chunks;
  split->chunks = (count + split->chunk - 1) / split->chunk;
  pool.Schedule([split] { split->Run(); });
  split->Run();
  // wait only for chunks the pool thread has claimed and is computing
  while (split->finished.load(std::memory_order_acquire) < split->chunks) {
#if defined(__x86_64__)
    _mm_pause();
#endif
  }
}

}  // namespace sluice_native

#endif  // SLUICE_NATIVE_PANEL_TILE_H_

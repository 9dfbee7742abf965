// One step of an LSTM cell with its gates fused into the recurrent matmul (FFI target
// "sluice_lstm_cell", see native/__init__.py and compiler/loop_passes.fused_lstm_cell):
//
//   z = A[M, K] @ W[K, 4H] + b, split into four slices of H columns (in the graph's order);
//   act_s = sigmoid(z_s + offset_s), or tanh(z_s + offset_s) for the candidate slice;
//   c = f * c_prev + i * g,  tanh_c = tanh(c),  h = o * tanh_c.
//
// XLA runs the gate arithmetic after the matmul as about seven kernels on one thread, each
// reading and writing [M, H] arrays; here each panel's 32 columns hold 8 units of all four
// slices (W packed gate-interleaved once per step by the caller), so a thread computes whole
// units: the gates of a panel are applied while its product is still in L1, on both threads
// that share the product. The results are the values the graph's ops give (the four
// activations, c, tanh(c) and h) for the stack pushes and the next iteration.

#include <cmath>

#include "panel_tile.h"

namespace ffi = xla::ffi;

namespace {

using sluice_native::ForPanels;
using sluice_native::kPanel;
using sluice_native::kRows;
using sluice_native::PackRows;
using sluice_native::Tile;

constexpr int64_t kUnits = kPanel / 4;  // units of each slice in one panel

struct Gates {
  int64_t slice[4];  // the slice of z that is i, f, g, o
  float offset[4];   // added to each slice (in z's order) before its activation
};

#if defined(__AVX2__) && defined(__FMA__)
// exp(x) for 8 floats: Cephes' expf (x = n ln2 + r, a degree-5 polynomial in r), within 2 ulp of
// the correctly rounded result over the range where it neither overflows nor underflows.
inline __m256 Exp8(__m256 x) {
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.3365478515625f)),
                    _mm256_set1_ps(88.3762626647949f));
  __m256 n = _mm256_floor_ps(_mm256_fmadd_ps(x, _mm256_set1_ps(1.44269504088896341f),
                                             _mm256_set1_ps(0.5f)));
  x = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  x = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), x);
  __m256 y = _mm256_set1_ps(1.9875691500e-4f);
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.3981999507e-3f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(8.3334519073e-3f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(4.1665795894e-2f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.6666665459e-1f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(5.0000001201e-1f));
  y = _mm256_fmadd_ps(y, _mm256_mul_ps(x, x), _mm256_add_ps(x, _mm256_set1_ps(1.0f)));
  const __m256i bits = _mm256_slli_epi32(
      _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(y, _mm256_castsi256_ps(bits));
}

// 1 / (1 + exp(-x)), as XLA expands the logistic function.
inline __m256 Sigmoid8(__m256 x) {
  const __m256 one = _mm256_set1_ps(1.0f);
  return _mm256_div_ps(one, _mm256_add_ps(one, Exp8(_mm256_sub_ps(_mm256_setzero_ps(), x))));
}

// tanh(x) for 8 floats: Eigen's rational approximation (an odd degree-13 numerator over an
// even degree-6 denominator) within |x| < 7.9053, +-1 beyond, x itself below |x| = 0.0004:
// within 2.5e-7 of tanh, as XLA's own tanh.
inline __m256 Tanh8(__m256 x) {
  const __m256 bound = _mm256_set1_ps(7.90531110763549805f);
  const __m256 low = _mm256_sub_ps(_mm256_setzero_ps(), bound);
  const __m256 clamped = _mm256_min_ps(_mm256_max_ps(x, low), bound);
  const __m256 x2 = _mm256_mul_ps(clamped, clamped);
  __m256 p = _mm256_set1_ps(-2.76076847742355e-16f);
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(2.00018790482477e-13f));
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(-8.60467152213735e-11f));
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(5.12229709037114e-08f));
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(1.48572235717979e-05f));
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(6.37261928875436e-04f));
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(4.89352455891786e-03f));
  p = _mm256_mul_ps(p, clamped);
  __m256 q = _mm256_set1_ps(1.19825839466702e-06f);
  q = _mm256_fmadd_ps(q, x2, _mm256_set1_ps(1.18534705686654e-04f));
  q = _mm256_fmadd_ps(q, x2, _mm256_set1_ps(2.26843463243900e-03f));
  q = _mm256_fmadd_ps(q, x2, _mm256_set1_ps(4.89352518554385e-03f));
  const __m256 ax = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x);
  const __m256 tiny = _mm256_cmp_ps(ax, _mm256_set1_ps(0.0004f), _CMP_LT_OQ);
  const __m256 saturated = _mm256_cmp_ps(ax, bound, _CMP_GE_OQ);  // +-1, as XLA's
  const __m256 one = _mm256_or_ps(_mm256_set1_ps(1.0f), _mm256_and_ps(_mm256_set1_ps(-0.0f), x));
  return _mm256_blendv_ps(_mm256_blendv_ps(_mm256_div_ps(p, q), x, tiny), one, saturated);
}

// The gates of rows [0, rows) of one panel: `z` holds its product (row stride kPanel), `bias`
// its 32 bias values; units u0 .. u0 + width - 1 of the [M, H] results are written.
inline void PanelGates(const float* z, const float* bias, const Gates& gates, const float* c_prev,
                       int64_t rows, int64_t h_size, int64_t u0, int64_t width, float* act[4],
                       float* c, float* tanh_c, float* h) {
  __m256 b[4], offset[4];
  for (int s = 0; s < 4; ++s) {
    b[s] = _mm256_loadu_ps(bias + s * kUnits);
    offset[s] = _mm256_set1_ps(gates.offset[s]);
  }
  const int64_t gi = gates.slice[0], gf = gates.slice[1], gg = gates.slice[2], go = gates.slice[3];
  // a panel past unit H (the last, when 8 does not divide H) goes through a copy of `width`
  // floats: masked moves are slow on some CPUs (microcoded stores on AMD's)
  const bool whole = width == kUnits;
  alignas(32) float part[8][kUnits] = {};
  for (int64_t r = 0; r < rows; ++r) {
    __m256 a[4];
    for (int s = 0; s < 4; ++s) {
      const __m256 pre = _mm256_add_ps(_mm256_loadu_ps(z + r * kPanel + s * kUnits), b[s]);
      const __m256 x = _mm256_add_ps(pre, offset[s]);
      a[s] = s == gg ? Tanh8(x) : Sigmoid8(x);
    }
    const int64_t at = r * h_size + u0;
    if (!whole) std::memcpy(part[7], c_prev + at, width * sizeof(float));
    const __m256 prev = _mm256_loadu_ps(whole ? c_prev + at : part[7]);
    const __m256 cell = _mm256_add_ps(_mm256_mul_ps(prev, a[gf]), _mm256_mul_ps(a[gi], a[gg]));
    const __m256 squashed = Tanh8(cell);
    float* outs[7] = {act[0], act[1], act[2], act[3], c, tanh_c, h};
    const __m256 values[7] = {a[0], a[1], a[2], a[3],
                              cell, squashed, _mm256_mul_ps(squashed, a[go])};
    for (int j = 0; j < 7; ++j) {
      if (whole) {
        _mm256_storeu_ps(outs[j] + at, values[j]);
      } else {
        _mm256_store_ps(part[j], values[j]);
        std::memcpy(outs[j] + at, part[j], width * sizeof(float));
      }
    }
  }
}
#else
// Portable version: the same arithmetic one float at a time, with the C library's exp and tanh.
inline void PanelGates(const float* z, const float* bias, const Gates& gates, const float* c_prev,
                       int64_t rows, int64_t h_size, int64_t u0, int64_t width, float* act[4],
                       float* c, float* tanh_c, float* h) {
  const int64_t gi = gates.slice[0], gf = gates.slice[1], gg = gates.slice[2], go = gates.slice[3];
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t u = 0; u < width; ++u) {
      float a[4];
      for (int s = 0; s < 4; ++s) {
        const float x = (z[r * kPanel + s * kUnits + u] + bias[s * kUnits + u]) + gates.offset[s];
        a[s] = s == gg ? std::tanh(x) : 1.0f / (1.0f + std::exp(-x));
      }
      const int64_t at = r * h_size + u0 + u;
      const float cell = c_prev[at] * a[gf] + a[gi] * a[gg];
      const float squashed = std::tanh(cell);
      for (int s = 0; s < 4; ++s) act[s][at] = a[s];
      c[at] = cell;
      tanh_c[at] = squashed;
      h[at] = squashed * a[go];
    }
  }
}
#endif

// The step into `outs` (the four activations in z's order, c, tanh(c), h; [M, H] each at the
// pointers given). The caller has checked the shapes.
void RunLstmCell(ffi::ThreadPool& pool, const float* a_in, int64_t m, int64_t k,
                 const float* p_data, int64_t count, const float* b_data, const float* prev,
                 int64_t h_size, const Gates& gates, float* const outs[7]) {
  if (m == 0 || h_size == 0) return;
  thread_local std::vector<float> packed_rows;
  packed_rows.resize((m + kRows - 1) / kRows * kRows * k + 8);  // + TransposeBlockx8's slack
  PackRows(a_in, m, k, packed_rows.data());
  const float* a_data = packed_rows.data();
  float* act[4] = {outs[0], outs[1], outs[2], outs[3]};
  float* c_data = outs[4];
  float* tanh_data = outs[5];
  float* h_data = outs[6];
  ForPanels(pool, count, m * k * count * kPanel, [=](int64_t first, int64_t last) {
    thread_local std::vector<float> z;  // one panel's product, all rows
    z.resize(m * kPanel);
    float* acts[4] = {act[0], act[1], act[2], act[3]};
    for (int64_t p = first; p < last; ++p) {
      const float* panel = p_data + p * k * kPanel;
      for (int64_t row = 0; row < m; row += kRows) {
        const int64_t rows = std::min(kRows, m - row);
        if (k == 0) {
          std::memset(z.data() + row * kPanel, 0, rows * kPanel * sizeof(float));
        } else {
          Tile(a_data + row * k, panel, k, z.data() + row * kPanel, kPanel, rows, kPanel);
        }
      }
      const int64_t u0 = p * kUnits;
      PanelGates(z.data(), b_data + p * kPanel, gates, prev, m, h_size, u0,
                 std::min(kUnits, h_size - u0), acts, c_data, tanh_data, h_data);
    }
  });
}

// The operands' shapes and the attributes, checked; the gates of `slices` and `offsets`.
ffi::Error CheckCell(const ffi::Buffer<ffi::F32>& a, const ffi::Buffer<ffi::F32>& panels,
                     const ffi::Buffer<ffi::F32>& bias, const ffi::Buffer<ffi::F32>& c_prev,
                     const Gates& gates) {
  const auto a_dims = a.dimensions();
  const auto p_dims = panels.dimensions();
  const auto c_dims = c_prev.dimensions();
  if (a_dims.size() != 2 || p_dims.size() != 3 || c_dims.size() != 2 || p_dims[2] != kPanel ||
      p_dims[1] != a_dims[1] || c_dims[0] != a_dims[0] ||
      bias.element_count() != p_dims[0] * kPanel || c_dims[1] > p_dims[0] * kUnits ||
      c_dims[1] <= (p_dims[0] - 1) * kUnits) {
    return ffi::Error::InvalidArgument("sluice_lstm_cell: operand shapes do not agree");
  }
  for (int64_t s : gates.slice) {
    if (s < 0 || s > 3) return ffi::Error::InvalidArgument("sluice_lstm_cell: a slice past 3");
  }
  return ffi::Error::Success();
}

ffi::Error LstmCell(ffi::ThreadPool pool, ffi::Buffer<ffi::F32> a, ffi::Buffer<ffi::F32> panels,
                    ffi::Buffer<ffi::F32> bias, ffi::Buffer<ffi::F32> c_prev,
                    ffi::ResultBuffer<ffi::F32> act0, ffi::ResultBuffer<ffi::F32> act1,
                    ffi::ResultBuffer<ffi::F32> act2, ffi::ResultBuffer<ffi::F32> act3,
                    ffi::ResultBuffer<ffi::F32> c, ffi::ResultBuffer<ffi::F32> tanh_c,
                    ffi::ResultBuffer<ffi::F32> h, int64_t input_slice, int64_t forget_slice,
                    int64_t candidate_slice, int64_t output_slice, float offset0, float offset1,
                    float offset2, float offset3) {
  Gates gates{{input_slice, forget_slice, candidate_slice, output_slice},
              {offset0, offset1, offset2, offset3}};
  if (ffi::Error error = CheckCell(a, panels, bias, c_prev, gates); error.failure()) {
    return error;
  }
  float* const outs[7] = {act0->typed_data(), act1->typed_data(), act2->typed_data(),
                          act3->typed_data(), c->typed_data(),    tanh_c->typed_data(),
                          h->typed_data()};
  RunLstmCell(pool, a.typed_data(), a.dimensions()[0], a.dimensions()[1], panels.typed_data(),
              panels.dimensions()[0], bias.typed_data(), c_prev.typed_data(),
              c_prev.dimensions()[1], gates, outs);
  return ffi::Error::Success();
}

// The same step, each of its seven results either an [M, H] array or, where the caller passed
// the forward loop's buffer [N, M, H] of the values a stack saves (aliased to the result), row
// `index` of it: the row is written where the backward loop pops it, with no copy between.
ffi::Error LstmCellRows(ffi::ThreadPool pool, ffi::Buffer<ffi::F32> a,
                        ffi::Buffer<ffi::F32> panels, ffi::Buffer<ffi::F32> bias,
                        ffi::Buffer<ffi::F32> c_prev, ffi::Buffer<ffi::S32> index,
                        ffi::RemainingArgs buffers, ffi::RemainingRets results,
                        int64_t input_slice, int64_t forget_slice, int64_t candidate_slice,
                        int64_t output_slice, float offset0, float offset1, float offset2,
                        float offset3) {
  Gates gates{{input_slice, forget_slice, candidate_slice, output_slice},
              {offset0, offset1, offset2, offset3}};
  if (ffi::Error error = CheckCell(a, panels, bias, c_prev, gates); error.failure()) {
    return error;
  }
  const int64_t m = c_prev.dimensions()[0], h_size = c_prev.dimensions()[1];
  if (results.size() != 7) {
    return ffi::Error::InvalidArgument("sluice_lstm_cell_rows: seven results expected");
  }
  float* outs[7];
  for (size_t j = 0; j < 7; ++j) {
    auto result = results.get<ffi::Buffer<ffi::F32>>(j);
    if (result.has_error()) return result.error();
    const auto dims = (*result)->dimensions();
    const bool row = dims.size() == 3;
    if (!(dims.size() == 2 || row) || dims[dims.size() - 2] != m ||
        dims[dims.size() - 1] != h_size || (row && dims[0] == 0)) {
      return ffi::Error::InvalidArgument(
          "sluice_lstm_cell_rows: a result is neither [M, H] nor a buffer [N > 0, M, H]");
    }
    // a dynamic update's clamp, as XLA's write of the row would apply it
    const int64_t at = row ? std::clamp<int64_t>(index.typed_data()[0], 0, dims[0] - 1) : 0;
    outs[j] = (*result)->typed_data() + at * m * h_size;
  }
  RunLstmCell(pool, a.typed_data(), m, a.dimensions()[1], panels.typed_data(),
              panels.dimensions()[0], bias.typed_data(), c_prev.typed_data(), h_size, gates,
              outs);
  return ffi::Error::Success();
}

// The gates' eight attributes, last in both handlers' bindings.
template <typename Binding>
auto WithGateAttrs(Binding&& binding) {
  return std::forward<Binding>(binding)
      .template Attr<int64_t>("input_slice")
      .template Attr<int64_t>("forget_slice")
      .template Attr<int64_t>("candidate_slice")
      .template Attr<int64_t>("output_slice")
      .template Attr<float>("offset0")
      .template Attr<float>("offset1")
      .template Attr<float>("offset2")
      .template Attr<float>("offset3");
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(SluiceLstmCell, LstmCell,
                              WithGateAttrs(ffi::Ffi::Bind()
                                  .Ctx<ffi::ThreadPool>()
                                  .Arg<ffi::Buffer<ffi::F32>>()  // a [M, K]
                                  .Arg<ffi::Buffer<ffi::F32>>()  // panels [P, K, 32]
                                  .Arg<ffi::Buffer<ffi::F32>>()  // bias [P * 32]
                                  .Arg<ffi::Buffer<ffi::F32>>()  // c_prev [M, H]
                                  .Ret<ffi::Buffer<ffi::F32>>()  // the four activations
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()  // c
                                  .Ret<ffi::Buffer<ffi::F32>>()  // tanh(c)
                                  .Ret<ffi::Buffer<ffi::F32>>()  // h
                                  ));

XLA_FFI_DEFINE_HANDLER_SYMBOL(SluiceLstmCellRows, LstmCellRows,
                              WithGateAttrs(ffi::Ffi::Bind()
                                  .Ctx<ffi::ThreadPool>()
                                  .Arg<ffi::Buffer<ffi::F32>>()  // a [M, K]
                                  .Arg<ffi::Buffer<ffi::F32>>()  // panels [P, K, 32]
                                  .Arg<ffi::Buffer<ffi::F32>>()  // bias [P * 32]
                                  .Arg<ffi::Buffer<ffi::F32>>()  // c_prev [M, H]
                                  .Arg<ffi::Buffer<ffi::S32>>()  // the row to write, []
                                  .RemainingArgs()               // the buffers results alias
                                  .RemainingRets()               // seven: [M, H] or [N, M, H]
                                  ));

// Buffers around a recurrent loop, as XLA FFI handlers (see native/__init__.py).
//
// - "sluice_unwritten_buffers": the buffers a loop of a known trip count writes one row per
//   iteration (the values saved for the gradient). XLA has no uninitialised array: a lax.scan
//   fills each such buffer with zeros first (one broadcast, then a copy per buffer), tens of MB
//   per step that every row overwrites anyway. This handler leaves its results as XLA allocated
//   them; the compiled engine calls it only for loops that write every row before any is read.
// - "sluice_pack_panels": a weight `W[K, N]` (or `W[N, K]` used transposed) in the column
//   panels of sluice_panel_matmul, `[ceil(N / 32), K, 32]` zero padded past N, in one pass over
//   the weight, where XLA runs a transpose and then a copy.

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

constexpr int64_t kPanel = 32;  // as panel_matmul.cc

ffi::Error UnwrittenBuffers(ffi::RemainingRets results) {
  (void)results;  // every row is written by the loop that carries these buffers
  return ffi::Error::Success();
}

ffi::Error PackPanels(ffi::Buffer<ffi::F32> weight, ffi::ResultBuffer<ffi::F32> panels,
                      bool transposed) {
  const auto w_dims = weight.dimensions();
  const auto p_dims = panels->dimensions();
  if (w_dims.size() != 2 || p_dims.size() != 3 || p_dims[2] != kPanel) {
    return ffi::Error::InvalidArgument("sluice_pack_panels: operand shapes do not agree");
  }
  // the product's K and N: W[K, N], or W[N, K] multiplied as W^T
  const int64_t k = transposed ? w_dims[1] : w_dims[0];
  const int64_t n = transposed ? w_dims[0] : w_dims[1];
  const int64_t count = p_dims[0];
  if (p_dims[1] != k || count != (n + kPanel - 1) / kPanel) {
    return ffi::Error::InvalidArgument("sluice_pack_panels: panels do not fit the weight");
  }
  const float* w = weight.typed_data();
  float* out = panels->typed_data();
  for (int64_t p = 0; p < count; ++p) {
    const int64_t first = p * kPanel, cols = std::min(kPanel, n - first);
    float* panel = out + p * k * kPanel;
    if (!transposed) {
      for (int64_t row = 0; row < k; ++row) {
        float* dst = panel + row * kPanel;
        std::memcpy(dst, w + row * n + first, cols * sizeof(float));
        std::fill(dst + cols, dst + kPanel, 0.0f);
      }
    } else {
      // panel[row, j] = W[first + j, row]: the panel is written in order while its 32 rows of
      // W are read side by side, each a sequential stream the prefetcher follows
      const float* src = w + first * k;
      for (int64_t row = 0; row < k; ++row) {
        float* dst = panel + row * kPanel;
        for (int64_t j = 0; j < cols; ++j) dst[j] = src[j * k + row];
        std::fill(dst + cols, dst + kPanel, 0.0f);
      }
    }
  }
  return ffi::Error::Success();
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(SluiceUnwrittenBuffers, UnwrittenBuffers,
                              ffi::Ffi::Bind().RemainingRets());

XLA_FFI_DEFINE_HANDLER_SYMBOL(SluicePackPanels, PackPanels,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Attr<bool>("transposed"));

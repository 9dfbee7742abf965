// The backward step of an LSTM cell's gates (FFI target "sluice_lstm_cell_grad", see
// native/__init__.py and compiler/fused_cell_grads.py). With the forward step's saved values
// i, f, g, o (the activations), tanh_c = tanh(c) and c_prev, and the gradients flowing in, dh
// (of h) and dc_next (of c, from the later steps):
//
//   dc = dc_next + dh * o * (1 - tanh_c^2)
//   dz_i = dc * g * i (1 - i),  dz_f = dc * c_prev * f (1 - f),  dz_g = dc * i * (1 - g^2),
//   dz_o = dh * tanh_c * o (1 - o),  dc_prev = dc * f,  db = the column sums of dz.
//
// Each product is formed in the order of the graph's gradient ops (a sigmoid's gradient is
// d * (y * (1 - y)), a tanh's d * (1 - y^2)), so the values are the ones XLA computes from
// those ops. XLA runs them as five kernels per iteration (each recomputing dc) and a concat
// and a reduction; here they are one pass over the rows. The saved values are read in place
// from the forward loop's buffers [N, M, H] at row `index`, not copied out of them first.

#include <algorithm>
#include <cstdint>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

// One row of units. The pointers never overlap (XLA's distinct buffers), which lets the compiler
// vectorize the loop without checking that at run time.
void RowGrad(int64_t h, const float* __restrict__ dh, const float* __restrict__ dc_next,
             const float* __restrict__ i, const float* __restrict__ f,
             const float* __restrict__ g, const float* __restrict__ o,
             const float* __restrict__ tanh_c, const float* __restrict__ c_prev,
             float* __restrict__ dz_i, float* __restrict__ dz_f, float* __restrict__ dz_g,
             float* __restrict__ dz_o, float* __restrict__ dc_prev) {
  for (int64_t u = 0; u < h; ++u) {
    const float dc = dc_next[u] + (dh[u] * o[u]) * (1.0f - tanh_c[u] * tanh_c[u]);
    dz_i[u] = (dc * g[u]) * (i[u] * (1.0f - i[u]));
    dz_f[u] = (c_prev[u] * dc) * (f[u] * (1.0f - f[u]));
    dz_g[u] = (i[u] * dc) * (1.0f - g[u] * g[u]);
    dz_o[u] = (tanh_c[u] * dh[u]) * (o[u] * (1.0f - o[u]));
    dc_prev[u] = dc * f[u];
  }
}

void AddRow(int64_t n, const float* __restrict__ row, float* __restrict__ sums) {
  for (int64_t c = 0; c < n; ++c) sums[c] += row[c];
}

ffi::Error LstmCellGrad(ffi::Buffer<ffi::F32> dh, ffi::Buffer<ffi::F32> dc_next,
                        ffi::Buffer<ffi::F32> saved_i, ffi::Buffer<ffi::F32> saved_f,
                        ffi::Buffer<ffi::F32> saved_g, ffi::Buffer<ffi::F32> saved_o,
                        ffi::Buffer<ffi::F32> saved_tanh_c, ffi::Buffer<ffi::F32> saved_c_prev,
                        ffi::Buffer<ffi::S32> index, ffi::ResultBuffer<ffi::F32> dz,
                        ffi::ResultBuffer<ffi::F32> dc_prev, ffi::ResultBuffer<ffi::F32> db,
                        int64_t input_slice, int64_t forget_slice, int64_t candidate_slice,
                        int64_t output_slice) {
  const auto dims = dh.dimensions();
  const auto next_dims = dc_next.dimensions();
  if (dims.size() != 2 || next_dims.size() != 2 || next_dims[0] != dims[0] ||
      next_dims[1] != dims[1]) {
    return ffi::Error::InvalidArgument("sluice_lstm_cell_grad: dh and dc_next differ in shape");
  }
  const int64_t m = dims[0], h = dims[1];
  const ffi::Buffer<ffi::F32>* saved[6] = {&saved_i, &saved_f,      &saved_g,
                                           &saved_o, &saved_tanh_c, &saved_c_prev};
  const int64_t rows = saved_i.dimensions().size() == 3 ? saved_i.dimensions()[0] : -1;
  for (const auto* buffer : saved) {
    const auto d = buffer->dimensions();
    if (d.size() != 3 || d[0] != rows || d[1] != m || d[2] != h || rows == 0) {
      return ffi::Error::InvalidArgument(
          "sluice_lstm_cell_grad: a saved buffer is not [N > 0, M, H] like the others");
    }
  }
  const int64_t slices[4] = {input_slice, forget_slice, candidate_slice, output_slice};
  for (int64_t s : slices) {
    if (s < 0 || s > 3) return ffi::Error::InvalidArgument("sluice_lstm_cell_grad: a slice past 3");
  }
  // a dynamic slice's clamp, as XLA's pop of the row would apply it
  const int64_t row = std::clamp<int64_t>(index.typed_data()[0], 0, rows - 1);
  const float* at[6];
  for (int s = 0; s < 6; ++s) at[s] = saved[s]->typed_data() + row * m * h;
  const float *i = at[0], *f = at[1], *g = at[2], *o = at[3], *tanh_c = at[4], *c_prev = at[5];
  const float* dh_data = dh.typed_data();
  const float* dc_in = dc_next.typed_data();
  float* dz_data = dz->typed_data();
  float* dc_out = dc_prev->typed_data();
  float* db_data = db->typed_data();
  std::fill(db_data, db_data + 4 * h, 0.0f);
  for (int64_t r = 0; r < m; ++r) {
    const int64_t e = r * h;
    float* dz_row = dz_data + r * 4 * h;
    RowGrad(h, dh_data + e, dc_in + e, i + e, f + e, g + e, o + e, tanh_c + e, c_prev + e,
            dz_row + slices[0] * h, dz_row + slices[1] * h, dz_row + slices[2] * h,
            dz_row + slices[3] * h, dc_out + e);
    AddRow(4 * h, dz_row, db_data);
  }
  return ffi::Error::Success();
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(SluiceLstmCellGrad, LstmCellGrad,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::F32>>()  // dh [M, H]
                                  .Arg<ffi::Buffer<ffi::F32>>()  // dc_next [M, H]
                                  .Arg<ffi::Buffer<ffi::F32>>()  // saved i [N, M, H]
                                  .Arg<ffi::Buffer<ffi::F32>>()  // saved f
                                  .Arg<ffi::Buffer<ffi::F32>>()  // saved g
                                  .Arg<ffi::Buffer<ffi::F32>>()  // saved o
                                  .Arg<ffi::Buffer<ffi::F32>>()  // saved tanh(c)
                                  .Arg<ffi::Buffer<ffi::F32>>()  // saved c_prev
                                  .Arg<ffi::Buffer<ffi::S32>>()  // the row to read, []
                                  .Ret<ffi::Buffer<ffi::F32>>()  // dz [M, 4H]
                                  .Ret<ffi::Buffer<ffi::F32>>()  // dc_prev [M, H]
                                  .Ret<ffi::Buffer<ffi::F32>>()  // db [4H]
                                  .Attr<int64_t>("input_slice")
                                  .Attr<int64_t>("forget_slice")
                                  .Attr<int64_t>("candidate_slice")
                                  .Attr<int64_t>("output_slice"));

// Device code shared by the step kernels of the CUDA TDT decoder (tdt_kernels.cu) and its persistent kernel
// (tdt_persistent_kernel.cu), so that both decide alike: NeMo's label-looping rules for one decision of one row
// (docs/engine.md, "Greedy TDT decoding"), the first-maximum argmax, the LSTM's sigmoid.
#pragma once

#include <cstdint>

#include "tdt_kernels.h"

namespace steno::asr::cuda_tdt {

// A row's decoding state between decisions.
struct TdtRowState {
  int t;        // the frame the next joint step looks at
  int len;      // valid frames
  int count;    // tokens emitted so far
  int sym;      // tokens emitted on frame last_ts
  int last_ts;  // frame of the last emitted token (-1 before the first)
  int steps;    // joint evaluations so far
};

// The CPU decoder's sigmoid and tanh are accurate to about 1e-7; expf and tanhf keep the GPU as close.
__device__ __forceinline__ float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

// (v, i) beats (bv, bi): a larger value, or an equal one at a smaller index, so that a reduction returns the
// first maximum as std::max_element does in the CPU decoder. i < 0 marks "no candidate".
__device__ __forceinline__ bool beats(float v, int i, float bv, int bi) {
  return bi < 0 || (i >= 0 && (v > bv || (v == bv && i < bi)));
}

// The warp's best (v, i) by `beats`, in lane 0.
__device__ __forceinline__ void warp_argmax(float& v, int& i) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    const float ov = __shfl_down_sync(0xffffffffu, v, offset);
    const int oi = __shfl_down_sync(0xffffffffu, i, offset);
    if (beats(ov, oi, v, i)) {
      v = ov;
      i = oi;
    }
  }
}

// Applies the decision "token k (blank = d.blank), duration index d_idx" to an active row: the token is recorded
// at out_row[count] (token, frame, duration) when count < out_cap (counted either way, so that the host sees an
// overflow and decodes again with more room), t advances, max_symbols forces progress on a stuck frame.
// Returns the emitted token, or -1 for a blank.
__device__ __forceinline__ int apply_tdt_decision(const TdtDims& d, int k, int d_idx, TdtRowState& st,
                                                  int32_t* out_row, int out_cap) {
  int dur = d.durations[d_idx];
  if (k == d.blank && dur == 0) dur = 1;  // a blank never stays on its frame
  const int t_label = st.t;
  int t = t_label + dur;
  st.steps += 1;
  int label = -1;
  if (k != d.blank) {
    if (out_row != nullptr && st.count < out_cap) {
      int32_t* o = out_row + static_cast<size_t>(st.count) * 3;
      o[0] = k;
      o[1] = t_label;
      o[2] = dur;
    }
    st.count += 1;
    st.sym = t_label == st.last_ts ? st.sym + 1 : 1;
    st.last_ts = t_label;
    // Force progress only when stuck: max_symbols tokens on one frame and the last one had duration 0.
    if (st.sym >= d.max_symbols && t_label == t) t += 1;
    label = k;
  }
  st.t = t;
  return label;
}

}  // namespace steno::asr::cuda_tdt

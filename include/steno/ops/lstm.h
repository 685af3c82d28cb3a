// LSTM in PyTorch's formulation (gate order i, f, g, o; two bias vectors), for the TDT prediction network.
#pragma once

#include "steno/core/tensor.h"
#include "steno/ops/context.h"

namespace steno::ops {

// One step for a batch: x [B, In], h, c [B, H], w_ih [4H, In], w_hh [4H, H], b_ih, b_hh [4H] or undefined.
//   z = x·w_ihᵀ + b_ih + h·w_hhᵀ + b_hh;  c' = σ(f)·c + σ(i)·tanh(g);  h' = σ(o)·tanh(c')
// h_out, c_out [B, H]; they may alias h and c.
void lstm_cell(Context& ctx, const Tensor& x, const Tensor& h, const Tensor& c, const Tensor& w_ih,
               const Tensor& w_hh, const Tensor& b_ih, const Tensor& b_hh, Tensor& h_out, Tensor& c_out);

// One step whose input projections are given: z [B, 4H] = x·w_ihᵀ + b_ih + b_hh, e.g. gathered from a table of
// every token's (a prediction network's first layer sees only embeddings, so that product is known in advance).
// Then as lstm_cell: z + h·w_hhᵀ, the gates, h_out and c_out [B, H] (which may alias h and c). CPU only: z is
// overwritten.
void lstm_cell_projected(Context& ctx, Tensor& z, const Tensor& h, const Tensor& c, const Tensor& w_hh, Tensor& h_out,
                         Tensor& c_out);

// A whole sequence through one layer: x [T, B, In], y [T, B, H]; h and c [B, H] hold the initial state on entry
// and the final state on return.
void lstm_layer(Context& ctx, const Tensor& x, const Tensor& w_ih, const Tensor& w_hh, const Tensor& b_ih,
                const Tensor& b_hh, Tensor& h, Tensor& c, Tensor& y);

}  // namespace steno::ops

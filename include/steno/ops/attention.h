// Relative-position multi-head self-attention (Transformer-XL style, NeMo's RelPositionMultiHeadAttention),
// after the q/k/v/pos projections and before linear_out; also NeMo's rel_pos_local_attn as a band (docs/engine.md).
#pragma once

#include <cstdint>
#include <vector>

#include "steno/core/tensor.h"
#include "steno/ops/context.h"

namespace steno::ops {

struct AttentionWindow {
  // Keys j are visible from query i when i - left <= j <= i + right; -1 means unlimited on that side.
  // {-1, -1} is full attention; {w, w} is NeMo's rel_pos_local_attn, computed as banded attention in O(T*w).
  int64_t left = -1;
  int64_t right = -1;
};

// q, k, v, out: [B, T, H*dk] (head h occupies columns [h*dk, (h+1)*dk)).
// pos: the projected relative positional embeddings [2R+1, H*dk], row r <-> relative position R - r (so row 0 is
//   +R, a key R frames in the past); R = (pos.dim(0) - 1) / 2 must cover every visible offset (R >= T-1 for full
//   attention, R >= max(left, right) for a window).
// pos_bias_u, pos_bias_v: [H, dk].
// lengths: B valid lengths. For each batch b and head h, with x_i = query i:
//   S[i,j] = ((q_i + u)·k_j + (q_i + v)·pos[row of offset i-j]) / sqrt(dk)
//   masked (i or j >= length, or j outside the window): S = -10000; P = softmax_j(S); masked P = 0;
//   out_i = sum_j P[i,j] v_j.
// Rows i >= length therefore come out as zeros, exactly as NeMo computes them.
void rel_pos_attention(Context& ctx, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& pos,
                       const Tensor& pos_bias_u, const Tensor& pos_bias_v, const std::vector<int64_t>& lengths,
                       AttentionWindow window, Tensor& out);

// Multi-head scaled dot-product self-attention with a key padding mask (NeMo's transformer MultiHeadAttention,
// after the query/key/value projections and before out_projection).
// q, k, v, out: [B, T, H*dk] (head h occupies columns [h*dk, (h+1)*dk)); `heads` = H; lengths: B valid lengths.
// For each batch b, head h and query i < length:
//   S[i,j] = q_i·k_j / sqrt(dk) over keys j < length; P = softmax_j(S); out_i = sum_j P[i,j] v_j.
// NeMo divides q and k each by dk^(1/4) and adds -10000 to padded keys' scores; both give the same probabilities
// up to fp32 rounding (e^-10000 is 0). Rows i >= length come out as zeros (NeMo leaves numbers there that depend
// on the batch's padding; no result reads them). out may alias q.
void self_attention(Context& ctx, const Tensor& q, const Tensor& k, const Tensor& v, int64_t heads,
                    const std::vector<int64_t>& lengths, Tensor& out);

}  // namespace steno::ops

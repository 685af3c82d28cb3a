// Elementwise glue between the encoder's big ops. Unless noted, y may alias an input.
#pragma once

#include <cstdint>
#include <vector>

#include "steno/core/tensor.h"
#include "steno/ops/context.h"

namespace steno::ops {

// y = a + alpha * b, same shapes (the Conformer's residuals: alpha 0.5 for the macaron feed-forwards).
void add(Context& ctx, const Tensor& a, const Tensor& b, float alpha, Tensor& y);
// x *= s (xscaling).
void scale(Context& ctx, Tensor& x, float s);
// Zeroes the padded time steps of a batch in place: x viewed as [B, outer, T, inner] where T = x.dim(time_axis)
// and outer/inner are the products of the dimensions between; entries with t >= lengths[b] become 0.
// lengths has B entries, each in [0, T].
void zero_padded_frames(Context& ctx, Tensor& x, int time_axis, const std::vector<int64_t>& lengths);

}  // namespace steno::ops

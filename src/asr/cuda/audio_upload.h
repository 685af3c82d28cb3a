// Host audio to the device for the CUDA front ends. Copying from pageable memory is the front end's largest cost
// at large batches (32 x 45 s is 92 MB: about 10 ms through CUDA's own staging, measured on an H200), so the
// clips are packed into pinned memory by several threads, each of which queues the DMA of its part as soon as it
// is packed. Not built without CUDA.
#pragma once

#include <span>
#include <vector>

#include "steno/ops/context.h"

namespace steno::asr {

// Packs `clips` back to back into `device_dst` (sum of their sizes floats on ctx's device), in ctx's stream order.
// Returns once the copies are done (the pinned staging memory goes back to its cache), so the clips may be freed.
void upload_clips(ops::Context& ctx, const std::vector<std::span<const float>>& clips, float* device_dst);

}  // namespace steno::asr

// Host audio to the device for the CUDA front ends. Copying from pageable memory is the front end's largest cost
// at large batches (32 x 45 s is 92 MB: about 10 ms through CUDA's own staging, measured on an H200), so the
// clips are packed into pinned memory by an OpenMP team while the calling thread queues the DMA of each part as
// soon as it is packed. Not built without CUDA.
#pragma once

#include <functional>
#include <span>
#include <vector>

#include "steno/ops/context.h"

namespace steno::asr {

// Packs `clips` back to back into `device_dst` (sum of their sizes floats on ctx's device), in ctx's stream order.
// Returns once the copies are done (the pinned staging memory goes back to its cache), so the clips may be freed.
void upload_clips(ops::Context& ctx, const std::vector<std::span<const float>>& clips, float* device_dst);

// The same, with the copies on a stream of their own, so that the front end's kernels for the first clips run
// while later clips are still on their way: the clips are cut into pieces at `cuts` (increasing clip indices, the
// last one clips.size()), and once every copy of piece k (clips cuts[k-1] .. cuts[k], from 0) is queued, ctx's
// stream is made to wait for them and `arrived(k)` is called on this thread to queue that piece's kernels on it.
// Returns once the copies are done.
void upload_clips_in_pieces(ops::Context& ctx, const std::vector<std::span<const float>>& clips, float* device_dst,
                            const std::vector<size_t>& cuts, const std::function<void(size_t piece)>& arrived);

}  // namespace steno::asr

// A developer's view of where the persistent TDT decoder's steps spend their time: the kernel's clock stamps
// (PersistentBuffers::trace) summarized per phase. Enabled by $STENO_TDT_TRACE=FILE (tdt_persistent.h); not a
// product feature, a measuring tool for the kernel's next change.
#pragma once

#include <cstdint>
#include <string>

namespace steno::asr::detail {

// `trace` holds `blocks` runs of `cap` entries as the kernel wrote them (entry 0: the stamp count, then
// cycles << 8 | tag). Per phase tag: how often it ran, its work (from the stamp before to its own) as the mean over
// blocks and as the slowest block's (the critical path), and the wait at the barrier after it (mean, and the
// shortest: the last block to arrive waits only for the barrier itself), in µs at `clock_mhz`.
std::string summarize_persistent_trace(const uint64_t* trace, int blocks, int cap, double clock_mhz);

}  // namespace steno::asr::detail

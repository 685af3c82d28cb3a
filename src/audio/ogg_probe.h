// Ogg page checks. Ogg declares no total length, but a complete stream ends with a page flagged end-of-stream (EOS);
// a cut-off recording or upload lacks it (libsndfile and libvorbisfile quietly decode the pages before the cut).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace steno::audio {

// The length of the intact Ogg page (capture pattern, version 0, complete, CRC valid) at `at`, or 0 if none.
size_t ogg_intact_page(std::span<const uint8_t> bytes, size_t at);

// Fields of the page header at `at` (the caller has checked that a page is there).
inline bool ogg_page_ends_stream(std::span<const uint8_t> b, size_t at) { return (b[at + 5] & 0x04) != 0; }
inline bool ogg_page_begins_stream(std::span<const uint8_t> b, size_t at) { return (b[at + 5] & 0x02) != 0; }
int64_t ogg_page_granule(std::span<const uint8_t> bytes, size_t at);  // -1: no packet ends on this page
uint32_t ogg_page_serial(std::span<const uint8_t> bytes, size_t at);

enum class OggEnd {
  kComplete,       // the last intact page carries the EOS flag (trailing bytes after it, e.g. a tag, are tolerated)
  kNoEndOfStream,  // the last intact page does not, and no page follows it
  kCutPage,        // the last intact page does not, and what follows it is the start of a page, cut off
};

struct OggTail {
  OggEnd end = OggEnd::kComplete;
  size_t intact_bytes = 0;  // where the last intact page ends
};

// Finds how the stream in `bytes` ends. Throws kDataLoss ("truncated or corrupt ...") when no intact page starts
// in the last two maximal page lengths: that is garbage, not a cut.
OggTail ogg_tail(std::span<const uint8_t> bytes, const char* container_name);

}  // namespace steno::audio

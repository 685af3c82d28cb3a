// Ogg page checks. Ogg declares no total length, but a complete stream ends with a page flagged end-of-stream (EOS);
// a cut-off upload lacks it (libsndfile and libvorbisfile would quietly decode the prefix).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace steno::audio {

// The length of the intact Ogg page (capture pattern, version 0, complete, CRC valid) at `at`, or 0 if none.
size_t ogg_intact_page(std::span<const uint8_t> bytes, size_t at);

// Throws kDataLoss ("truncated: ...") unless the last intact page (capture pattern, complete, CRC valid) near the
// end of `bytes` carries the EOS flag. Trailing bytes after that page (e.g. an appended tag) are tolerated.
void check_ogg_complete(std::span<const uint8_t> bytes, const char* container_name);

}  // namespace steno::audio

// A text file that may be gzip-compressed (token LMs, word lists of a model directory), read whole.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>

namespace steno::asr {

// The file's text, gunzipped when it is gzip (zlib reads plain files as they are). `what` names the file in
// messages ("token LM"): kNotFound when it cannot be opened, kDataLoss when it is corrupt, kOutOfRange past
// `max_bytes` of text (a bound on what an untrusted file may make us hold). `expansion`: the text's expected size
// over the file's when gzip, to reserve once.
std::string read_text_maybe_gzip(const std::filesystem::path& path, size_t max_bytes, const std::string& what,
                                 size_t expansion = 4);

}  // namespace steno::asr

// A multipart/form-data parser (RFC 7578 over RFC 2046) for untrusted request bodies.
//
// Kept free of Beast and of any I/O so that it can be unit-tested and fuzzed on its own. It parses a body that is
// already in memory (the server bounds the body size before it gets here) and returns views into that body, so a
// 25 MB audio upload is never copied. Every malformed input throws steno::Error(kInvalidArgument) with a message
// that says what is wrong; nothing here aborts or allocates from an unchecked length.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace steno::serve::http {

struct MultipartLimits {
  size_t max_parts = 64;                 // form fields + files
  size_t max_part_header_bytes = 8192;   // the header block of one part
  size_t max_boundary_length = 70;       // RFC 2046 §5.1.1
};

struct MultipartPart {
  std::string name;                     // Content-Disposition name="..."
  std::optional<std::string> filename;  // Content-Disposition filename="..." (present for file fields)
  std::string content_type;             // the part's Content-Type, "" when absent
  std::string_view data;                // the part's bytes: a view into the parsed body
};

// The boundary parameter of a `multipart/form-data; boundary=...` Content-Type (quoted or not). Throws
// kInvalidArgument when the media type is not multipart/form-data or the boundary is missing or invalid.
std::string multipart_boundary(std::string_view content_type, const MultipartLimits& limits = {});

// Parses `body` with the given boundary. The returned views point into `body`, which must outlive them.
std::vector<MultipartPart> parse_multipart(std::string_view body, std::string_view boundary,
                                           const MultipartLimits& limits = {});

// Both steps from a Content-Type header value.
inline std::vector<MultipartPart> parse_form_data(std::string_view body, std::string_view content_type,
                                                  const MultipartLimits& limits = {}) {
  return parse_multipart(body, multipart_boundary(content_type, limits), limits);
}

// Where the data of the first part named `name` starts in `prefix`, the first bytes of a multipart body (every part
// before it whole in the prefix): for looking at an upload before all of it has arrived. nullopt when the prefix does
// not reach that far or is malformed; never throws.
std::optional<size_t> find_part_data(std::string_view prefix, std::string_view boundary, std::string_view name,
                                     const MultipartLimits& limits = {}) noexcept;

// The first part named `name`, or nullptr.
const MultipartPart* find_part(const std::vector<MultipartPart>& parts, std::string_view name);

}  // namespace steno::serve::http

// multipart/form-data, RFC 2046 §5.1.1: body = [preamble CRLF] "--" boundary *LWSP CRLF part
// *(CRLF "--" boundary *LWSP CRLF part) CRLF "--" boundary "--" [epilogue]; part = headers CRLF data.
#include "serve/http/multipart.h"

#include <string.h>  // memmem: glibc's two-way search, linear in the worst case (an adversarial body cannot make
                     // the delimiter search quadratic, as a naive find could)

#include "header_value.h"
#include "steno/core/error.h"

namespace steno::serve::http {
namespace {

// Position of `needle` in `hay` at or after `from`, or npos.
size_t find_bytes(std::string_view hay, std::string_view needle, size_t from) {
  if (from > hay.size()) return std::string_view::npos;
  const void* p = memmem(hay.data() + from, hay.size() - from, needle.data(), needle.size());
  return p ? static_cast<size_t>(static_cast<const char*>(p) - hay.data()) : std::string_view::npos;
}

bool is_boundary_char(char c) {
  // bcharsnospace plus space (RFC 2046): DIGIT / ALPHA / "'" / "(" / ")" / "+" / "_" / "," / "-" / "." / "/" /
  // ":" / "=" / "?" / " "
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         std::string_view("'()+_,-./:=? ").find(c) != std::string_view::npos;
}

// Parses one part's header block into `part`. `headers` excludes the blank line that ends it.
void parse_part_headers(std::string_view headers, size_t index, MultipartPart& part) {
  bool have_disposition = false;
  while (!headers.empty()) {
    const size_t eol = headers.find("\r\n");
    const std::string_view line = headers.substr(0, eol);
    headers = eol == std::string_view::npos ? std::string_view() : headers.substr(eol + 2);
    if (line.empty()) continue;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0)
      fail(ErrorCode::kInvalidArgument, "multipart part {} has a malformed header line (no 'Name: value')",
           index + 1);
    const std::string name = to_lower(trim(line.substr(0, colon)));
    const std::string_view value = trim(line.substr(colon + 1));
    if (name == "content-disposition") {
      HeaderValue d = parse_header_value(value);
      if (d.value != "form-data")
        fail(ErrorCode::kInvalidArgument, "multipart part {} has Content-Disposition '{}', expected form-data",
             index + 1, d.value);
      const auto n = d.params.find("name");
      if (n == d.params.end())
        fail(ErrorCode::kInvalidArgument, "multipart part {} has no name in its Content-Disposition", index + 1);
      part.name = n->second;
      if (const auto f = d.params.find("filename"); f != d.params.end()) part.filename = f->second;
      have_disposition = true;
    } else if (name == "content-type") {
      part.content_type = std::string(value);
    }
  }
  if (!have_disposition)
    fail(ErrorCode::kInvalidArgument, "multipart part {} has no Content-Disposition header", index + 1);
}

}  // namespace

std::string multipart_boundary(std::string_view content_type, const MultipartLimits& limits) {
  const HeaderValue ct = parse_header_value(content_type);
  if (ct.value != "multipart/form-data")
    fail(ErrorCode::kInvalidArgument, "Content-Type is '{}'; expected multipart/form-data",
         ct.value.empty() ? "(none)" : ct.value);
  const auto b = ct.params.find("boundary");
  if (b == ct.params.end() || b->second.empty())
    fail(ErrorCode::kInvalidArgument, "Content-Type multipart/form-data has no boundary parameter");
  const std::string& boundary = b->second;
  if (boundary.size() > limits.max_boundary_length)
    fail(ErrorCode::kInvalidArgument, "multipart boundary is {} characters; at most {} are allowed",
         boundary.size(), limits.max_boundary_length);
  for (char c : boundary)
    if (!is_boundary_char(c))
      fail(ErrorCode::kInvalidArgument, "multipart boundary contains a character not allowed by RFC 2046");
  return boundary;
}

namespace {

// Where the first part starts: after the boundary at the very start, or after a preamble that ends in CRLF.
size_t first_boundary_end(std::string_view body, std::string_view boundary, std::string_view dash_boundary,
                          std::string_view delimiter) {
  if (body.substr(0, dash_boundary.size()) == dash_boundary) return dash_boundary.size();
  const size_t d = find_bytes(body, delimiter, 0);
  if (d == std::string_view::npos) {
    if (body.empty()) fail(ErrorCode::kInvalidArgument, "multipart body is empty");
    fail(ErrorCode::kInvalidArgument, "multipart body does not contain its boundary '{}'", boundary);
  }
  return d + delimiter.size();
}

// The part whose header block starts after the boundary ending at `pos`: its name and headers, and where its
// data starts; nullopt at the closing boundary ("--").
std::optional<size_t> read_part_head(std::string_view body, size_t pos, size_t index, std::string_view boundary,
                                     const MultipartLimits& limits, MultipartPart& part) {
  // After a boundary: "--" closes the body; otherwise optional padding, then CRLF, then a part.
  if (body.substr(pos, 2) == "--") return std::nullopt;
  while (pos < body.size() && (body[pos] == ' ' || body[pos] == '\t')) ++pos;
  if (pos >= body.size())
    fail(ErrorCode::kInvalidArgument, "multipart body is truncated: it ends after a boundary, without the "
                                      "closing '--{}--'", boundary);
  if (body.substr(pos, 2) != "\r\n")
    fail(ErrorCode::kInvalidArgument, "multipart body is malformed: a boundary is not followed by CRLF");
  pos += 2;
  if (index == limits.max_parts)
    fail(ErrorCode::kInvalidArgument, "multipart body has more than {} parts", limits.max_parts);
  // Headers end at the first blank line; a part may have none (then the blank line comes first).
  if (body.substr(pos, 2) == "\r\n")
    fail(ErrorCode::kInvalidArgument, "multipart part {} has no Content-Disposition header", index + 1);
  const size_t end = find_bytes(body.substr(0, std::min(body.size(), pos + limits.max_part_header_bytes + 4)),
                                "\r\n\r\n", pos);
  if (end == std::string_view::npos) {
    if (body.size() - pos <= limits.max_part_header_bytes)
      fail(ErrorCode::kInvalidArgument, "multipart body is truncated inside the headers of part {}", index + 1);
    fail(ErrorCode::kInvalidArgument, "multipart part {} has headers over {} bytes", index + 1,
         limits.max_part_header_bytes);
  }
  parse_part_headers(body.substr(pos, end - pos), index, part);
  return end + 4;
}

}  // namespace

std::vector<MultipartPart> parse_multipart(std::string_view body, std::string_view boundary,
                                           const MultipartLimits& limits) {
  STENO_CHECK(!boundary.empty(), "multipart boundary is empty");
  const std::string dash_boundary = "--" + std::string(boundary);
  const std::string delimiter = "\r\n" + dash_boundary;  // what ends every part's data
  size_t pos = first_boundary_end(body, boundary, dash_boundary, delimiter);
  std::vector<MultipartPart> parts;
  for (;;) {
    MultipartPart part;
    const size_t index = parts.size();
    const std::optional<size_t> data_start = read_part_head(body, pos, index, boundary, limits, part);
    if (!data_start) return parts;
    const size_t data_end = find_bytes(body, delimiter, *data_start);
    if (data_end == std::string_view::npos)
      fail(ErrorCode::kInvalidArgument,
           "multipart body is truncated: part {} ('{}') is not followed by a boundary (the upload was cut short?)",
           index + 1, part.name);
    part.data = body.substr(*data_start, data_end - *data_start);
    parts.push_back(std::move(part));
    pos = data_end + delimiter.size();
  }
}

std::optional<size_t> find_part_data(std::string_view prefix, std::string_view boundary, std::string_view name,
                                     const MultipartLimits& limits) noexcept {
  try {
    if (boundary.empty()) return std::nullopt;
    const std::string dash_boundary = "--" + std::string(boundary);
    const std::string delimiter = "\r\n" + dash_boundary;
    size_t pos = first_boundary_end(prefix, boundary, dash_boundary, delimiter);
    for (size_t index = 0;; ++index) {
      MultipartPart part;
      const std::optional<size_t> data_start = read_part_head(prefix, pos, index, boundary, limits, part);
      if (!data_start) return std::nullopt;
      if (part.name == name) return data_start;
      const size_t data_end = find_bytes(prefix, delimiter, *data_start);
      if (data_end == std::string_view::npos) return std::nullopt;  // the prefix ends inside another part
      pos = data_end + delimiter.size();
    }
  } catch (const std::exception&) {
    return std::nullopt;  // malformed, or cut inside a boundary or headers: the whole body's parse will say which
  }
}

const MultipartPart* find_part(const std::vector<MultipartPart>& parts, std::string_view name) {
  for (const auto& p : parts)
    if (p.name == name) return &p;
  return nullptr;
}

}  // namespace steno::serve::http

#include "serve/frontend/infer_tensors.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <bit>
#include <cstring>
#include <limits>

#include "steno/core/error.h"

namespace steno::serve {
namespace {

static_assert(std::endian::native == std::endian::little, "raw tensor data is little-endian");

// A BYTES tensor in raw form: elements of a 4-byte little-endian length followed by that many bytes.
std::vector<std::string> parse_raw_bytes(std::string_view data, const std::string& input) {
  std::vector<std::string> out;
  while (!data.empty()) {
    if (data.size() < 4)
      fail(ErrorCode::kInvalidArgument, "input '{}': binary BYTES data ends inside an element's 4-byte length",
           input);
    uint32_t len;
    std::memcpy(&len, data.data(), 4);
    data.remove_prefix(4);
    if (len > data.size())
      fail(ErrorCode::kInvalidArgument, "input '{}': a binary BYTES element says {} bytes but only {} remain", input,
           len, data.size());
    out.emplace_back(data.substr(0, len));
    data.remove_prefix(len);
  }
  return out;
}

}  // namespace

int64_t InferTensor::element_count() const {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) return -1;
    n *= d;
  }
  return n;
}

void fill_from_raw(InferTensor& t, std::string_view data) {
  if (t.datatype == "BYTES") {
    t.bytes = parse_raw_bytes(data, t.name);
  } else if (t.datatype == "FP32") {
    if (data.size() % 4 != 0)
      fail(ErrorCode::kInvalidArgument, "input '{}': binary FP32 data is {} bytes, not a multiple of 4", t.name,
           data.size());
    t.fp32.resize(data.size() / 4);
    if (!data.empty()) std::memcpy(t.fp32.data(), data.data(), data.size());  // an empty one may have no pointer
  }
}

void check_element_count(const InferTensor& t) {
  if (t.datatype != "BYTES" && t.datatype != "FP32") return;
  const size_t have = t.datatype == "BYTES" ? t.bytes.size() : t.fp32.size();
  if (static_cast<int64_t>(have) != t.element_count())
    fail(ErrorCode::kInvalidArgument, "input '{}': shape [{}] needs {} elements but {} were given", t.name,
         fmt::join(t.shape, ", "), t.element_count(), have);
}

std::string raw_output_data(const OutputTensor& t) {
  std::string out;
  if (t.datatype == "BYTES") {
    for (const auto& s : t.bytes) {
      const uint32_t len = static_cast<uint32_t>(s.size());
      out.append(reinterpret_cast<const char*>(&len), 4);
      out.append(s);
    }
  } else {
    out.append(reinterpret_cast<const char*>(t.fp32.data()), t.fp32.size() * sizeof(float));
  }
  return out;
}

}  // namespace steno::serve

#include "nemo/import_weights.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "nemo/python_json.h"
#include "steno/core/error.h"
#include "steno/core/safetensors.h"

namespace steno::nemo {
namespace {

bool dropped(const std::string& name) { return name.ends_with("num_batches_tracked"); }

bool is_float(TorchType t) {
  return t == TorchType::kF64 || t == TorchType::kF32 || t == TorchType::kF16 || t == TorchType::kBF16;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

int64_t numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

float element_as_f32(const uint8_t* p, TorchType t) {
  switch (t) {
    case TorchType::kF32: { float f; std::memcpy(&f, p, 4); return f; }
    case TorchType::kF64: { double d; std::memcpy(&d, p, 8); return static_cast<float>(d); }
    case TorchType::kF16: { uint16_t h; std::memcpy(&h, p, 2); return f16_to_f32(h); }
    case TorchType::kBF16: { uint16_t b; std::memcpy(&b, p, 2); return bf16_to_f32(b); }
    default: break;
  }
  fail(ErrorCode::kInternal, "element_as_f32 of {}", torch_type_name(t));
}

bool contiguous(const TensorRef& r) {
  int64_t expect = 1;
  for (size_t d = r.shape.size(); d-- > 0;) {
    if (r.shape[d] != 1 && r.stride[d] != expect) return false;
    expect *= r.shape[d];
  }
  return true;
}

// The tensor's elements in C order as f32, `count` of them from element `first` on, into `out`.
void gather_f32(const CheckpointTensor& t, int64_t first, int64_t count, float* out) {
  const std::vector<int64_t>& shape = t.ref.shape;
  const size_t rank = shape.size();
  const int esize = torch_type_size(t.ref.type);
  if (contiguous(t.ref)) {  // the usual case: one run of elements
    const uint8_t* p = t.storage.data() + (t.ref.offset + first) * esize;
    if (t.ref.type == TorchType::kF32) std::memcpy(out, p, static_cast<size_t>(count) * 4);
    else for (int64_t k = 0; k < count; ++k) out[k] = element_as_f32(p + k * esize, t.ref.type);
    return;
  }
  std::vector<int64_t> index(rank, 0);
  int64_t rest = first;
  for (size_t d = rank; d-- > 0;) {
    index[d] = rest % shape[d];
    rest /= shape[d];
  }
  for (int64_t k = 0; k < count; ++k) {
    int64_t at = t.ref.offset;
    for (size_t d = 0; d < rank; ++d) at += index[d] * t.ref.stride[d];
    out[k] = element_as_f32(t.storage.data() + at * esize, t.ref.type);
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
}

struct Planned {
  const CheckpointTensor* tensor;
  DType dtype;
  uint64_t nbytes;
};

}  // namespace

uint16_t numpy_f32_to_f16(float f) {
  if (!std::isnan(f)) return f32_to_f16(f);
  // numpy keeps the sign and the payload's top bits, and makes sure the result stays a NaN
  const uint32_t x = std::bit_cast<uint32_t>(f);
  uint16_t h = static_cast<uint16_t>(0x7c00u + ((x & 0x7fffffu) >> 13));
  if (h == 0x7c00u) ++h;
  return static_cast<uint16_t>(((x >> 16) & 0x8000u) | h);
}

uint16_t converter_f32_to_bf16(float f) { return std::isnan(f) ? uint16_t{0x7fc0} : f32_to_bf16(f); }

void check_weights(const std::vector<CheckpointTensor>& tensors, const std::vector<asr::WeightSpec>& expected) {
  std::map<std::string, const asr::WeightSpec*> by_name;
  for (const asr::WeightSpec& s : expected) {
    by_name[s.name] = &s;
    for (const std::string& a : s.aliases) by_name[a] = &s;
  }
  std::vector<std::string> problems;
  std::map<const asr::WeightSpec*, std::string> found;
  for (const CheckpointTensor& t : tensors) {
    const std::string& name = t.ref.name;
    if (dropped(name)) continue;
    const auto it = by_name.find(name);
    if (it == by_name.end()) {
      problems.push_back(fmt::format("unexpected tensor {} {}", name, shape_text(t.ref.shape)));
      continue;
    }
    const asr::WeightSpec& spec = *it->second;
    const std::vector<int64_t> want(spec.shape.begin(), spec.shape.end());
    if (t.ref.shape != want)
      problems.push_back(fmt::format("tensor {}: expected shape {}, got {}", name, shape_text(want),
                                     shape_text(t.ref.shape)));
    else if (!is_float(t.ref.type))
      problems.push_back(fmt::format("tensor {} holds {}, not floats", name, torch_type_name(t.ref.type)));
    if (const auto [prev, fresh] = found.emplace(&spec, name); !fresh)
      problems.push_back(fmt::format("tensors {} and {} are the same weight", prev->second, name));
  }
  for (const asr::WeightSpec& s : expected)
    if (!s.optional && !found.count(&s)) problems.push_back(fmt::format("missing tensor {}", s.name));
  if (problems.empty()) return;
  const size_t shown = std::min<size_t>(problems.size(), 10);
  fail(ErrorCode::kInvalidArgument, "checkpoint does not match its config ({} problems): {}{}", problems.size(),
       fmt::join(problems.begin(), problems.begin() + static_cast<std::ptrdiff_t>(shown), "; "),
       problems.size() > shown ? "; ..." : "");
}

void write_converted_safetensors(const std::filesystem::path& path, const std::vector<CheckpointTensor>& tensors,
                                 DType dtype) {
  STENO_CHECK(dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16,
              "weights are stored as f32, f16 or bf16, not {}", dtype_name(dtype));
  std::vector<Planned> plan;
  for (const CheckpointTensor& t : tensors) {
    if (dropped(t.ref.name)) continue;
    STENO_CHECK(is_float(t.ref.type), "tensor {} holds {}, not floats", t.ref.name, torch_type_name(t.ref.type));
    // Defence in depth: the reader checked that the tensor lies inside its storage; the gather relies on it.
    int64_t last = t.ref.offset;
    for (size_t d = 0; d < t.ref.shape.size(); ++d) last += (t.ref.shape[d] - 1) * t.ref.stride[d];
    STENO_ASSERT(numel(t.ref.shape) == 0 || (t.ref.offset >= 0 && last < t.ref.storage_numel));
    const DType out = t.ref.name.starts_with("preprocessor.") ? DType::kF32 : dtype;
    plan.push_back({&t, out, static_cast<uint64_t>(numel(t.ref.shape)) * dtype_size(out)});
  }
  std::sort(plan.begin(), plan.end(),
            [](const Planned& a, const Planned& b) { return a.tensor->ref.name < b.tensor->ref.name; });
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  uint64_t offset = 0;
  for (const Planned& p : plan) {
    STENO_CHECK(!header.contains(p.tensor->ref.name), "tensor {} appears twice in the checkpoint", p.tensor->ref.name);
    header[p.tensor->ref.name] = nlohmann::ordered_json{
        {"dtype", safetensors_dtype_name(p.dtype)},
        {"shape", p.tensor->ref.shape},
        {"data_offsets", nlohmann::ordered_json::array({offset, offset + p.nbytes})}};
    offset += (p.nbytes + 7) / 8 * 8;
  }
  std::string text = python_json_compact(header);
  text.append((8 - text.size() % 8) % 8, ' ');

  std::ofstream out(path, std::ios::binary);
  if (!out) fail(ErrorCode::kUnavailable, "{}: cannot create", path.string());
  uint8_t length[8];
  for (int k = 0; k < 8; ++k) length[k] = static_cast<uint8_t>(static_cast<uint64_t>(text.size()) >> (8 * k));
  out.write(reinterpret_cast<const char*>(length), 8);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  constexpr int64_t kSlice = 1 << 20;  // elements converted at a time
  std::vector<float> f32;
  std::vector<uint16_t> half;
  for (const Planned& p : plan) {
    const CheckpointTensor& t = *p.tensor;
    const int64_t n = numel(t.ref.shape);
    if (p.dtype == DType::kF32 && t.ref.type == TorchType::kF32 && contiguous(t.ref)) {
      // The common case: the bytes as they lie in the archive (little-endian f32 both sides).
      out.write(reinterpret_cast<const char*>(t.storage.data() + t.ref.offset * 4),
                static_cast<std::streamsize>(n * 4));
    } else {
      for (int64_t first = 0; first < n; first += kSlice) {
        const int64_t count = std::min(kSlice, n - first);
        f32.resize(static_cast<size_t>(count));
        gather_f32(t, first, count, f32.data());
        if (p.dtype == DType::kF32) {
          out.write(reinterpret_cast<const char*>(f32.data()), static_cast<std::streamsize>(count * 4));
          continue;
        }
        half.resize(static_cast<size_t>(count));
        for (int64_t k = 0; k < count; ++k)
          half[k] = p.dtype == DType::kF16 ? numpy_f32_to_f16(f32[k]) : converter_f32_to_bf16(f32[k]);
        out.write(reinterpret_cast<const char*>(half.data()), static_cast<std::streamsize>(count * 2));
      }
    }
    static const char kZeros[8] = {};
    out.write(kZeros, static_cast<std::streamsize>((8 - p.nbytes % 8) % 8));
  }
  out.flush();
  if (!out) fail(ErrorCode::kUnavailable, "{}: write failed (disk full?)", path.string());
}

}  // namespace steno::nemo

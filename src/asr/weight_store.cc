#include "steno/asr/weight_store.h"

#include <fmt/format.h>

#include <set>

#include "steno/core/host_weights.h"

namespace steno::asr {

namespace {

constexpr size_t kMaxReported = 10;

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool is_float(DType t) { return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16; }

// The file's name for `spec`: its canonical name or an alias, "" if absent.
std::string name_in_file(const WeightSpec& spec, const SafeTensorsFile& file) {
  if (file.has(spec.name)) return spec.name;
  for (const std::string& a : spec.aliases)
    if (file.has(a)) return a;
  return "";
}

}  // namespace

std::vector<WeightProblem> check_weights(const ModelConfig& config, const SafeTensorsFile& file) {
  return check_weights(expected_weights(config), file);
}

std::vector<WeightProblem> check_weights(const std::vector<WeightSpec>& specs, const SafeTensorsFile& file) {
  using Kind = WeightProblem::Kind;
  std::vector<WeightProblem> problems;
  std::set<std::string> known;
  for (const WeightSpec& spec : specs) {
    known.insert(spec.name);
    known.insert(spec.aliases.begin(), spec.aliases.end());
    int present = file.has(spec.name) ? 1 : 0;
    for (const std::string& a : spec.aliases) present += file.has(a) ? 1 : 0;
    if (present > 1) {
      problems.push_back({Kind::kDuplicate, spec.name,
                          fmt::format("{}: present under more than one name ({} and {})", spec.name, spec.name,
                                      fmt::join(spec.aliases, ", "))});
      continue;
    }
    const std::string name = name_in_file(spec, file);
    if (name.empty()) {
      if (!spec.optional)
        problems.push_back(
            {Kind::kMissing, spec.name, fmt::format("{}: missing (expected {})", spec.name, shape_str(spec.shape))});
      continue;
    }
    const SafeTensorInfo& info = file.info(name);
    if (info.shape != spec.shape)
      problems.push_back({Kind::kShape, name,
                          fmt::format("{}: shape {}, expected {}", name, shape_str(info.shape), shape_str(spec.shape))});
    else if (!is_float(info.dtype))
      problems.push_back({Kind::kDtype, name,
                          fmt::format("{}: dtype {}, expected f32, f16 or bf16", name, dtype_name(info.dtype))});
  }
  for (const std::string& name : file.names()) {
    if (known.count(name) != 0 || ends_with(name, ".num_batches_tracked")) continue;
    problems.push_back({Kind::kExtra, name,
                        fmt::format("{}: unexpected tensor {}", name, shape_str(file.info(name).shape))});
  }
  return problems;
}

WeightStore WeightStore::open(const std::filesystem::path& path, const ModelConfig& config) {
  return open(path, expected_weights(config), &config.encoder);
}

WeightStore WeightStore::open(const std::filesystem::path& path, std::vector<WeightSpec> specs,
                              const EncoderConfig* encoder) {
  std::error_code ec;
  const std::filesystem::path safetensors_path =
      std::filesystem::is_directory(path, ec) ? path / "model.safetensors" : path;
  const SafeTensorsFile file = SafeTensorsFile::open(safetensors_path);
  const std::vector<WeightProblem> problems = check_weights(specs, file);
  if (!problems.empty()) {
    bool only_missing = true;
    bool extra_bias = false, missing_bias = false;
    for (const WeightProblem& p : problems) {
      only_missing = only_missing && p.kind == WeightProblem::Kind::kMissing;
      const bool layer_bias = p.tensor.rfind("encoder.layers.", 0) == 0 && ends_with(p.tensor, ".bias");
      extra_bias = extra_bias || (layer_bias && p.kind == WeightProblem::Kind::kExtra);
      missing_bias = missing_bias || (layer_bias && p.kind == WeightProblem::Kind::kMissing);
    }
    std::string msg = fmt::format("{} does not match its config ({} problem{}):", safetensors_path.string(),
                                  problems.size(), problems.size() == 1 ? "" : "s");
    for (size_t i = 0; i < problems.size() && i < kMaxReported; ++i) msg += "\n  " + problems[i].message;
    if (problems.size() > kMaxReported) msg += fmt::format("\n  ... and {} more", problems.size() - kMaxReported);
    if (encoder != nullptr && extra_bias && !encoder->use_bias)
      msg += "\n  (the file has encoder layer biases but config.json says encoder.use_bias = false)";
    if (encoder != nullptr && missing_bias && encoder->use_bias)
      msg += "\n  (the file lacks encoder layer biases but config.json says encoder.use_bias = true)";
    throw Error(only_missing ? ErrorCode::kNotFound : ErrorCode::kInvalidArgument, msg);
  }

  WeightStore store;
  store.specs_ = std::move(specs);
  bool any_f32 = false, any_f16 = false, any_bf16 = false;
  std::vector<std::string> names;
  std::vector<Tensor> stored;
  for (const WeightSpec& spec : store.specs_) {
    for (const std::string& a : spec.aliases) store.aliases_[a] = spec.name;
    const std::string name = name_in_file(spec, file);
    if (name.empty()) continue;  // optional and absent
    Tensor t = file.get(name);
    if (!spec.optional) {  // the model's weights; converters may keep the front-end buffers in f32
      any_f32 = any_f32 || t.dtype() == DType::kF32;
      any_f16 = any_f16 || t.dtype() == DType::kF16;
      any_bf16 = any_bf16 || t.dtype() == DType::kBF16;
    }
    names.push_back(spec.name);
    stored.push_back(std::move(t));
  }
  // 16-bit weights widened into one block: a load of the bundled model faults in ~15 pages instead of ~7,500.
  std::vector<Tensor> widened = widen_to_f32_in_one_block(stored);
  for (size_t i = 0; i < names.size(); ++i) {
    store.nbytes_ += widened[i].nbytes();
    store.tensors_.emplace(names[i], std::move(widened[i]));
  }
  store.storage_dtype_ = any_f32 ? DType::kF32 : any_f16 ? DType::kF16 : any_bf16 ? DType::kBF16 : DType::kF32;
  return store;
}

bool WeightStore::has(const std::string& name) const {
  const auto a = aliases_.find(name);
  return tensors_.count(a == aliases_.end() ? name : a->second) != 0;
}

Tensor WeightStore::get(const std::string& name) const {
  const auto a = aliases_.find(name);
  const std::string& canonical = a == aliases_.end() ? name : a->second;
  const auto it = tensors_.find(canonical);
  if (it != tensors_.end()) return it->second;
  for (const WeightSpec& s : specs_)
    if (s.name == canonical)
      fail(ErrorCode::kNotFound, "weight {} is optional and absent from model.safetensors", canonical);
  fail(ErrorCode::kNotFound, "no weight named {} in this model", name);
}

}  // namespace steno::asr

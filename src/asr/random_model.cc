#include "steno/asr/random_model.h"

#include <fmt/format.h>

#include <cmath>
#include <map>

#include "steno/asr/weight_names.h"
#include "steno/asr/weight_store.h"
#include "steno/core/safetensors.h"

namespace steno::asr {

namespace fs = std::filesystem;

namespace {

uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// xoshiro256**: small, fast, and the same numbers everywhere (unlike std:: distributions).
class Rng {
 public:
  explicit Rng(uint64_t seed) {
    for (uint64_t& w : s_) w = splitmix64(seed);
  }
  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  float uniform01() { return static_cast<float>(next() >> 40) * (1.0f / 16777216.0f); }  // [0, 1)
  float uniform(float bound) { return (2.0f * uniform01() - 1.0f) * bound; }
  float normal() {  // Box-Muller
    const double u1 = (static_cast<double>(next() >> 11) + 1.0) * 0x1.0p-53;  // (0, 1]
    const double u2 = static_cast<double>(next() >> 11) * 0x1.0p-53;
    return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

Tensor random_tensor(const WeightSpec& spec, uint64_t seed, int64_t blank_row) {
  Tensor t = Tensor::empty(spec.shape);
  float* x = t.data<float>();
  const int64_t n = t.numel();
  Rng rng(seed ^ fnv1a(spec.name));
  switch (spec.kind) {
    case WeightKind::kWeight: case WeightKind::kBias: case WeightKind::kPosBias: {
      const float bound = 1.0f / std::sqrt(static_cast<float>(std::max<int64_t>(spec.fan_in, 1)));
      for (int64_t i = 0; i < n; ++i) x[i] = rng.uniform(bound);
      break;
    }
    case WeightKind::kNormWeight: case WeightKind::kRunningVar:
      std::fill(x, x + n, 1.0f);
      break;
    case WeightKind::kNormBias: case WeightKind::kRunningMean: case WeightKind::kFilterbank: case WeightKind::kWindow:
      std::fill(x, x + n, 0.0f);
      break;
    case WeightKind::kEmbedding: {
      for (int64_t i = 0; i < n; ++i) x[i] = rng.normal();
      const int64_t cols = spec.shape[1];
      std::fill(x + blank_row * cols, x + (blank_row + 1) * cols, 0.0f);
      break;
    }
  }
  return t;
}

std::string with_commas(int64_t v) {
  const std::string digits = std::to_string(v < 0 ? -v : v);
  std::string out = v < 0 ? "-" : "";
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string human_bytes(uint64_t b) {
  if (b < 1000) return fmt::format("{} B", b);
  const char* units[] = {"kB", "MB", "GB", "TB"};
  double v = static_cast<double>(b);
  int u = -1;
  while (v >= 1000 && u < 3) { v /= 1000; ++u; }
  return fmt::format("{:.1f} {}", v, units[u]);
}

}  // namespace

ModelTemplate load_model_like(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) fail(ErrorCode::kNotFound, "{} does not exist (expected a config file or a model directory)",
                                  path.string());
  ModelTemplate t;
  const bool dir = fs::is_directory(path, ec);
  t.config = dir ? ModelConfig::load(path) : ModelConfig::load_file(path);
  const fs::path tok = (dir ? path : path.parent_path()) / t.config.tokenizer.model;
  if (fs::is_regular_file(tok, ec)) t.tokenizer = tok;
  return t;
}

void write_random_model(const ModelConfig& config, const fs::path& out_dir, uint64_t seed, DType dtype,
                        const std::optional<fs::path>& tokenizer_src) {
  config.validate();
  STENO_CHECK(dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16,
              "random model weights must be f32, f16 or bf16, not {}", dtype_name(dtype));
  std::error_code ec;
  if (tokenizer_src && !fs::is_regular_file(*tokenizer_src, ec))
    fail(ErrorCode::kNotFound, "tokenizer {} does not exist", tokenizer_src->string());
  fs::create_directories(out_dir, ec);
  if (ec) fail(ErrorCode::kUnavailable, "cannot create {}: {}", out_dir.string(), ec.message());

  std::vector<WeightSpec> specs;
  for (WeightSpec& s : expected_weights(config))
    if (!s.optional) specs.push_back(std::move(s));
  std::vector<SafeTensorsEntry> entries;
  for (const WeightSpec& s : specs) entries.push_back({s.name, dtype, s.shape});
  const std::map<std::string, std::string> metadata = {
      {"format", "pt"}, {"generator", "steno model random"}, {"seed", std::to_string(seed)}};
  write_safetensors_streamed(out_dir / "model.safetensors", entries, metadata, [&](size_t i) {
    return random_tensor(specs[i], seed, config.blank_id()).to(dtype);
  });

  if (tokenizer_src) {
    const fs::path dst = out_dir / config.tokenizer.model;
    if (!fs::exists(dst, ec) || !fs::equivalent(*tokenizer_src, dst, ec)) {
      fs::create_directories(dst.parent_path(), ec);
      fs::copy_file(*tokenizer_src, dst, fs::copy_options::overwrite_existing, ec);
      if (ec) fail(ErrorCode::kUnavailable, "cannot copy {} to {}: {}", tokenizer_src->string(), dst.string(),
                   ec.message());
    }
  }
  config.save(out_dir / "config.json");  // last: a directory with a config.json is complete
}

std::string describe_model(const fs::path& model_dir) {
  const ModelConfig config = ModelConfig::load(model_dir);
  const PreprocessorConfig& p = config.preprocessor;
  std::string out;
  out += fmt::format("model:        {}\n", config.name.empty() ? model_dir.filename().string() : config.name);
  out += fmt::format("directory:    {}\n", model_dir.string());
  out += fmt::format("architecture: {}\n", config.summary());
  out += fmt::format("front end:    {} Hz, {} mels, n_fft {}, {} window {} / hop {} samples, normalize {}, NeMo {} "
                     "front end\n",
                     p.sample_rate, p.features, p.n_fft, p.window, p.win_length(), p.hop_length(), p.normalize,
                     frontend_version_name(p.frontend_version));
  out += fmt::format("parameters:   {}\n", with_commas(parameter_count(config)));

  std::error_code ec;
  const fs::path weights = model_dir / "model.safetensors";
  if (!fs::exists(weights, ec)) {
    out += "weights:      model.safetensors MISSING\n";
  } else {
    try {
      const SafeTensorsFile file = SafeTensorsFile::open(weights);
      std::map<std::string, int> dtypes;
      for (const std::string& n : file.names()) ++dtypes[dtype_name(file.info(n).dtype)];
      std::string dt;
      for (const auto& [name, count] : dtypes)
        dt += fmt::format("{}{} ({} tensor{})", dt.empty() ? "" : ", ", name, count, count == 1 ? "" : "s");
      out += fmt::format("weights:      model.safetensors, {}, {}\n", human_bytes(file.file_size()), dt);
      const bool fb = file.has("preprocessor.featurizer.fb"), win = file.has("preprocessor.featurizer.window");
      out += fmt::format("mel filters:  {}\n", fb && win   ? "from the checkpoint (fb and window)"
                                               : fb || win ? "partly from the checkpoint"
                                                           : "computed by steno");
      const std::vector<WeightProblem> problems = check_weights(config, file);
      if (problems.empty()) {
        out += "check:        weights match config.json\n";
      } else {
        out += fmt::format("check:        {} problem{} against config.json\n", problems.size(),
                           problems.size() == 1 ? "" : "s");
        for (size_t i = 0; i < problems.size() && i < 10; ++i) out += "                " + problems[i].message + "\n";
        if (problems.size() > 10) out += fmt::format("                ... and {} more\n", problems.size() - 10);
      }
    } catch (const Error& e) {
      out += fmt::format("weights:      model.safetensors UNREADABLE: {}\n", e.what());
    }
  }

  const fs::path tok = model_dir / config.tokenizer.model;
  if (fs::is_regular_file(tok, ec))
    out += fmt::format("tokenizer:    {} ({}, {})\n", config.tokenizer.model, config.tokenizer.type,
                       human_bytes(fs::file_size(tok, ec)));
  else
    out += fmt::format("tokenizer:    {} MISSING\n", config.tokenizer.model);

  uint64_t total = 0;
  for (const auto& entry : fs::recursive_directory_iterator(model_dir, ec))
    if (entry.is_regular_file(ec)) total += entry.file_size(ec);
  out += fmt::format("size on disk: {}\n", human_bytes(total));
  return out;
}

}  // namespace steno::asr

#include "steno/nemo/import.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <stdlib.h>

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "nemo/import_config.h"
#include "nemo/import_weights.h"
#include "nemo/mapped_file.h"
#include "nemo/python_json.h"
#include "steno/asr/model_config.h"
#include "steno/asr/weight_names.h"
#include "steno/core/error.h"
#include "steno/diar/sortformer_config.h"
#include "steno/diar/sortformer_weights.h"
#include "steno/nemo/checkpoint.h"
#include "steno/nemo/tar_members.h"

namespace steno::nemo {
namespace {

namespace fs = std::filesystem;

// The converter's member(): the name itself, else the first member with that base name.
const TarMember& member(const std::vector<TarMember>& files, const std::string& name, const std::string& what) {
  for (const TarMember& m : files)
    if (m.name == name) return m;
  for (const TarMember& m : files)
    if (fs::path(m.name).filename() == name) return m;
  std::vector<std::string> names;
  for (const TarMember& m : files) names.push_back(m.name);
  std::sort(names.begin(), names.end());
  fail(ErrorCode::kInvalidArgument, "member '{}' ({}) missing from the .nemo; it has: [{}]", name, what,
       fmt::join(names, ", "));
}

std::string_view text_of(const TarMember& m) { return {reinterpret_cast<const char*>(m.data.data()), m.data.size()}; }

// Python's os.path.splitext(basename)[0]: the extension starts at the last dot that is not a leading one.
std::string stem_of(const fs::path& file) {
  const std::string base = file.filename().string();
  const size_t lead = base.find_first_not_of('.');
  const size_t dot = base.rfind('.');
  return lead == std::string::npos || dot == std::string::npos || dot <= lead ? base : base.substr(0, dot);
}

const TarMember& tokenizer_member(const std::vector<TarMember>& files, const YamlValue& y) {
  const YamlValue* tok = y.find("tokenizer");
  const YamlValue* path = tok ? tok->find("model_path") : nullptr;
  if (path && path->kind == YamlValue::Kind::kStr && path->s.starts_with("nemo:"))
    return member(files, path->s.substr(5), "SentencePiece tokenizer");
  const TarMember* first = nullptr;
  for (const TarMember& m : files)
    if (m.name.ends_with("tokenizer.model") && (!first || m.name < first->name)) first = &m;
  if (!first) fail(ErrorCode::kInvalidArgument, "no SentencePiece tokenizer (*tokenizer.model) in the .nemo");
  return *first;
}

YamlValue read_postprocessing(const fs::path& file) {
  const YamlLimits limits;
  std::error_code ec;
  const uintmax_t size = fs::file_size(file, ec);
  if (ec) fail(ErrorCode::kNotFound, "{}: cannot read ({})", file.string(), ec.message());
  if (size > limits.max_bytes) fail(ErrorCode::kInvalidArgument, "{}: {} bytes: not a post-processing yaml",
                                    file.string(), size);
  std::ifstream in(file, std::ios::binary);
  const std::string text{std::istreambuf_iterator<char>(in), {}};
  return parse_yaml(text, file.string(), limits);
}

// The model directory is made as `<out>.tmp-XXXXXX` beside `out` and renamed into place once complete; any
// failure before that removes it.
class StagingDir {
 public:
  explicit StagingDir(const fs::path& out) {
    std::error_code ec;
    if (out.has_parent_path()) fs::create_directories(out.parent_path(), ec);  // as the converter's makedirs
    std::string pattern = out.string() + ".tmp-XXXXXX";
    if (!::mkdtemp(pattern.data()))
      fail(ErrorCode::kUnavailable, "{}: cannot create a directory beside it: {}", out.string(), std::strerror(errno));
    path_ = pattern;
  }
  ~StagingDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }
  void commit(const fs::path& out) {
    std::error_code ec;
    fs::rename(path_, out, ec);  // atomic; replaces only an empty directory
    if (ec) fail(ErrorCode::kInvalidArgument, "{}: cannot put the model there: {}", out.string(), ec.message());
    path_.clear();
  }

 private:
  fs::path path_;
};

void check_out(const fs::path& out) {
  std::error_code ec;
  if (!fs::exists(out, ec)) return;
  if (!fs::is_directory(out, ec) || !fs::is_empty(out, ec))
    fail(ErrorCode::kInvalidArgument, "{} already exists; remove it or choose another output directory",
         out.string());
}

DType parse_import_dtype(const std::string& dtype) {
  if (dtype == "f32") return DType::kF32;
  if (dtype == "f16") return DType::kF16;
  if (dtype == "bf16") return DType::kBF16;
  fail(ErrorCode::kInvalidArgument, "--dtype must be f32, f16 or bf16, not '{}'", dtype);
}

// The engine's own reading of the translated config: what it cannot run is refused here, before any output.
struct Validated {
  std::vector<asr::WeightSpec> weights;
  std::string summary;
};
Validated validate(const TranslatedConfig& t) {
  const nlohmann::json j = nlohmann::json::parse(t.config.dump());
  try {
    if (t.sortformer) {
      const diar::SortformerConfig c = diar::SortformerConfig::from_json(j);
      return {diar::expected_weights(c), c.summary()};
    }
    const asr::ModelConfig c = asr::ModelConfig::from_json(j);
    return {asr::expected_weights(c), c.summary()};
  } catch (const Error& e) {
    throw Error(e.code(), fmt::format("model_config.yaml describes a model steno cannot load: {}", e.what()));
  }
}

}  // namespace

ImportResult import_nemo(const fs::path& nemo, const fs::path& out_arg, const ImportOptions& options) {
  const fs::path out = out_arg.has_filename() ? out_arg : out_arg.parent_path();
  if (options.frontend_version && *options.frontend_version != "2.4" && *options.frontend_version != "2.5")
    fail(ErrorCode::kInvalidArgument, "--frontend-version must be 2.4 or 2.5, not '{}'", *options.frontend_version);
  const DType dtype = parse_import_dtype(options.dtype);
  check_out(out);

  const MappedFile file(nemo);
  const std::span<const uint8_t> bytes = file.bytes();
  if (bytes.size() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b)
    fail(ErrorCode::kUnimplemented, "{}: a gzip-compressed .nemo (NeMo before 1.7); steno reads uncompressed ones: "
         "unpack it and tar it again without compression", nemo.string());
  std::vector<TarMember> files;
  try {
    files = read_tar(bytes);
  } catch (const Error& e) {
    throw Error(e.code(), fmt::format("{}: not a .nemo file: {}", nemo.string(), e.what()));
  }
  const YamlValue y = parse_yaml(text_of(member(files, "model_config.yaml", "model config")), "model_config.yaml");
  std::optional<YamlValue> post;
  if (options.postprocessing) post = read_postprocessing(*options.postprocessing);
  const std::string name = options.name.empty() ? stem_of(nemo) : options.name;
  const TranslatedConfig config = translate_config(y, name, options.frontend_version, post ? &*post : nullptr);
  const Validated valid = validate(config);

  std::vector<CheckpointTensor> tensors;
  try {
    tensors = read_checkpoint(member(files, "model_weights.ckpt", "weights").data);
  } catch (const Error& e) {
    throw Error(e.code(), fmt::format("model_weights.ckpt: {}", e.what()));
  }
  const TarMember* tokenizer = config.sortformer ? nullptr : &tokenizer_member(files, y);
  check_weights(tensors, valid.weights);

  StagingDir staging(out);
  write_converted_safetensors(staging.path() / "model.safetensors", tensors, dtype);
  {
    std::ofstream json(staging.path() / "config.json", std::ios::binary);
    json << python_json_indented(config.config) << '\n';
    if (tokenizer) {
      std::ofstream tok(staging.path() / "tokenizer.model", std::ios::binary);
      tok.write(reinterpret_cast<const char*>(tokenizer->data.data()),
                static_cast<std::streamsize>(tokenizer->data.size()));
      if (!tok) fail(ErrorCode::kUnavailable, "{}: cannot write tokenizer.model", staging.path().string());
    }
    if (!json.flush()) fail(ErrorCode::kUnavailable, "{}: cannot write config.json", staging.path().string());
  }
  staging.commit(out);
  return {config.sortformer ? "sortformer" : "fastconformer_tdt",
          config.config["preprocessor"]["frontend_version"].get<std::string>(), valid.summary};
}

}  // namespace steno::nemo

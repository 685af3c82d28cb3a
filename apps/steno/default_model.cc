#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "commands.h"
#include "steno/core/error.h"
#include "steno/nemo/model_cache.h"

namespace steno::cli {

namespace fs = std::filesystem;

// The model trained for steno on synthetic speech (tools/train) and shipped in models/.
constexpr const char* kBundledModel = "steno-tdt-small-en";

std::string default_model_dir() {
  if (const char* env = std::getenv("STENO_MODEL"); env && *env) return env;
  // The bundled model: next to an installed binary (<prefix>/share/steno/models) or in the source tree.
  std::vector<fs::path> candidates;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) candidates.push_back(exe.parent_path() / "../share/steno/models" / kBundledModel);
  candidates.push_back(fs::path(STENO_SOURCE_DIR) / "models" / kBundledModel);
  for (const auto& c : candidates)
    if (fs::exists(c / "config.json")) return fs::weakly_canonical(c).string();
  fail(ErrorCode::kNotFound,
       "no --model given, $STENO_MODEL is unset, and the bundled model (models/{}) is missing; pass a NeMo "
       "checkpoint (--model X.nemo, or `steno model pull nvidia/parakeet-tdt-0.6b-v2`) or make a model with "
       "`steno model random`",
       kBundledModel);
}

// The diarizer trained for steno (tools/) and shipped in models/, once there is one.
constexpr const char* kBundledDiarizer = "steno-sortformer-small";

std::string default_diarizer_dir() {
  if (const char* env = std::getenv("STENO_DIARIZER"); env && *env) return env;
  std::vector<fs::path> candidates;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) candidates.push_back(exe.parent_path() / "../share/steno/models" / kBundledDiarizer);
  candidates.push_back(fs::path(STENO_SOURCE_DIR) / "models" / kBundledDiarizer);
  for (const auto& c : candidates)
    if (fs::exists(c / "config.json")) return fs::weakly_canonical(c).string();
  fail(ErrorCode::kNotFound,
       "no --diarizer given, $STENO_DIARIZER is unset, and there is no bundled diarizer (models/{}) in this build; "
       "pass a NeMo Sortformer checkpoint (--diarizer X.nemo, or `steno model pull "
       "nvidia/diar_streaming_sortformer_4spk-v2`)",
       kBundledDiarizer);
}

std::string model_path(const std::string& given) {
  if (!nemo::is_nemo_file(given)) return given;
  const nemo::CachedModel m = nemo::cached_model(given, nemo::cache_root(), [](const std::string& line) {
    std::fprintf(stderr, "steno: %s\n", line.c_str());
  });
  return m.dir.string();
}

std::string resolve_model_dir(const std::string& given) {
  return model_path(given.empty() ? default_model_dir() : given);
}

std::string resolve_diarizer_dir(const std::string& given) {
  return model_path(given.empty() ? default_diarizer_dir() : given);
}

}  // namespace steno::cli

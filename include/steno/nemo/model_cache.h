// The model cache: a NeMo checkpoint (.nemo) given where a model directory is taken is imported once
// (steno::nemo::import_nemo, default options) into a directory keyed by the checkpoint's SHA-256, and that directory
// is used from then on. `steno model pull` downloads into the same cache. Layout under the root:
//   models/<sha256>/<name>/       the model directory, renamed into place once complete (never seen half written);
//                                 <name> is the checkpoint's file name without .nemo, as `steno serve` names it
//   models/<sha256>/source.json   where it came from: {"source", "file", "bytes"} (written after the import)
//   locks/<sha256>.lock    held (flock) while one process imports; another waits, then takes its result
//   hashes/<key>           a file's SHA-256 beside its device, inode, size and mtime, so that it is hashed once
//   downloads/             `steno model pull`'s partial downloads (<name>.part)
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace steno::nemo {

// $STENO_CACHE_DIR, else $XDG_CACHE_HOME/steno, else $HOME/.cache/steno. kNotFound when none of them is set.
std::filesystem::path cache_root();

// Whether `path` names a .nemo checkpoint rather than a model directory: it ends in ".nemo" and is not a directory
// (a missing one is a checkpoint, so that cached_model() says it is missing).
bool is_nemo_file(const std::filesystem::path& path);

// Progress lines for a person ("importing X.nemo into the cache (first use) ...").
using CacheLog = std::function<void(const std::string&)>;

struct CachedModel {
  std::filesystem::path dir;  // <root>/models/<sha256>/<name>
  std::string sha256;
  bool imported = false;  // false: it was in the cache already (or another process imported it meanwhile)
};

// The model directory of `nemo`, imported into the cache on first use. Safe against other processes doing the
// same at once: one imports, the others wait for it and take its directory. A checkpoint that cannot be imported
// throws as import_nemo throws and leaves nothing under models/.
CachedModel cached_model(const std::filesystem::path& nemo, const std::filesystem::path& root,
                         const CacheLog& log = {});

// The same for a checkpoint whose SHA-256 is already known (a verified download): `name` names the model (its
// directory and config.json's name), `source` is recorded as where it came from (e.g. a Hub URL).
CachedModel cache_import(const std::filesystem::path& nemo, const std::string& sha256, const std::string& name,
                         const std::string& source, const std::filesystem::path& root, const CacheLog& log = {});

// The complete model directory the cache holds for a checkpoint of this hash, or "" when there is none.
std::filesystem::path find_cached_model(const std::filesystem::path& root, const std::string& sha256);

struct CacheEntry {
  std::string sha256;
  std::string source;      // the recorded source ("" if none was recorded)
  std::string name;        // the model's name (its directory's)
  std::string model_type;  // config.json's model_type
  uint64_t bytes = 0;      // the model directory's size on disk
  std::filesystem::path dir;
};

// Every complete model under <root>/models, by source then hash (staging directories and damaged entries skipped).
std::vector<CacheEntry> list_cached_models(const std::filesystem::path& root);

}  // namespace steno::nemo

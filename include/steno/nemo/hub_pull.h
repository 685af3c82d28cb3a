// `steno model pull`: a NeMo checkpoint (.nemo) downloaded from the Hugging Face Hub (libcurl) and imported into
// the model cache (model_cache.h) or a directory of one's choosing. The Hub's layout:
//   {endpoint}/api/models/{repo}/revision/{rev}?blobs=true   JSON: siblings [{rfilename, lfs: {sha256, size}}]
//   {endpoint}/{repo}/resolve/{rev}/{file}                   the file (usually a redirect to a CDN)
// The download goes to <cache>/downloads/<sha256>.part and resumes from what is there ("Range: bytes=N-"), both
// after a connection lost mid-way (retried within the run) and in a later run; it is checked against the Hub's
// size and SHA-256 before anything is imported, and a file that does not match is deleted.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include "steno/nemo/model_cache.h"

namespace steno::nemo {

struct PullOptions {
  std::string repo;                // "nvidia/parakeet-tdt-0.6b-v2"
  std::string revision = "main";   // a branch, tag or commit
  std::string endpoint;            // "": $HF_ENDPOINT, else https://huggingface.co
  std::string file;                // the repository's .nemo to take ("": its only one)
  std::string token;               // "": $HF_TOKEN; sent as "Authorization: Bearer" (never to a redirect's host)
  std::filesystem::path out;       // "": import into the cache; else a model directory (import_nemo's rules)
  std::filesystem::path cache;     // the cache's root: downloads/ and models/
  long connect_timeout_s = 10;     // how long to try to reach a host before giving up
  int attempts = 5;                // downloads tried (each resuming the last) before giving up
  CacheLog log;                    // lines for a person
  // Called as bytes arrive: the bytes the file has so far (resumed ones included) and its size (0: not known).
  std::function<void(uint64_t have, uint64_t total)> progress;
};

struct PullResult {
  std::filesystem::path dir;  // the model directory
  std::string sha256;         // the checkpoint's
  std::string file;           // its name in the repository
  bool downloaded = false;    // false: the cache had it already
};

// The Hub's base URL: `given`, else $HF_ENDPOINT, else https://huggingface.co (without a trailing '/').
std::string hub_endpoint(const std::string& given);

// Downloads and imports as above. Throws steno::Error: kUnavailable (the Hub cannot be reached, naming the URL; it
// refuses access (401, 403: HF_TOKEN); a download that keeps breaking off, its part kept for the next run),
// kNotFound (no such repository, revision or file), kInvalidArgument (no .nemo in the repository, or several and no
// `file`; a bad name), kDataLoss (metadata that is not the Hub's, a download whose size or SHA-256 is not the
// Hub's: deleted), and whatever the import throws.
PullResult pull_model(const PullOptions& options);

}  // namespace steno::nemo

// `steno serve --share-weights`: the worker processes of one GPU map one device copy of the model's weights
// instead of loading one each. The first worker started makes the copy in exportable device memory
// (core/cuda_shared_memory.h) and sends its descriptor with its Hello; the server keeps that descriptor and
// gives it to every later worker, which maps the memory and loads the model into it. Every worker, the creator
// as the importers, loads the model normally with an arena over that memory as its weight allocator
// (core/weight_arena.h): workers of one identity (the same program, model files and dtype: weights_identity)
// ask for the same allocations in the same order, so their tensors land on the same offsets and the bytes each
// writes are the same (ops::place writes every weight byte once, with its final value, from the host); an
// importer's upload leaves the copy as it was, also while other workers read it.
//
// It degrades, loudly, and never fails the fleet: a creator that cannot make or export the memory (a driver or
// an MPS setting that refuses it) loads private weights and says why in its Hello; an importer that cannot map
// the memory, or whose identity differs from the copy's, loads private weights and says why.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "steno/asr/model.h"
#include "steno/core/dtype.h"
#include "steno/core/unique_fd.h"

namespace steno::serve::fleet {

enum class WeightsRole {
  kPrivate,  // its own weights (--share-weights off, or sharing did not work out)
  kExport,   // make the shared copy and export it
  kImport,   // map the copy another worker made
};

struct WeightsShare {
  WeightsRole role = WeightsRole::kPrivate;
  int import_fd = -1;    // kImport: the memory's descriptor (this process's to close)
  uint64_t bytes = 0;    // kImport: the copy's size; kExport: the size an earlier creator measured, or 0
  uint64_t layout = 0;   // ... and that copy's weights_identity, which this worker's must equal
};

struct WorkerWeights {
  std::shared_ptr<const asr::AsrModel> model;  // keeps the shared memory mapped while it lives
  bool shared = false;   // the weights are in the shared copy
  uint64_t bytes = 0;    // that copy's size and weights_identity (0 when not shared)
  uint64_t layout = 0;
  std::string note;      // why the weights are private although sharing was asked for
  UniqueFd export_fd;    // kExport, when shared: the descriptor the Hello carries to the server
};

// The model directory's regular files by name, size and modification time: a model updated in place while the
// fleet serves gets another identity (its weights may keep every size), so a worker restarted afterwards loads
// private weights instead of writing the new ones into the copy the others still read.
uint64_t model_files_identity(const std::string& model_dir);

// What the copy's layout follows from: this program as it is on disk (a worker restarted after an upgrade in
// place may lay the weights out otherwise), the model's files (model_files_identity), the dtype and whether the
// linear layers are FP8. Workers of equal identity ask for the same allocations in the same order: an importer
// loads straight into the copy, and a creator after a group restart reuses the size an earlier one measured
// instead of loading twice.
uint64_t weights_identity(const std::string& model_dir, DType dtype, bool fp8_linears = false);

// Loads the model as `share` asks (a plain load for kPrivate). Falls back to private weights, with a warning
// naming the reason (also in `note`), when sharing does not work out. Throws steno::Error only when the model
// itself cannot be loaded.
WorkerWeights load_worker_model(const std::string& model_dir, const asr::ModelOverrides& overrides,
                                const WeightsShare& share, int worker_index);

}  // namespace steno::serve::fleet

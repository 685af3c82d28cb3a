#include "steno/serve/fleet/shared_weights.h"

#include <spdlog/spdlog.h>

#include <fmt/format.h>
#include <algorithm>
#include <filesystem>
#include <functional>
#include <vector>

#include "steno/core/cuda_shared_memory.h"
#include "steno/core/error.h"
#include "steno/core/weight_arena.h"

namespace steno::serve::fleet {
namespace {

struct Layout {
  uint64_t bytes = 0;
  uint64_t fingerprint = 0;  // the arena's: the sizes asked for, in order
  uint64_t files = 0;        // the model files' identity (model_files_identity)

  // What the creator sends and an importer must match: equal sizes in equal order are not enough, the bytes must
  // be the same too, or an importer would overwrite the copy the others run on with other weights.
  uint64_t key() const { return fingerprint ^ (files * 0x9e3779b97f4a7c15ull); }
};

// What the model's device weights take in an arena, learned by loading it once with ordinary device memory
// (freed again before this returns).
Layout count_layout(const std::string& dir, const asr::ModelOverrides& overrides) {
  const uint64_t files = model_files_identity(dir);
  cuda::WeightCountingScope counting(overrides.device.index);
  std::shared_ptr<const asr::AsrModel> model = asr::AsrModel::load(dir, overrides);
  return {counting.bytes(), counting.layout(), files};
}

// The model with its weights in `memory`, which must hold `expected.bytes`. The memory, its arena and the model
// live together; the model goes first (members are destroyed in reverse order).
struct SharedModel {
  std::unique_ptr<cuda::SharedDeviceMemory> memory;
  std::unique_ptr<ArenaAllocator> arena;
  std::shared_ptr<const asr::AsrModel> model;
};

std::shared_ptr<const asr::AsrModel> load_into(std::unique_ptr<cuda::SharedDeviceMemory> memory, Layout expected,
                                               const std::string& dir, const asr::ModelOverrides& overrides) {
  auto s = std::make_shared<SharedModel>();
  s->memory = std::move(memory);
  // Exactly the expected size, not the rounded-up region: a load that asks for more fails before it writes
  // past what the copy's layout covers.
  s->arena = std::make_unique<ArenaAllocator>(overrides.device, s->memory->data(), expected.bytes);
  {
    cuda::WeightArenaScope scope(overrides.device.index, *s->arena);
    s->model = asr::AsrModel::load(dir, overrides);
  }
  if (s->arena->used() != expected.bytes || s->arena->layout() != expected.fingerprint)
    fail(ErrorCode::kInternal,
         "the model's weights took {} bytes with layout {:016x} in the shared copy, not the {} bytes with layout "
         "{:016x} counted before: the load is not deterministic",
         s->arena->used(), s->arena->layout(), expected.bytes, expected.fingerprint);
  return std::shared_ptr<const asr::AsrModel>(s, s->model.get());  // the model keeps its memory alive
}

WorkerWeights make_shared_copy(const std::string& dir, const asr::ModelOverrides& overrides) {
  const Layout layout = count_layout(dir, overrides);
  auto memory = cuda::SharedDeviceMemory::create(overrides.device.index, layout.bytes);
  WorkerWeights w;
  w.export_fd = UniqueFd(memory->export_fd());  // before loading: a refused export costs no second load
  w.model = load_into(std::move(memory), layout, dir, overrides);
  w.shared = true;
  w.bytes = layout.bytes;
  w.layout = layout.key();
  return w;
}

WorkerWeights map_shared_copy(const std::string& dir, const asr::ModelOverrides& overrides,
                              const WeightsShare& share, UniqueFd fd) {
  // Counted before the shared memory is touched: a load that asks for other sizes (model files changed since
  // the copy was made) must not write over the weights the other workers are running on.
  const Layout layout = count_layout(dir, overrides);
  if (layout.bytes != share.bytes || layout.key() != share.layout)
    fail(ErrorCode::kUnavailable,
         "this worker's model takes {} bytes with key {:016x}, the shared copy {} bytes with key {:016x} "
         "(did the model files change since the copy was made?)",
         layout.bytes, layout.key(), share.bytes, share.layout);
  auto memory = cuda::SharedDeviceMemory::import(overrides.device.index, fd.get(), share.bytes);
  fd.reset();  // the import holds the memory now
  WorkerWeights w;
  w.model = load_into(std::move(memory), layout, dir, overrides);
  w.shared = true;
  w.bytes = layout.bytes;
  w.layout = layout.key();
  return w;
}

}  // namespace

uint64_t model_files_identity(const std::string& model_dir) {
  namespace fs = std::filesystem;
  std::vector<fs::directory_entry> files;
  for (const auto& entry : fs::directory_iterator(model_dir))
    if (entry.is_regular_file()) files.push_back(entry);
  std::sort(files.begin(), files.end(), [](const auto& a, const auto& b) { return a.path() < b.path(); });
  LayoutFingerprint id;
  for (const auto& f : files) {
    id.add(std::hash<std::string>{}(f.path().filename().string()));
    id.add(static_cast<size_t>(f.file_size()));
    id.add(static_cast<size_t>(f.last_write_time().time_since_epoch().count()));
  }
  return id.value();
}

WorkerWeights load_worker_model(const std::string& model_dir, const asr::ModelOverrides& overrides,
                                const WeightsShare& share, int worker_index) {
  UniqueFd import_fd(share.import_fd);  // closed on every path
  WorkerWeights w;
  if (share.role == WeightsRole::kPrivate) {
    w.model = asr::AsrModel::load(model_dir, overrides);
    return w;
  }
  std::string note;
  try {
    if (overrides.device.is_cpu())
      fail(ErrorCode::kUnavailable, "weights are shared on CUDA devices only, and this worker runs on the CPU");
    if (share.role == WeightsRole::kExport) return make_shared_copy(model_dir, overrides);
    STENO_CHECK(import_fd.valid(), "worker {}: importing shared weights needs their descriptor", worker_index);
    return map_shared_copy(model_dir, overrides, share, std::move(import_fd));
  } catch (const Error& e) {
    note = e.what();
  }
  spdlog::warn("worker {}: {} the shared weights ({}); loading private weights", worker_index,
               share.role == WeightsRole::kExport ? "cannot make" : "cannot use", note);
  w.model = asr::AsrModel::load(model_dir, overrides);
  w.note = std::move(note);
  return w;
}

}  // namespace steno::serve::fleet

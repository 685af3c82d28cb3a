#include "steno/serve/fleet/shared_weights.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <fmt/format.h>
#include <algorithm>
#include <filesystem>
#include <functional>
#include <vector>

#include "core/cuda_shared_memory.h"
#include "steno/core/error.h"
#include "core/weight_arena.h"

namespace steno::serve::fleet {
namespace {

// What the model's device weights take in an arena: their size and the fingerprint of the sizes in order.
struct Layout {
  uint64_t bytes = 0;
  uint64_t fingerprint = 0;  // 0: not counted in this process (the size came from an earlier creator)
};

// The layout, learned by loading the model once with ordinary device memory (freed again before this returns).
Layout count_layout(const std::string& dir, const asr::ModelOverrides& overrides) {
  cuda::WeightCountingScope counting(overrides.device.index);
  std::shared_ptr<const asr::AsrModel> model = asr::AsrModel::load(dir, overrides);
  return {counting.bytes(), counting.layout()};
}

// The model with its weights in `memory`, `bytes` of them. The memory, its arena and the model live together; the
// model goes first (members are destroyed in reverse order).
struct SharedModel {
  std::unique_ptr<cuda::SharedDeviceMemory> memory;
  std::unique_ptr<ArenaAllocator> arena;
  std::shared_ptr<const asr::AsrModel> model;
};

std::shared_ptr<const asr::AsrModel> load_into(std::unique_ptr<cuda::SharedDeviceMemory> memory, Layout expected,
                                               const std::string& dir, const asr::ModelOverrides& overrides) {
  const uint64_t bytes = expected.bytes;
  auto s = std::make_shared<SharedModel>();
  s->memory = std::move(memory);
  // Exactly the copy's size, not the rounded-up region: a load that asks for more fails before it writes past
  // what the copy holds.
  s->arena = std::make_unique<ArenaAllocator>(overrides.device, s->memory->data(), bytes);
  {
    cuda::WeightArenaScope scope(overrides.device.index, *s->arena);
    s->model = asr::AsrModel::load(dir, overrides);
  }
  if (s->arena->used() != bytes || (expected.fingerprint != 0 && s->arena->layout() != expected.fingerprint))
    fail(ErrorCode::kInternal,
         "the model's weights took {} bytes with layout {:016x} in the shared copy, not the {} bytes{} it was made "
         "for: the load is not deterministic", s->arena->used(), s->arena->layout(), bytes,
         expected.fingerprint != 0 ? fmt::format(" with layout {:016x}", expected.fingerprint) : "");
  return std::shared_ptr<const asr::AsrModel>(s, s->model.get());  // the model keeps its memory alive
}

// The creator: the copy's size comes from the server when an earlier creator of the same identity measured it
// (a restart after a device fault then loads once), else from a counting load.
WorkerWeights make_shared_copy(const std::string& dir, const asr::ModelOverrides& overrides,
                               const WeightsShare& share) {
  const uint64_t identity = weights_identity(dir, overrides.dtype, overrides.fp8_linears);
  const Layout layout =
      share.bytes > 0 && share.layout == identity ? Layout{share.bytes, 0} : count_layout(dir, overrides);
  auto memory = cuda::SharedDeviceMemory::create(overrides.device.index, layout.bytes);
  WorkerWeights w;
  w.export_fd = UniqueFd(memory->export_fd());  // before loading: a refused export costs no load
  w.model = load_into(std::move(memory), layout, dir, overrides);
  w.shared = true;
  w.bytes = layout.bytes;
  w.layout = identity;
  return w;
}

// An importer loads straight into the copy: equal identities ask for the same allocations in the same order, so
// its tensors land on the creator's and it writes the bytes already there. Another identity never touches it.
WorkerWeights map_shared_copy(const std::string& dir, const asr::ModelOverrides& overrides,
                              const WeightsShare& share, UniqueFd fd) {
  const uint64_t identity = weights_identity(dir, overrides.dtype, overrides.fp8_linears);
  if (identity != share.layout)
    fail(ErrorCode::kUnavailable,
         "this worker's program, model files or dtype differ from the shared copy's (identity {:016x}, the copy's "
         "{:016x}): was steno or the model updated since the copy was made?",
         identity, share.layout);
  auto memory = cuda::SharedDeviceMemory::import(overrides.device.index, fd.get(), share.bytes);
  fd.reset();  // the import holds the memory now
  WorkerWeights w;
  w.model = load_into(std::move(memory), Layout{share.bytes, 0}, dir, overrides);
  w.shared = true;
  w.bytes = share.bytes;
  w.layout = identity;
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

uint64_t weights_identity(const std::string& model_dir, DType dtype, bool fp8_linears) {
  LayoutFingerprint id;
  id.add(static_cast<size_t>(model_files_identity(model_dir)));
  struct stat exe {};
  if (::stat("/proc/self/exe", &exe) == 0) {  // this program as it is on disk now
    id.add(static_cast<size_t>(exe.st_ino));
    id.add(static_cast<size_t>(exe.st_size));
    id.add(static_cast<size_t>(exe.st_mtim.tv_sec) * 1000000000u + static_cast<size_t>(exe.st_mtim.tv_nsec));
  }
  id.add(static_cast<size_t>(dtype));
  id.add(static_cast<size_t>(fp8_linears));
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
    if (share.role == WeightsRole::kExport) return make_shared_copy(model_dir, overrides, share);
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

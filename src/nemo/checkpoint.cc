#include "steno/nemo/checkpoint.h"

#include <fmt/format.h>

#include <map>
#include <string>

#include "steno/core/error.h"
#include "steno/nemo/stored_zip.h"

namespace steno::nemo {

std::vector<CheckpointTensor> read_checkpoint(std::span<const uint8_t> archive, bool check_crc) {
  const std::vector<ZipEntry> entries = read_stored_zip(archive, check_crc);
  // PyTorch names every entry <root>/...: the root is data.pkl's folder (the file's stem when it was saved).
  const ZipEntry* pickle = nullptr;
  for (const ZipEntry& e : entries) {
    const size_t slash = e.name.find('/');
    if (slash == std::string::npos || e.name.substr(slash + 1) != "data.pkl") continue;
    if (pickle) fail(ErrorCode::kInvalidArgument, "checkpoint archive: two data.pkl ('{}', '{}')", pickle->name, e.name);
    pickle = &e;
  }
  if (!pickle) fail(ErrorCode::kInvalidArgument, "checkpoint archive: no <root>/data.pkl: not a PyTorch checkpoint");
  const std::string root = pickle->name.substr(0, pickle->name.find('/'));
  std::map<std::string, std::span<const uint8_t>> storages;
  for (const ZipEntry& e : entries)
    if (e.name.starts_with(root + "/data/")) storages[e.name.substr(root.size() + 6)] = e.data;

  std::vector<CheckpointTensor> out;
  for (TensorRef& t : read_state_dict_pickle(pickle->data)) {
    const auto s = storages.find(t.storage_key);
    if (s == storages.end())
      fail(ErrorCode::kInvalidArgument, "checkpoint archive: tensor '{}' lives in storage '{}', which it lacks",
           t.name, t.storage_key);
    const uint64_t want = static_cast<uint64_t>(t.storage_numel) * static_cast<uint64_t>(torch_type_size(t.type));
    if (s->second.size() != want)
      fail(ErrorCode::kInvalidArgument, "checkpoint archive: storage '{}' of tensor '{}' holds {} bytes, not the {} "
           "that {} elements of {} take", t.storage_key, t.name, s->second.size(), want, t.storage_numel,
           torch_type_name(t.type));
    out.push_back({std::move(t), s->second});
  }
  return out;
}

}  // namespace steno::nemo

// A PyTorch checkpoint (`torch.save`'s ZIP format; a .nemo's model_weights.ckpt) read in place: its state dict's
// tensors, each with the bytes of its storage as they lie in the archive (stored_zip.h, state_dict_pickle.h).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "steno/nemo/state_dict_pickle.h"

namespace steno::nemo {

struct CheckpointTensor {
  TensorRef ref;
  std::span<const uint8_t> storage;  // the whole storage (ref.storage_numel elements of ref.type), in the archive
};

// The archive's one `<root>/data.pkl` unpickled, each tensor joined to its `<root>/data/<key>` entry, whose size
// must be what the pickle declares for its storage. Throws steno::Error(kInvalidArgument) naming what is missing
// or wrong (and whatever stored_zip.h and state_dict_pickle.h refuse).
std::vector<CheckpointTensor> read_checkpoint(std::span<const uint8_t> archive, bool check_crc = true);

}  // namespace steno::nemo

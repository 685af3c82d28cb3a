// The pickle inside a PyTorch checkpoint (`torch.save`'s archive/data.pkl; a .nemo's model_weights.ckpt) read as
// what it must be: a state dict, an ordered map from parameter names to tensors whose bytes live in the archive's
// storage files. Pickle is a program for a stack machine, and a general unpickler runs whatever callable the file
// names (`os.system` included), so this reader knows only the opcodes a state dict uses and only the globals that
// build one -- collections.OrderedDict, torch._utils._rebuild_tensor_v2 and _rebuild_parameter, the typed storage
// classes -- and refuses anything else with an error naming it. Nothing is called: the "calls" are recognised and
// their results built here. Tensors are returned as references into their storages; reading the bytes, and
// checking that a storage holds what its tensors claim, is the archive reader's job.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace steno::nemo {

// A storage's element type, by its torch class (torch.FloatStorage, ...).
enum class TorchType { kF64, kF32, kF16, kBF16, kI64, kI32, kI16, kI8, kU8, kBool };
int torch_type_size(TorchType t);
const char* torch_type_name(TorchType t);  // "FloatStorage", ...

struct TensorRef {
  std::string name;         // the state dict's key
  std::string storage_key;  // the archive's data/<key> file
  TorchType type = TorchType::kF32;
  int64_t storage_numel = 0;  // elements the storage holds, as the pickle declares
  int64_t offset = 0;         // the tensor's first element in its storage
  std::vector<int64_t> shape, stride;
};

// The state dict `pkl` describes, in its order. Throws steno::Error(kInvalidArgument) for anything that is not a
// state dict of tensors: an opcode or global outside the set above (naming it), a malformed or truncated pickle, a
// value of the wrong kind where a tensor's parts belong, a key that is not a string, a negative size or stride.
// Bounded work and memory: one pass over the bytes, a stack and memo no larger than the input allows.
std::vector<TensorRef> read_state_dict_pickle(std::span<const uint8_t> pkl);

}  // namespace steno::nemo

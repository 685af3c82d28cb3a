// How a ModelConfig becomes what the core serves: the model's identity as clients see it, its batcher settings, and
// the executors its sharing mode asks for (lanes or green lanes over one loaded model; worker processes, under an
// MPS daemon where asked, that load the model themselves).
#pragma once

#include <memory>
#include <string>

#include "steno/serve/config.h"
#include "serve/fleet/fault_group.h"
#include "serve/fleet/mps.h"
#include "serve/inference_core.h"

namespace steno::serve {

struct BuiltModel {
  ModelSpec spec;
  // Its device groups, one per entry of --device (spec.devices too, but the spec is handed to the core; the
  // diarizer's groups are these)
  std::vector<DeviceGroup> devices;
  std::shared_ptr<fleet::MpsDaemon> mps;  // share mps: the daemon the workers are clients of (one for the host)
  // share mps, by device group: the workers that fault together -- every client of one GPU, the diarizer's too
  std::vector<std::shared_ptr<fleet::FaultGroup>> fault_groups;
  // share green, by device group: the device's SMs the lanes were carved from; the diarizer's green lanes take
  // theirs from what is left
  std::vector<std::shared_ptr<steno::cuda::GreenPartition>> green;
};

// The name clients use for a model: `name`, else the directory's last component.
std::string served_name(const ModelConfig& model);

// The diarizer of `config.diarizer` (dir set) on the transcription model's devices and dtype, answering task
// "diarization", named after its directory, alias "diarizer": lanes over one loaded Sortformer model, worker
// processes, green-context lanes, or MPS clients -- of `asr`'s daemon and fault group when the transcription
// model runs under MPS too (a fault on a GPU restarts both fleets' clients of it as one group), else of its own;
// green lanes on SMs that `asr`'s green lanes do not use. A device group of its own on each of `asr`'s devices.
ModelSpec build_diarizer(const ServeConfig& config, const BuiltModel& asr);

// A device group per entry of --device, each with its own executors and weight copy (device_groups.h). Throws
// kUnavailable for a mode this machine cannot run (mps and green need a CUDA device), before anything is loaded;
// the model's own load errors otherwise.
BuiltModel build_model(const ServeConfig& config);

}  // namespace steno::serve

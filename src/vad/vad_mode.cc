// The VAD setting's names and when it applies: apart from vad.cc so that what parses settings (the server's config,
// its fuzz target) does not link the VAD model.
#include <string_view>

#include "steno/core/error.h"
#include "steno/vad/vad.h"

namespace steno::vad {

VadMode parse_vad_mode(std::string_view s) {
  if (s == "off") return VadMode::kOff;
  if (s == "on") return VadMode::kOn;
  if (s == "auto") return VadMode::kAuto;
  fail(ErrorCode::kInvalidArgument, "vad must be off, on or auto, got '{}'", s.substr(0, 64));
}

const char* vad_mode_name(VadMode m) {
  switch (m) {
    case VadMode::kOff: return "off";
    case VadMode::kOn: return "on";
    case VadMode::kAuto: return "auto";
  }
  return "?";
}

bool vad_applies(VadMode m, double audio_seconds) {
  return m == VadMode::kOn || (m == VadMode::kAuto && audio_seconds > kAutoMinSeconds);
}

}  // namespace steno::vad

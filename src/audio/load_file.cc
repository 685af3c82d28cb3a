#include "file_bytes.h"
#include "steno/audio/decode.h"

namespace steno::audio {

DecodedAudio load_audio_file(const std::string& path, const AudioLimits& limits) {
  const FileBytes file(path, limits.max_bytes);
  return decode_audio(file.bytes(), limits);
}

}  // namespace steno::audio

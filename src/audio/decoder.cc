#include "decoder.h"

#include "mpg123_reader.h"
#include "sndfile_reader.h"
#include "vorbis_reader.h"

namespace steno::audio {

std::unique_ptr<Decoder> open_decoder(std::span<const uint8_t> bytes, const Sniffed& sniffed) {
  if (sniffed.container == Container::kMp3) return std::make_unique<Mpg123Reader>(bytes, sniffed.audio_offset);
  if (sniffed.container == Container::kOggVorbis) return std::make_unique<VorbisReader>(bytes);
  return std::make_unique<SndfileReader>(bytes, sniffed);
}

}  // namespace steno::audio

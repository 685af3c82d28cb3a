#include "decoder.h"

#include "mpg123_reader.h"
#include "sndfile_reader.h"
#include "steno/core/error.h"
#include "vorbis_reader.h"
#if STENO_HAVE_FFMPEG
#include "ffmpeg_reader.h"
#endif

namespace steno::audio {

std::unique_ptr<Decoder> open_decoder(std::span<const uint8_t> bytes, const Sniffed& sniffed) {
  if (sniffed.container == Container::kMp3) return std::make_unique<Mpg123Reader>(bytes, sniffed.audio_offset);
  if (sniffed.container == Container::kOggVorbis) return std::make_unique<VorbisReader>(bytes);
  if (decoded_by_ffmpeg(sniffed.container)) {
#if STENO_HAVE_FFMPEG
    return std::make_unique<FfmpegReader>(bytes, sniffed.container);
#else
    fail(ErrorCode::kUnimplemented, "{} is not supported by this build of steno (built without FFmpeg: "
         "STENO_WITH_FFMPEG); send {}", container_name(sniffed.container), supported_formats());
#endif
  }
  return std::make_unique<SndfileReader>(bytes, sniffed);
}

}  // namespace steno::audio

#include "ffmpeg_api.h"

#include <string>

#include "core/run_time_library.h"
#include "steno/core/error.h"

namespace steno::audio {
namespace {

// STENO_AV*_LIBRARY, STENO_SWRESAMPLE_LIBRARY: the files CMake found, by their sonames (e.g.
// /usr/lib/x86_64-linux-gnu/libavformat.so.59; the top CMakeLists.txt).
const char* const kPurpose = "MP4 and WebM audio need FFmpeg's libraries; Debian: libavformat59 libswresample4";

// The library's own version, whose major must be the headers' (LIB*_VERSION_MAJOR).
void check_major(RunTimeLibrary& lib, const char* library, const char* version_symbol, unsigned expected) {
  unsigned (*version)() = nullptr;
  lib.bind(version, version_symbol);
  lib.require_all();
  const unsigned major = version() >> 16;
  if (major != expected)
    fail(ErrorCode::kUnavailable, "{} is version {}, steno was built with {} ({})", library, major, expected,
         kPurpose);
}

FfmpegApi load() {
  FfmpegApi t{};
  RunTimeLibrary util(configured_library(STENO_AVUTIL_LIBRARY), kPurpose);
  check_major(util, "libavutil", "avutil_version", LIBAVUTIL_VERSION_MAJOR);
  util.bind(t.av_malloc, "av_malloc");
  util.bind(t.av_free, "av_free");
  util.bind(t.av_freep, "av_freep");
  util.bind(t.av_strdup, "av_strdup");
  util.bind(t.av_strerror, "av_strerror");
  util.bind(t.av_log_set_level, "av_log_set_level");
  util.bind(t.av_frame_alloc, "av_frame_alloc");
  util.bind(t.av_frame_unref, "av_frame_unref");
  util.bind(t.av_frame_free, "av_frame_free");
  util.bind(t.av_rescale, "av_rescale");
  util.bind(t.av_rescale_q, "av_rescale_q");
  util.bind(t.av_channel_layout_default, "av_channel_layout_default");
  util.bind(t.av_channel_layout_copy, "av_channel_layout_copy");
  util.bind(t.av_channel_layout_uninit, "av_channel_layout_uninit");
  util.bind(t.av_get_sample_fmt_name, "av_get_sample_fmt_name");
  util.require_all();

  RunTimeLibrary resample(configured_library(STENO_SWRESAMPLE_LIBRARY), kPurpose);
  check_major(resample, "libswresample", "swresample_version", LIBSWRESAMPLE_VERSION_MAJOR);
  resample.bind(t.swr_alloc_set_opts2, "swr_alloc_set_opts2");
  resample.bind(t.swr_init, "swr_init");
  resample.bind(t.swr_convert, "swr_convert");
  resample.bind(t.swr_free, "swr_free");
  resample.require_all();

  RunTimeLibrary codec(configured_library(STENO_AVCODEC_LIBRARY), kPurpose);
  check_major(codec, "libavcodec", "avcodec_version", LIBAVCODEC_VERSION_MAJOR);
  codec.bind(t.avcodec_find_decoder, "avcodec_find_decoder");
  codec.bind(t.avcodec_get_name, "avcodec_get_name");
  codec.bind(t.avcodec_alloc_context3, "avcodec_alloc_context3");
  codec.bind(t.avcodec_parameters_to_context, "avcodec_parameters_to_context");
  codec.bind(t.avcodec_open2, "avcodec_open2");
  codec.bind(t.avcodec_send_packet, "avcodec_send_packet");
  codec.bind(t.avcodec_receive_frame, "avcodec_receive_frame");
  codec.bind(t.avcodec_free_context, "avcodec_free_context");
  codec.bind(t.av_packet_alloc, "av_packet_alloc");
  codec.bind(t.av_packet_unref, "av_packet_unref");
  codec.bind(t.av_packet_free, "av_packet_free");
  codec.require_all();

  RunTimeLibrary format(configured_library(STENO_AVFORMAT_LIBRARY), kPurpose);
  check_major(format, "libavformat", "avformat_version", LIBAVFORMAT_VERSION_MAJOR);
  format.bind(t.avformat_alloc_context, "avformat_alloc_context");
  format.bind(t.avio_alloc_context, "avio_alloc_context");
  format.bind(t.avio_context_free, "avio_context_free");
  format.bind(t.av_find_input_format, "av_find_input_format");
  format.bind(t.avformat_open_input, "avformat_open_input");
  format.bind(t.avformat_find_stream_info, "avformat_find_stream_info");
  format.bind(t.av_find_best_stream, "av_find_best_stream");
  format.bind(t.av_read_frame, "av_read_frame");
  format.bind(t.avformat_close_input, "avformat_close_input");
  format.require_all();

  t.av_log_set_level(AV_LOG_QUIET);  // errors reach the caller as exceptions, not as lines on stderr
  return t;
}

}  // namespace

const FfmpegApi& ffmpeg_api() { return load_once<FfmpegApi, load>(); }

}  // namespace steno::audio

// FFmpeg's libraries opened at run time, by the first file in an FFmpeg format to decode (docs/architecture.md,
// "Libraries opened when first needed"): linked, libavcodec and libavformat bring ~130 libraries (every video codec,
// TLS, network protocols) into every steno process at start, whatever it was asked to do. The functions
// ffmpeg_reader.cc calls, named as in FFmpeg, in one table; the types are FFmpeg's headers', whose major versions
// the opened libraries must have (their struct layouts are fixed per major version).
#pragma once

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/channel_layout.h>
#include <libavutil/error.h>
#include <libavutil/log.h>
#include <libavutil/mathematics.h>
#include <libavutil/mem.h>
#include <libswresample/swresample.h>
}

namespace steno::audio {

struct FfmpegApi {
  // libavformat
  decltype(&::avformat_alloc_context) avformat_alloc_context;
  decltype(&::avio_alloc_context) avio_alloc_context;
  decltype(&::avio_context_free) avio_context_free;
  decltype(&::av_find_input_format) av_find_input_format;
  decltype(&::avformat_open_input) avformat_open_input;
  decltype(&::avformat_find_stream_info) avformat_find_stream_info;
  decltype(&::av_find_best_stream) av_find_best_stream;
  decltype(&::av_read_frame) av_read_frame;
  decltype(&::avformat_close_input) avformat_close_input;
  // libavcodec
  decltype(&::avcodec_find_decoder) avcodec_find_decoder;
  decltype(&::avcodec_get_name) avcodec_get_name;
  decltype(&::avcodec_alloc_context3) avcodec_alloc_context3;
  decltype(&::avcodec_parameters_to_context) avcodec_parameters_to_context;
  decltype(&::avcodec_open2) avcodec_open2;
  decltype(&::avcodec_send_packet) avcodec_send_packet;
  decltype(&::avcodec_receive_frame) avcodec_receive_frame;
  decltype(&::avcodec_free_context) avcodec_free_context;
  decltype(&::av_packet_alloc) av_packet_alloc;
  decltype(&::av_packet_unref) av_packet_unref;
  decltype(&::av_packet_free) av_packet_free;
  // libavutil
  decltype(&::av_malloc) av_malloc;
  decltype(&::av_free) av_free;
  decltype(&::av_freep) av_freep;
  decltype(&::av_strdup) av_strdup;
  decltype(&::av_strerror) av_strerror;
  decltype(&::av_log_set_level) av_log_set_level;
  decltype(&::av_frame_alloc) av_frame_alloc;
  decltype(&::av_frame_unref) av_frame_unref;
  decltype(&::av_frame_free) av_frame_free;
  decltype(&::av_rescale) av_rescale;
  decltype(&::av_rescale_q) av_rescale_q;
  decltype(&::av_channel_layout_default) av_channel_layout_default;
  decltype(&::av_channel_layout_copy) av_channel_layout_copy;
  decltype(&::av_channel_layout_uninit) av_channel_layout_uninit;
  decltype(&::av_get_sample_fmt_name) av_get_sample_fmt_name;
  // libswresample
  decltype(&::swr_alloc_set_opts2) swr_alloc_set_opts2;
  decltype(&::swr_init) swr_init;
  decltype(&::swr_convert) swr_convert;
  decltype(&::swr_free) swr_free;
};

// The table, loading the four libraries (of the major versions steno was built with) and silencing FFmpeg's log on
// first use, thread-safe; throws kUnavailable naming the library that cannot be loaded or is of another version.
const FfmpegApi& ffmpeg_api();

}  // namespace steno::audio

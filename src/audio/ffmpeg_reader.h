// MP4/M4A/MOV/3GP, WebM/Matroska, raw AAC (ADTS), AMR and CAF over bytes in memory, demuxed by libavformat and
// decoded by libavcodec (FFmpeg), built only with STENO_WITH_FFMPEG. These are what browsers record (MediaRecorder:
// WebM with Opus), phones save (M4A with AAC; calls and voice notes in AMR or 3GP), Apple's tools write (CAF) and
// OpenAI's transcription API accepts besides the formats steno decodes itself.
//
// FFmpeg parses far more than steno needs, so it is held to the sniffed container's demuxer and the audio decoders
// named in ffmpeg_reader.cc (anything else is refused before a decoder opens), reads through a custom I/O context
// over the request's bytes (no files, no protocols), decodes single-threaded, and logs nothing. The best audio
// stream is decoded (a video's soundtrack too); every other stream is skipped unread. The libraries are opened by
// the first reader (ffmpeg_api.h); without them it throws kUnavailable.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "decoder.h"

namespace steno::audio {

class FfmpegReader final : public Decoder {
 public:
  FfmpegReader(std::span<const uint8_t> bytes, Container container);
  ~FfmpegReader() override;
  FfmpegReader(const FfmpegReader&) = delete;
  FfmpegReader& operator=(const FfmpegReader&) = delete;

  int channels() const override { return channels_; }
  int sample_rate() const override { return rate_; }
  // The container's duration in frames (mvhd/mdhd, the Segment's Duration, CAF's packet table): an unverified
  // claim, -1 if none (raw ADTS and AMR state none).
  int64_t frames() const override { return stated_; }
  // The claim again once decoding fell short of it by more than codec padding can explain (a cut-off upload).
  int64_t stated_frames() const override;
  bool last_frame_cut() const override { return last_cut_; }
  std::string format_name() const override { return format_name_; }
  int64_t read(float* out, int64_t frames) override;

 private:
  struct Codec;  // libavformat's, libavcodec's and libswresample's state (ffmpeg_reader.cc)

  // Decodes the next frame of the stream (or a concealed packet's silence) into pending_; false at the end.
  bool decode_more();
  enum class Received { kFrame, kConcealed, kEnd };
  // The decoder's next frame into codec_->frame, reading packets as it needs them; or a packet the decoder refused,
  // concealed in pending_ (one at a time, so that memory stays bounded by what the caller reads); or the end.
  Received receive_frame();
  // Whether a decoding error is the input's end cutting a frame (then last_frame_cut reports it) and not corruption.
  bool cut_at_the_end();
  // Silence for the packet in codec_->packet, which the decoder refused (conceals_lost_frames_).
  void conceal_packet();
  // codec_->frame as interleaved floats at the end of pending_; the first frame sets the layout and rate.
  void append_frame();

  std::unique_ptr<Codec> codec_;
  int channels_ = 0;
  int rate_ = 0;
  int64_t stated_ = -1;
  int64_t largest_frame_ = 0;  // the longest decoded frame (ALAC 4,096, AAC 1,024, Opus 960 or fewer)
  int64_t frames_read_ = 0;
  bool ended_ = false;
  bool last_cut_ = false;  // the input ends inside a packet of the stream
  // AMR: FFmpeg's decoders do not implement DTX (the comfort-noise SID frames and the no-data frames between them,
  // which phones send in pauses) and refuse damaged frames. Such a packet becomes silence of its length, as a
  // phone conceals a lost frame, rather than failing the whole recording.
  bool conceals_lost_frames_ = false;
  std::string format_name_;
  std::vector<float> pending_;  // decoded interleaved samples not yet read
  size_t pending_at_ = 0;
};

}  // namespace steno::audio

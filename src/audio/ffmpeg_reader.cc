#include "ffmpeg_reader.h"

#include <algorithm>
#include <cstring>
#include <string_view>

#include "ffmpeg_api.h"
#include "steno/core/error.h"

namespace steno::audio {

// The request's bytes as FFmpeg's input: reads and seeks within them, nothing else. (Not in the anonymous
// namespace: FfmpegReader::Codec holds one.)
struct FfmpegInput {
  std::span<const uint8_t> bytes;
  size_t pos = 0;
};

namespace {

// The only parsers FFmpeg may run on a request's bytes: the demuxer of the sniffed container, and the decoders of
// the audio codecs these containers carry in practice (FFmpeg's names; Opus and Vorbis by FFmpeg's own decoder or
// by the codec's library, whichever the build picks; AMR in 3GP and .amr files, G.711 in CAF and MOV).
struct Demuxer {
  const char* whitelist;  // the names FFmpeg may pick for the container (a demuxer registers several)
  const char* open;       // the one steno opens the input with, without probing
  const char* short_name; // for DecodedAudio::format: "mp4/aac"
};

Demuxer demuxer_for(Container c) {
  switch (c) {
    case Container::kMp4: return {"mov,mp4,m4a,3gp,3g2,mj2", "mp4", "mp4"};
    case Container::kMatroska: return {"matroska,webm", "matroska", "matroska"};
    case Container::kAdts: return {"aac", "aac", "adts"};
    case Container::kAmr: return {"amr", "amr", "amr"};
    case Container::kCaf: return {"caf", "caf", "caf"};
    case Container::kWav: case Container::kAiff: case Container::kFlac: case Container::kOggVorbis:
    case Container::kOggOpus: case Container::kMp3: break;
  }
  fail(ErrorCode::kInternal, "{} is not decoded by FFmpeg", container_name(c));
}

constexpr const char* kDecoders =
    "aac,aac_fixed,opus,libopus,vorbis,libvorbis,mp3float,mp3,flac,alac,amrnb,amrwb,pcm_alaw,pcm_mulaw,"
    "pcm_s16le,pcm_s16be,pcm_s24le,pcm_s24be,pcm_s32le,pcm_s32be,pcm_f32le,pcm_f32be,pcm_f64le,pcm_f64be,pcm_u8,"
    "pcm_s8";
constexpr int kIoBufferBytes = 64 * 1024;

std::string av_error(int code) {
  const FfmpegApi& av = ffmpeg_api();
  char text[AV_ERROR_MAX_STRING_SIZE] = {};
  av.av_strerror(code, text, sizeof text);
  return text;
}

bool allowed_decoder(std::string_view name) {
  const std::string_view list(kDecoders);
  for (size_t at = 0; at <= list.size();) {
    const size_t end = std::min(list.find(',', at), list.size());
    if (list.substr(at, end - at) == name) return true;
    at = end + 1;
  }
  return false;
}

int read_source(void* opaque, uint8_t* buffer, int size) {
  auto& s = *static_cast<FfmpegInput*>(opaque);
  const size_t n = std::min(s.bytes.size() - s.pos, static_cast<size_t>(std::max(size, 0)));
  if (n == 0) return AVERROR_EOF;
  std::memcpy(buffer, s.bytes.data() + s.pos, n);
  s.pos += n;
  return static_cast<int>(n);
}

int64_t seek_source(void* opaque, int64_t offset, int whence) {
  auto& s = *static_cast<FfmpegInput*>(opaque);
  const auto size = static_cast<int64_t>(s.bytes.size());
  int64_t to = 0;
  switch (whence & ~AVSEEK_FORCE) {
    case AVSEEK_SIZE: return size;
    case SEEK_SET: to = offset; break;
    case SEEK_CUR: to = static_cast<int64_t>(s.pos) + offset; break;
    case SEEK_END: to = size + offset; break;
    default: return AVERROR(EINVAL);
  }
  if (to < 0 || to > size) return AVERROR(EINVAL);
  s.pos = static_cast<size_t>(to);
  return to;
}

}  // namespace

// The demuxing and decoding state; the destructor frees whatever was allocated, on every path.
struct FfmpegReader::Codec {
  const FfmpegApi& av = ffmpeg_api();  // loads the libraries on first use (throws kUnavailable without them)
  FfmpegInput source;
  AVIOContext* io = nullptr;
  AVFormatContext* format = nullptr;
  AVCodecContext* decoder = nullptr;
  SwrContext* swr = nullptr;
  AVPacket* packet = nullptr;
  AVFrame* frame = nullptr;
  int stream = -1;
  bool draining = false;  // the input is exhausted; the decoder gives out what it holds

  ~Codec() {
    av.av_frame_free(&frame);
    av.av_packet_free(&packet);
    av.swr_free(&swr);
    av.avcodec_free_context(&decoder);
    av.avformat_close_input(&format);  // custom I/O: the context below is ours to free
    if (io != nullptr) {
      av.av_freep(&io->buffer);
      av.avio_context_free(&io);
    }
  }
};

FfmpegReader::FfmpegReader(std::span<const uint8_t> bytes, Container container) : codec_(std::make_unique<Codec>()) {
  const char* name = container_name(container);
  const Demuxer demuxer = demuxer_for(container);
  Codec& c = *codec_;
  const FfmpegApi& av = c.av;
  c.source.bytes = bytes;
  c.packet = av.av_packet_alloc();
  c.frame = av.av_frame_alloc();
  c.format = av.avformat_alloc_context();
  auto* buffer = static_cast<uint8_t*>(av.av_malloc(kIoBufferBytes));
  if (buffer != nullptr) {
    c.io = av.avio_alloc_context(buffer, kIoBufferBytes, 0, &c.source, read_source, nullptr, seek_source);
    if (c.io == nullptr) av.av_free(buffer);
  }
  if (c.packet == nullptr || c.frame == nullptr || c.format == nullptr || c.io == nullptr)
    fail(ErrorCode::kResourceExhausted, "{}: out of memory opening the demuxer", name);
  c.format->pb = c.io;
  c.format->flags |= AVFMT_FLAG_CUSTOM_IO;
  c.format->format_whitelist = av.av_strdup(demuxer.whitelist);
  c.format->codec_whitelist = av.av_strdup(kDecoders);
  const AVInputFormat* input_format = av.av_find_input_format(demuxer.open);
  if (input_format == nullptr)
    fail(ErrorCode::kUnimplemented, "{} is not supported by this FFmpeg (it has no {} demuxer)", name, demuxer.open);
  int r = av.avformat_open_input(&c.format, nullptr, input_format, nullptr);  // frees and nulls it on failure
  if (r < 0) fail(ErrorCode::kDataLoss, "malformed or truncated {}: {}", name, av_error(r));
  r = av.avformat_find_stream_info(c.format, nullptr);
  if (r < 0) fail(ErrorCode::kDataLoss, "malformed {}: {}", name, av_error(r));

  c.stream = av.av_find_best_stream(c.format, AVMEDIA_TYPE_AUDIO, -1, -1, nullptr, 0);
  if (c.stream < 0) fail(ErrorCode::kInvalidArgument, "the {} file holds no audio stream", name);
  for (unsigned i = 0; i < c.format->nb_streams; ++i)
    if (static_cast<int>(i) != c.stream) c.format->streams[i]->discard = AVDISCARD_ALL;
  const AVStream* stream = c.format->streams[c.stream];
  const AVCodec* codec = av.avcodec_find_decoder(stream->codecpar->codec_id);
  if (codec == nullptr || !allowed_decoder(codec->name))
    fail(ErrorCode::kUnimplemented, "{} audio in {} is not supported; steno decodes AAC, Opus, Vorbis, MP3, FLAC, "
         "ALAC, AMR and PCM there", av.avcodec_get_name(stream->codecpar->codec_id), name);
  c.decoder = av.avcodec_alloc_context3(codec);
  if (c.decoder == nullptr) fail(ErrorCode::kResourceExhausted, "{}: out of memory opening the decoder", name);
  r = av.avcodec_parameters_to_context(c.decoder, stream->codecpar);
  if (r >= 0) {
    c.decoder->thread_count = 1;  // a server decodes many requests side by side
    c.decoder->codec_whitelist = av.av_strdup(kDecoders);
    r = av.avcodec_open2(c.decoder, codec, nullptr);
  }
  if (r < 0) fail(ErrorCode::kDataLoss, "malformed {} audio in {}: {}", codec->name, name, av_error(r));
  format_name_ = std::string(demuxer.short_name) + "/" + codec->name;
  conceals_lost_frames_ = std::strcmp(codec->name, "amrnb") == 0 || std::strcmp(codec->name, "amrwb") == 0;

  // The first frame decides the layout and rate (HE-AAC's stereo and doubled rate show only in decoded frames);
  // what the codec parameters say stands only for a stream with no frame at all.
  channels_ = c.decoder->ch_layout.nb_channels;
  rate_ = c.decoder->sample_rate;
  if (!decode_more()) ended_ = true;
  // Raw streams (ADTS, AMR) state no length: FFmpeg guesses one from the bitrate, which is no evidence of a cut.
  if (rate_ > 0 && c.format->duration_estimation_method != AVFMT_DURATION_FROM_BITRATE) {
    if (stream->duration != AV_NOPTS_VALUE && stream->duration > 0)
      stated_ = av.av_rescale_q(stream->duration, stream->time_base, AVRational{1, rate_});
    else if (c.format->duration != AV_NOPTS_VALUE && c.format->duration > 0)
      stated_ = av.av_rescale(c.format->duration, rate_, AV_TIME_BASE);
    if (stated_ <= 0) stated_ = -1;
  }
}

FfmpegReader::~FfmpegReader() = default;

int64_t FfmpegReader::stated_frames() const {
  // Codec priming and padding (AAC's 1,024-frame delay, a last packet's fill) leave decoded lengths a little off a
  // container's duration, and CAF's counts whole packets (FFmpeg reads no remainder from its packet table: up to
  // one ALAC frame of 4,096 more than the audio holds), so only a larger gap counts as audio missing.
  if (!ended_ || stated_ < 0) return -1;
  const int64_t slack = std::max<int64_t>({rate_ / 10, stated_ / 50, largest_frame_});
  return stated_ - frames_read_ > slack ? stated_ : -1;
}

bool FfmpegReader::decode_more() {
  switch (receive_frame()) {
    case Received::kFrame: append_frame(); return true;
    case Received::kConcealed: return true;
    case Received::kEnd: return false;
  }
  return false;
}

FfmpegReader::Received FfmpegReader::receive_frame() {
  Codec& c = *codec_;
  const FfmpegApi& av = c.av;
  for (;;) {
    int r = av.avcodec_receive_frame(c.decoder, c.frame);
    if (r == AVERROR_EOF) return Received::kEnd;
    if (r < 0 && r != AVERROR(EAGAIN)) {
      if (cut_at_the_end()) return Received::kEnd;
      fail(ErrorCode::kDataLoss, "corrupt {}: {}", format_name_, av_error(r));
    }
    if (r == 0) return Received::kFrame;
    r = av.av_read_frame(c.format, c.packet);
    if (r < 0) {  // the end of the input, or the input cut off: what the decoder holds is the rest
      if (c.draining) return Received::kEnd;
      c.draining = true;
      av.avcodec_send_packet(c.decoder, nullptr);
      continue;
    }
    // A packet the input ends inside comes flagged corrupt (av_get_packet's short read): a cut-off upload, whose
    // audio up to there is decoded and whose end is reported (last_frame_cut), as for the other containers.
    const bool ours = c.packet->stream_index == c.stream;
    if (ours && (c.packet->flags & AV_PKT_FLAG_CORRUPT) != 0 && c.source.pos == c.source.bytes.size()) {
      last_cut_ = true;
      r = 0;
    } else if (ours) {
      r = av.avcodec_send_packet(c.decoder, c.packet);
      if (r < 0 && conceals_lost_frames_ && (r == AVERROR_PATCHWELCOME || r == AVERROR_INVALIDDATA)) {
        conceal_packet();
        av.av_packet_unref(c.packet);
        return Received::kConcealed;
      }
    }
    av.av_packet_unref(c.packet);
    if (r < 0 && !cut_at_the_end()) fail(ErrorCode::kDataLoss, "corrupt {}: {}", format_name_, av_error(r));
  }
}

void FfmpegReader::conceal_packet() {
  // The packet's own duration (20 ms an AMR frame, a few frames a 3GP sample), held to 20 ms .. 1 s so that a
  // container's claim cannot make it large.
  if (rate_ <= 0 || channels_ <= 0) return;  // a malformed stream, which decode_audio refuses once it is open
  const Codec& c = *codec_;
  const AVStream& stream = *c.format->streams[c.stream];
  int64_t frames = rate_ / 50;
  if (c.packet->duration > 0)
    frames = std::clamp<int64_t>(c.av.av_rescale_q(c.packet->duration, stream.time_base, AVRational{1, rate_}),
                                 rate_ / 50, rate_);
  pending_.resize(pending_.size() + static_cast<size_t>(frames) * static_cast<size_t>(channels_), 0.0f);
}

bool FfmpegReader::cut_at_the_end() {
  // Raw streams (ADTS, AMR) hand a frame the input ends inside to the decoder as it is, unflagged, and the decoder
  // rejects it: that is a cut-off upload too, once the demuxer has read past the end of the bytes.
  if (codec_->io->eof_reached == 0) return false;
  last_cut_ = true;
  return true;
}

void FfmpegReader::append_frame() {
  Codec& c = *codec_;
  const FfmpegApi& av = c.av;
  AVFrame& f = *c.frame;
  if (c.swr == nullptr) {
    channels_ = f.ch_layout.nb_channels;
    rate_ = f.sample_rate;
    if (channels_ <= 0 || rate_ <= 0)
      fail(ErrorCode::kDataLoss, "malformed {}: a frame of {} channels at {} Hz", format_name_, channels_, rate_);
    AVChannelLayout layout{};
    if (f.ch_layout.order == AV_CHANNEL_ORDER_UNSPEC) av.av_channel_layout_default(&layout, channels_);
    else av.av_channel_layout_copy(&layout, &f.ch_layout);
    const int r = av.swr_alloc_set_opts2(&c.swr, &layout, AV_SAMPLE_FMT_FLT, rate_, &layout,
                                      static_cast<AVSampleFormat>(f.format), rate_, 0, nullptr);
    av.av_channel_layout_uninit(&layout);
    if (r < 0 || av.swr_init(c.swr) < 0)
      fail(ErrorCode::kDataLoss, "{}: cannot convert {} samples", format_name_,
           av.av_get_sample_fmt_name(static_cast<AVSampleFormat>(f.format)));
  } else if (f.ch_layout.nb_channels != channels_ || f.sample_rate != rate_) {
    fail(ErrorCode::kDataLoss, "{}: the audio changes from {} channels at {} Hz to {} at {} Hz mid-stream",
         format_name_, channels_, rate_, f.ch_layout.nb_channels, f.sample_rate);
  }
  largest_frame_ = std::max<int64_t>(largest_frame_, std::min(f.nb_samples, rate_));
  const size_t at = pending_.size();
  pending_.resize(at + static_cast<size_t>(f.nb_samples) * static_cast<size_t>(channels_));
  auto* out = reinterpret_cast<uint8_t*>(pending_.data() + at);
  const int n = av.swr_convert(c.swr, &out, f.nb_samples, const_cast<const uint8_t**>(f.extended_data), f.nb_samples);
  av.av_frame_unref(c.frame);
  if (n < 0) fail(ErrorCode::kDataLoss, "{}: sample conversion failed: {}", format_name_, av_error(n));
  pending_.resize(at + static_cast<size_t>(n) * static_cast<size_t>(channels_));
}

int64_t FfmpegReader::read(float* out, int64_t frames) {
  int64_t done = 0;
  while (done < frames) {
    if (pending_at_ == pending_.size()) {
      pending_.clear();
      pending_at_ = 0;
      if (ended_ || !decode_more()) {
        ended_ = true;
        break;
      }
      continue;
    }
    const auto ch = static_cast<size_t>(channels_);
    const int64_t n = std::min<int64_t>(static_cast<int64_t>((pending_.size() - pending_at_) / ch), frames - done);
    std::memcpy(out + done * channels_, pending_.data() + pending_at_, static_cast<size_t>(n) * ch * sizeof(float));
    pending_at_ += static_cast<size_t>(n) * ch;
    done += n;
  }
  frames_read_ += done;
  return done;
}

}  // namespace steno::audio

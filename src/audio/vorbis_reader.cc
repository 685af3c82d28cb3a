#include "vorbis_reader.h"

#include <ogg/ogg.h>
#include <vorbis/codec.h>

#include <algorithm>
#include <climits>
#include <cstring>

#include "steno/core/error.h"

namespace steno::audio {

// The decoding state, each part cleared by the destructor exactly when it was initialised.
struct VorbisReader::Codec {
  std::span<const uint8_t> bytes;
  size_t fed = 0;  // bytes handed to the sync layer so far
  ogg_sync_state sync{};
  ogg_stream_state stream{};
  vorbis_info info{};
  vorbis_comment comment{};
  vorbis_dsp_state dsp{};
  vorbis_block block{};
  bool stream_open = false, headers_open = false, dsp_open = false;
  long serial = 0;
  bool end_of_link = false;  // the link's end-of-stream page is in
  int links = 0;
  int channels = 0;  // of the first link: every later one must keep them
  long rate = 0;

  explicit Codec(std::span<const uint8_t> b) : bytes(b) { ogg_sync_init(&sync); }
  ~Codec() {
    close_link();
    ogg_sync_clear(&sync);
  }

  void close_link() {
    if (dsp_open) {
      vorbis_block_clear(&block);
      vorbis_dsp_clear(&dsp);
    }
    if (headers_open) {
      vorbis_comment_clear(&comment);
      vorbis_info_clear(&info);
    }
    if (stream_open) ogg_stream_clear(&stream);
    dsp_open = headers_open = stream_open = false;
  }

  // The next page of the input (skipping bytes that are no page); false at its end.
  bool next_page(ogg_page& page) {
    for (;;) {
      const int r = ogg_sync_pageout(&sync, &page);
      if (r == 1) return true;
      if (r < 0) continue;  // bytes skipped to the next capture pattern
      if (fed == bytes.size()) return false;
      const size_t n = std::min<size_t>(bytes.size() - fed, 64 * 1024);
      char* buffer = ogg_sync_buffer(&sync, static_cast<long>(n));
      if (buffer == nullptr) fail(ErrorCode::kResourceExhausted, "OGG/Vorbis: out of memory for the page buffer");
      std::memcpy(buffer, bytes.data() + fed, n);
      ogg_sync_wrote(&sync, static_cast<long>(n));
      fed += n;
    }
  }

  // Starts the link whose beginning-of-stream page is `bos` if its first packet is a Vorbis identification header,
  // reading its three headers (pages of other streams skipped); false, with nothing left open, if it is not Vorbis.
  bool open_link(ogg_page& bos) {
    close_link();
    serial = ogg_page_serialno(&bos);
    ogg_stream_init(&stream, static_cast<int>(serial));
    stream_open = true;
    ogg_packet packet;
    if (ogg_stream_pagein(&stream, &bos) != 0 || ogg_stream_packetout(&stream, &packet) != 1 ||
        vorbis_synthesis_idheader(&packet) != 1) {
      close_link();
      return false;
    }
    vorbis_info_init(&info);
    vorbis_comment_init(&comment);
    headers_open = true;
    ++links;
    end_of_link = ogg_page_eos(&bos) != 0;
    for (int header = 0; header < 3;) {
      if (header > 0) {
        const int r = ogg_stream_packetout(&stream, &packet);
        if (r < 0) fail(ErrorCode::kDataLoss, "malformed OGG/Vorbis file: a gap in the pages of its headers");
        if (r == 0) {
          ogg_page page;
          if (!next_page(page)) fail(ErrorCode::kDataLoss, "malformed OGG/Vorbis file: it ends inside its headers");
          if (ogg_page_serialno(&page) != serial) continue;  // another stream's page
          ogg_stream_pagein(&stream, &page);
          end_of_link = end_of_link || ogg_page_eos(&page) != 0;
          continue;
        }
      }
      if (const int rc = vorbis_synthesis_headerin(&info, &comment, &packet); rc != 0)
        fail(ErrorCode::kDataLoss, "malformed OGG/Vorbis file: {} header {}",
             rc == OV_EVERSION ? "unsupported Vorbis version in" : "invalid Vorbis", header + 1);
      ++header;
    }
    if (vorbis_synthesis_init(&dsp, &info) != 0)
      fail(ErrorCode::kDataLoss, "malformed OGG/Vorbis file: its setup header cannot start a decoder");
    if (vorbis_block_init(&dsp, &block) != 0) {
      vorbis_dsp_clear(&dsp);
      fail(ErrorCode::kResourceExhausted, "OGG/Vorbis: out of memory for the decoder");
    }
    dsp_open = true;
    return true;
  }

  // The next audio packet of the stream, across chained links (each of the first link's format); false at the end
  // of the input.
  bool next_packet(ogg_packet& packet, int64_t frames_so_far) {
    for (;;) {
      const int r = ogg_stream_packetout(&stream, &packet);
      if (r == 1) return true;
      if (r < 0)
        fail(ErrorCode::kDataLoss, "corrupt OGG/Vorbis data after {} frames: a gap in the data (missing or corrupt "
                                   "pages)", frames_so_far);
      ogg_page page;
      if (!next_page(page)) return false;
      if (end_of_link && ogg_page_bos(&page)) {  // the next link of a chained file (its serial may be the same)
        if (!open_link(page))
          fail(ErrorCode::kUnimplemented, "chained OGG stream continues with another codec than Vorbis at link {}",
               links + 1);
        if (info.channels != channels || info.rate != rate)
          fail(ErrorCode::kUnimplemented,
               "chained OGG/Vorbis stream changes sample rate or channel count at link {}", links);
      } else if (ogg_page_serialno(&page) == serial) {
        ogg_stream_pagein(&stream, &page);
        end_of_link = end_of_link || ogg_page_eos(&page) != 0;
      }
    }
  }
};

VorbisReader::VorbisReader(std::span<const uint8_t> bytes) : codec_(std::make_unique<Codec>(bytes)) {
  ogg_page page;
  for (;;) {  // the first stream whose beginning-of-stream page is Vorbis
    if (!codec_->next_page(page) || !ogg_page_bos(&page))
      fail(ErrorCode::kDataLoss, "malformed OGG/Vorbis file: no Vorbis stream begins among its first pages");
    if (codec_->open_link(page)) break;
  }
  codec_->channels = channels_ = codec_->info.channels;
  codec_->rate = codec_->info.rate;
  rate_ = static_cast<int>(std::clamp<long>(codec_->info.rate, INT_MIN, INT_MAX));
}

VorbisReader::~VorbisReader() = default;

int64_t VorbisReader::read(float* out, int64_t frames) {
  int64_t got = 0;
  while (got < frames) {
    float** pcm = nullptr;
    const int ready = vorbis_synthesis_pcmout(&codec_->dsp, &pcm);
    if (ready > 0) {
      const int n = static_cast<int>(std::min<int64_t>(ready, frames - got));
      for (int i = 0; i < n; ++i)
        for (int c = 0; c < channels_; ++c) out[(got + i) * channels_ + c] = pcm[c][i];
      vorbis_synthesis_read(&codec_->dsp, n);
      got += n;
      continue;
    }
    ogg_packet packet;
    if (!codec_->next_packet(packet, frames_read_ + got)) break;
    // A packet libvorbis cannot synthesize (not audio, or malformed) is skipped, as libvorbisfile does.
    if (vorbis_synthesis(&codec_->block, &packet) == 0) vorbis_synthesis_blockin(&codec_->dsp, &codec_->block);
  }
  frames_read_ += got;
  return got;
}

}  // namespace steno::audio

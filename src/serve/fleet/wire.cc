#include "serve/fleet/wire.h"

#include <fmt/format.h>
#include <bit>
#include <cstring>
#include <type_traits>

namespace steno::serve::fleet {
namespace {

static_assert(std::endian::native == std::endian::little, "the fleet's wire format is written as little-endian");

constexpr char kMagic[4] = {'S', 'T', 'N', 'W'};

// Appends fixed-width little-endian values and length-prefixed strings.
class Writer {
 public:
  template <typename T>
  void put(T v) {
    static_assert(std::is_arithmetic_v<T>);
    char bytes[sizeof(T)];
    std::memcpy(bytes, &v, sizeof(T));
    out_.append(bytes, sizeof(T));
  }
  void put_string(std::string_view s) {
    put(static_cast<uint32_t>(s.size()));
    out_.append(s);
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

// Reads what Writer wrote, refusing to read past the payload; every count is checked against the bytes left
// before anything is allocated for it.
class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}

  template <typename T>
  T get(const char* what) {
    static_assert(std::is_arithmetic_v<T>);
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, in_.data(), sizeof(T));
    in_.remove_prefix(sizeof(T));
    return v;
  }
  std::string get_string(const char* what) {
    const uint32_t n = get<uint32_t>(what);
    need(n, what);
    std::string s(in_.substr(0, n));
    in_.remove_prefix(n);
    return s;
  }
  // A count of elements that each take at least `min_bytes` in the rest of the payload.
  uint32_t get_count(const char* what, size_t min_bytes, uint32_t max = UINT32_MAX) {
    const uint32_t n = get<uint32_t>(what);
    if (n > max) throw ProtocolError(fmt::format("{}: count {} exceeds the limit {}", what, n, max));
    if (static_cast<uint64_t>(n) * min_bytes > in_.size())
      throw ProtocolError(fmt::format("{}: count {} does not fit in the {} bytes left", what, n, in_.size()));
    return n;
  }
  void finish(const char* message) const {
    if (!in_.empty()) throw ProtocolError(fmt::format("{}: {} unexpected trailing bytes", message, in_.size()));
  }

 private:
  void need(size_t n, const char* what) const {
    if (n > in_.size())
      throw ProtocolError(fmt::format("truncated payload: {} needs {} bytes, {} left", what, n, in_.size()));
  }
  std::string_view in_;
};

void put_timed(Writer& w, const std::vector<asr::TimedText>& items) {
  w.put(static_cast<uint32_t>(items.size()));
  for (const asr::TimedText& t : items) {
    w.put_string(t.text);
    w.put(t.start);
    w.put(t.end);
  }
}

std::vector<asr::TimedText> get_timed(Reader& r, const char* what) {
  const uint32_t n = r.get_count(what, sizeof(uint32_t) + 2 * sizeof(double));
  std::vector<asr::TimedText> items(n);
  for (asr::TimedText& t : items) {
    t.text = r.get_string(what);
    t.start = r.get<double>(what);
    t.end = r.get<double>(what);
  }
  return items;
}

void put_payload(Writer& w, const Hello& m) {
  w.put(m.pid);
  w.put(m.worker_index);
  w.put(static_cast<uint8_t>(m.weights_shared ? 1 : 0));
  w.put(m.weights_bytes);
  w.put(m.weights_layout);
  w.put_string(std::string_view(m.weights_note).substr(0, kMaxWeightsNote));
}

void put_payload(Writer& w, const Heartbeat& m) {
  w.put(m.host_rss_bytes);
  w.put(m.device_bytes);
}

void put_payload(Writer& w, const RunBatch& m) {
  w.put(m.batch_id);
  w.put(static_cast<uint32_t>(m.clips.size()));
  for (const ClipSpan& c : m.clips) {
    w.put(c.offset);
    w.put(c.samples);
    w.put(static_cast<uint8_t>(c.fault));
  }
}

void put_payload(Writer& w, const BatchResult& m) {
  w.put(m.batch_id);
  w.put(m.timings.features_ms);
  w.put(m.timings.encoder_ms);
  w.put(m.timings.decoder_ms);
  w.put(m.timings.detokenize_ms);
  w.put(m.timings.decoder_steps);
  w.put(static_cast<uint32_t>(m.transcripts.size()));
  for (const asr::Transcript& t : m.transcripts) {
    w.put_string(t.text);
    w.put(t.audio_seconds);
    put_timed(w, t.words);
    put_timed(w, t.segments);
    w.put(static_cast<uint32_t>(t.tokens.size()));
    for (const asr::TokenTiming& k : t.tokens) {
      w.put(static_cast<int32_t>(k.id));
      w.put(static_cast<int32_t>(k.start_frame));
      w.put(static_cast<int32_t>(k.end_frame));
    }
  }
  w.put(static_cast<uint32_t>(m.diarizations.size()));
  for (const DiarizationResult& d : m.diarizations) {
    w.put(static_cast<int32_t>(d.num_speakers));
    w.put(d.frame_seconds);
    w.put(d.frames);
    w.put(static_cast<uint32_t>(d.probs.size()));
    for (const float p : d.probs) w.put(p);
    w.put(static_cast<uint32_t>(d.segments.size()));
    for (const SpeakerSegmentResult& s : d.segments) {
      w.put(static_cast<int32_t>(s.speaker));
      w.put(s.start);
      w.put(s.end);
    }
  }
}

void put_payload(Writer& w, const BatchFailed& m) {
  w.put(m.batch_id);
  w.put(static_cast<uint8_t>(m.code));
  w.put_string(m.message);
}

Hello get_hello(Reader& r) {
  Hello m;
  m.pid = r.get<int32_t>("hello pid");
  m.worker_index = r.get<int32_t>("hello worker index");
  const auto shared = r.get<uint8_t>("hello weights shared");
  if (shared > 1) throw ProtocolError(fmt::format("hello: weights shared is {}, not 0 or 1", shared));
  m.weights_shared = shared == 1;
  m.weights_bytes = r.get<uint64_t>("hello weights bytes");
  m.weights_layout = r.get<uint64_t>("hello weights layout");
  m.weights_note = r.get_string("hello weights note");
  if (m.weights_note.size() > kMaxWeightsNote)
    throw ProtocolError(fmt::format("hello: a weights note of {} bytes (at most {})", m.weights_note.size(),
                                    kMaxWeightsNote));
  return m;
}

Heartbeat get_heartbeat(Reader& r) {
  Heartbeat m;
  m.host_rss_bytes = r.get<uint64_t>("heartbeat host memory");
  m.device_bytes = r.get<uint64_t>("heartbeat device memory");
  return m;
}

RunBatch get_run_batch(Reader& r) {
  RunBatch m;
  m.batch_id = r.get<uint64_t>("batch id");
  const uint32_t n = r.get_count("clip count", 2 * sizeof(uint64_t) + 1, kMaxClipsPerBatch);
  m.clips.resize(n);
  for (ClipSpan& c : m.clips) {
    c.offset = r.get<uint64_t>("clip offset");
    c.samples = r.get<uint64_t>("clip samples");
    const auto fault = r.get<uint8_t>("clip fault");
    if (fault > static_cast<uint8_t>(InjectedFault::kOom))
      throw ProtocolError(fmt::format("unknown injected fault {}", fault));
    c.fault = static_cast<InjectedFault>(fault);
  }
  return m;
}

BatchResult get_batch_result(Reader& r) {
  BatchResult m;
  m.batch_id = r.get<uint64_t>("batch id");
  m.timings.features_ms = r.get<double>("features time");
  m.timings.encoder_ms = r.get<double>("encoder time");
  m.timings.decoder_ms = r.get<double>("decoder time");
  m.timings.detokenize_ms = r.get<double>("detokenize time");
  m.timings.decoder_steps = r.get<int64_t>("decoder steps");
  // The smallest transcript: empty text, audio seconds, three empty lists.
  const uint32_t n = r.get_count("transcript count", 4 * sizeof(uint32_t) + sizeof(double), kMaxClipsPerBatch);
  m.transcripts.resize(n);
  for (asr::Transcript& t : m.transcripts) {
    t.text = r.get_string("transcript text");
    t.audio_seconds = r.get<double>("transcript audio seconds");
    t.words = get_timed(r, "words");
    t.segments = get_timed(r, "segments");
    const uint32_t tokens = r.get_count("token count", 3 * sizeof(int32_t));
    t.tokens.resize(tokens);
    for (asr::TokenTiming& k : t.tokens) {
      k.id = r.get<int32_t>("token id");
      k.start_frame = r.get<int32_t>("token start");
      k.end_frame = r.get<int32_t>("token end");
    }
  }
  // The smallest diarization: speakers, frame length, frames, two empty lists.
  const uint32_t d = r.get_count("diarization count", 3 * sizeof(uint32_t) + sizeof(double) + sizeof(int64_t),
                                 kMaxClipsPerBatch);
  m.diarizations.resize(d);
  for (DiarizationResult& x : m.diarizations) {
    x.num_speakers = r.get<int32_t>("speakers");
    x.frame_seconds = r.get<double>("frame seconds");
    x.frames = r.get<int64_t>("frames");
    const uint32_t probs = r.get_count("probability count", sizeof(float));
    if (x.num_speakers < 0 || x.frames < 0 ||
        static_cast<uint64_t>(x.frames) * static_cast<uint64_t>(x.num_speakers) != probs)
      throw ProtocolError(fmt::format("a diarization of {} frames x {} speakers carries {} probabilities", x.frames,
                                      x.num_speakers, probs));
    x.probs.resize(probs);
    for (float& p : x.probs) p = r.get<float>("probability");
    const uint32_t segments = r.get_count("segment count", sizeof(int32_t) + 2 * sizeof(double));
    x.segments.resize(segments);
    for (SpeakerSegmentResult& s : x.segments) {
      s.speaker = r.get<int32_t>("segment speaker");
      s.start = r.get<double>("segment start");
      s.end = r.get<double>("segment end");
    }
  }
  return m;
}

BatchFailed get_batch_failed(Reader& r) {
  BatchFailed m;
  m.batch_id = r.get<uint64_t>("batch id");
  const auto code = r.get<uint8_t>("error code");
  if (code > static_cast<uint8_t>(ErrorCode::kInternal))
    throw ProtocolError(fmt::format("unknown error code {}", code));
  m.code = static_cast<ErrorCode>(code);
  m.message = r.get_string("error message");
  return m;
}

}  // namespace

const char* message_type_name(MessageType t) {
  switch (t) {
    case MessageType::kHello: return "hello";
    case MessageType::kHeartbeat: return "heartbeat";
    case MessageType::kRunBatch: return "run-batch";
    case MessageType::kBatchResult: return "batch-result";
    case MessageType::kBatchFailed: return "batch-failed";
  }
  return "unknown";
}

MessageType type_of(const Message& m) {
  return std::visit(
      [](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, Hello>)
          return MessageType::kHello;
        else if constexpr (std::is_same_v<T, Heartbeat>)
          return MessageType::kHeartbeat;
        else if constexpr (std::is_same_v<T, RunBatch>)
          return MessageType::kRunBatch;
        else if constexpr (std::is_same_v<T, BatchResult>)
          return MessageType::kBatchResult;
        else
          return MessageType::kBatchFailed;
      },
      m);
}

std::string encode_frame(const Message& m) {
  Writer payload;
  std::visit([&](const auto& v) { put_payload(payload, v); }, m);
  const std::string body = payload.take();
  STENO_CHECK(body.size() <= kMaxResultPayload, "a {} message of {} bytes exceeds the protocol's {} bytes",
              message_type_name(type_of(m)), body.size(), kMaxResultPayload);
  Writer header;
  for (char c : kMagic) header.put(c);
  header.put(kProtocolVersion);
  header.put(static_cast<uint16_t>(type_of(m)));
  header.put(static_cast<uint32_t>(body.size()));
  return header.take() + body;
}

FrameHeader decode_header(std::string_view bytes, uint32_t max_payload) {
  if (bytes.size() != kHeaderBytes) throw ProtocolError(fmt::format("a frame header is {} bytes", kHeaderBytes));
  if (std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) throw ProtocolError("bad frame magic");
  Reader r(bytes.substr(sizeof kMagic));
  const auto version = r.get<uint16_t>("version");
  if (version != kProtocolVersion)
    throw ProtocolError(fmt::format("protocol version {} (this steno speaks {})", version, kProtocolVersion));
  const auto type = r.get<uint16_t>("type");
  if (type < static_cast<uint16_t>(MessageType::kHello) || type > static_cast<uint16_t>(MessageType::kBatchFailed))
    throw ProtocolError(fmt::format("unknown message type {}", type));
  const auto length = r.get<uint32_t>("length");
  if (length > max_payload)
    throw ProtocolError(fmt::format("a {}-byte payload exceeds the limit of {} bytes", length, max_payload));
  return FrameHeader{static_cast<MessageType>(type), length};
}

Message decode_payload(MessageType type, std::string_view payload) {
  Reader r(payload);
  Message m;
  switch (type) {
    case MessageType::kHello: m = get_hello(r); break;
    case MessageType::kHeartbeat: m = get_heartbeat(r); break;
    case MessageType::kRunBatch: m = get_run_batch(r); break;
    case MessageType::kBatchResult: m = get_batch_result(r); break;
    case MessageType::kBatchFailed: m = get_batch_failed(r); break;
    default: throw ProtocolError(fmt::format("unknown message type {}", static_cast<int>(type)));
  }
  r.finish(message_type_name(type));
  return m;
}

}  // namespace steno::serve::fleet

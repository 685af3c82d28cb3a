// The fleet's wire protocol: every message survives a round trip, and a corrupt or hostile frame is a
// ProtocolError -- never a crash, never an allocation beyond the frame -- over the codec and over a real socket
// pair with the batch's PCM in a real memfd.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <random>
#include <thread>
#include <utility>

#include "serve/fleet/framed_socket.h"
#include "serve/fleet/shared_pcm.h"
#include "serve/fleet/wire.h"

namespace steno::serve::fleet {
namespace {

using namespace std::chrono_literals;

Message round_trip(const Message& m) {
  const std::string frame = encode_frame(m);
  const FrameHeader h = decode_header(std::string_view(frame).substr(0, kHeaderBytes), kMaxResultPayload);
  EXPECT_EQ(h.type, type_of(m));
  EXPECT_EQ(h.payload_bytes, frame.size() - kHeaderBytes);
  return decode_payload(h.type, std::string_view(frame).substr(kHeaderBytes));
}

BatchResult sample_result() {
  BatchResult r;
  r.batch_id = 77;
  r.timings = {1.5, 2.5, 3.5, 0.25, 123};
  asr::Transcript t;
  t.text = "the rent is seven pounds a month";
  t.audio_seconds = 1.75;
  t.words = {{"the", 0.08, 0.16}, {"rent", 0.24, 0.48}};
  t.segments = {{"the rent is seven pounds a month", 0.08, 1.6}};
  t.tokens = {{5, 1, 2}, {17, 3, 6}, {-1, 7, 7}};
  r.transcripts = {t, asr::Transcript{}};
  return r;
}

// A Hello with every weights field set (a real one has a note only when not shared; the codec does not care).
Hello sample_shared_hello() {
  Hello h;
  h.pid = 99;
  h.worker_index = 0;
  h.weights_shared = true;
  h.weights_bytes = 1'234'567'936;
  h.weights_layout = 0xfeedfacecafebeefull;
  h.weights_note = "cuda:0: cuMemCreate failed (CUDA_ERROR_NOT_SUPPORTED)";
  return h;
}

TEST(Wire, EveryMessageSurvivesARoundTrip) {
  Hello sent;
  sent.pid = 4242;
  sent.worker_index = 3;
  const auto hello = std::get<Hello>(round_trip(sent));
  EXPECT_EQ(hello.pid, 4242);
  EXPECT_EQ(hello.worker_index, 3);
  EXPECT_FALSE(hello.weights_shared);
  EXPECT_EQ(hello.weights_bytes, 0u);
  EXPECT_TRUE(hello.weights_note.empty());
  const Hello shared = sample_shared_hello();
  const auto shared2 = std::get<Hello>(round_trip(shared));
  EXPECT_TRUE(shared2.weights_shared);
  EXPECT_EQ(shared2.weights_bytes, shared.weights_bytes);
  EXPECT_EQ(shared2.weights_layout, shared.weights_layout);
  EXPECT_EQ(shared2.weights_note, shared.weights_note);

  const auto beat = std::get<Heartbeat>(round_trip(Heartbeat{123456789, kMemoryNotReported}));
  EXPECT_EQ(beat.host_rss_bytes, 123456789u);
  EXPECT_EQ(beat.device_bytes, kMemoryNotReported);

  RunBatch run{9, {{0, 16000, InjectedFault::kNone}, {16000, 8000, InjectedFault::kOom}}};
  const auto run2 = std::get<RunBatch>(round_trip(run));
  ASSERT_EQ(run2.clips.size(), 2u);
  EXPECT_EQ(run2.batch_id, 9u);
  EXPECT_EQ(run2.clips[1].offset, 16000u);
  EXPECT_EQ(run2.clips[1].samples, 8000u);
  EXPECT_EQ(run2.clips[1].fault, InjectedFault::kOom);

  const BatchResult result = sample_result();
  const auto result2 = std::get<BatchResult>(round_trip(result));
  EXPECT_EQ(result2.batch_id, 77u);
  EXPECT_EQ(result2.timings.encoder_ms, 2.5);
  EXPECT_EQ(result2.timings.decoder_steps, 123);
  ASSERT_EQ(result2.transcripts.size(), 2u);
  const asr::Transcript& t = result2.transcripts[0];
  EXPECT_EQ(t.text, result.transcripts[0].text);
  EXPECT_EQ(t.audio_seconds, 1.75);
  ASSERT_EQ(t.words.size(), 2u);
  EXPECT_EQ(t.words[1].text, "rent");
  EXPECT_EQ(t.words[1].end, 0.48);
  ASSERT_EQ(t.segments.size(), 1u);
  EXPECT_EQ(t.segments[0].start, 0.08);
  ASSERT_EQ(t.tokens.size(), 3u);
  EXPECT_EQ(t.tokens[1].id, 17);
  EXPECT_EQ(t.tokens[2].end_frame, 7);
  EXPECT_TRUE(result2.transcripts[1].text.empty());

  const auto failed = std::get<BatchFailed>(round_trip(BatchFailed{5, ErrorCode::kResourceExhausted, "out of memory"}));
  EXPECT_EQ(failed.code, ErrorCode::kResourceExhausted);
  EXPECT_EQ(failed.message, "out of memory");
}

TEST(Wire, MalformedHeadersAreRefused) {
  std::string frame = encode_frame(Heartbeat{1, 2});
  const auto header = [&](std::string f) { return decode_header(std::string_view(f).substr(0, kHeaderBytes), 1024); };
  EXPECT_NO_THROW(header(frame));

  std::string bad = frame;
  bad[0] = 'X';
  EXPECT_THROW(header(bad), ProtocolError);  // magic
  bad = frame;
  bad[4] = 9;
  EXPECT_THROW(header(bad), ProtocolError);  // version
  bad = frame;
  bad[6] = 42;
  EXPECT_THROW(header(bad), ProtocolError);  // type
  bad = frame;
  const uint32_t huge = 0xFFFFFFF0u;
  std::memcpy(bad.data() + 8, &huge, 4);
  EXPECT_THROW(header(bad), ProtocolError);  // length beyond the limit
  EXPECT_THROW(decode_header(std::string_view(frame).substr(0, 5), 1024), ProtocolError);
}

TEST(Wire, MalformedPayloadsAreRefused) {
  const std::string frame = encode_frame(sample_result());
  const std::string_view payload = std::string_view(frame).substr(kHeaderBytes);
  // Every truncation, and trailing bytes.
  for (size_t n = 0; n < payload.size(); ++n)
    EXPECT_THROW(decode_payload(MessageType::kBatchResult, payload.substr(0, n)), ProtocolError) << n;
  EXPECT_THROW(decode_payload(MessageType::kBatchResult, std::string(payload) + "x"), ProtocolError);

  // A count that claims far more elements than the payload holds: refused before anything is allocated.
  std::string lying(payload);
  const uint32_t billions = 4'000'000'000u;
  const size_t count_at = 8 + 4 * 8 + 8;  // batch id, four timings, decoder steps
  std::memcpy(lying.data() + count_at, &billions, 4);
  EXPECT_THROW(decode_payload(MessageType::kBatchResult, lying), ProtocolError);

  // A string length past the end.
  std::string long_text(payload);
  const uint32_t big = 1u << 30;
  std::memcpy(long_text.data() + count_at + 4, &big, 4);
  EXPECT_THROW(decode_payload(MessageType::kBatchResult, long_text), ProtocolError);

  // A Hello: every truncation, a flag that is neither 0 nor 1, a note longer than the protocol allows.
  const std::string hello = encode_frame(sample_shared_hello()).substr(kHeaderBytes);
  for (size_t n = 0; n < hello.size(); ++n)
    EXPECT_THROW(decode_payload(MessageType::kHello, std::string_view(hello).substr(0, n)), ProtocolError) << n;
  EXPECT_THROW(decode_payload(MessageType::kHello, hello + "x"), ProtocolError);
  std::string flag = hello;
  flag[8] = 2;  // after pid and worker index
  EXPECT_THROW(decode_payload(MessageType::kHello, flag), ProtocolError);
  Hello wordy;
  wordy.weights_note = std::string(kMaxWeightsNote + 100, 'n');  // cut to the limit when sent
  EXPECT_EQ(std::get<Hello>(round_trip(wordy)).weights_note.size(), kMaxWeightsNote);
  std::string too_long = encode_frame(wordy).substr(kHeaderBytes);
  const uint32_t note_bytes = kMaxWeightsNote + 1;
  std::memcpy(too_long.data() + 8 + 1 + 16, &note_bytes, 4);
  too_long += "n";
  EXPECT_THROW(decode_payload(MessageType::kHello, too_long), ProtocolError);

  // Enumerations out of range.
  std::string run = encode_frame(RunBatch{1, {{0, 10, InjectedFault::kNone}}}).substr(kHeaderBytes);
  run.back() = 99;
  EXPECT_THROW(decode_payload(MessageType::kRunBatch, run), ProtocolError);
  std::string failed = encode_frame(BatchFailed{1, ErrorCode::kInternal, ""}).substr(kHeaderBytes);
  failed[8] = 77;
  EXPECT_THROW(decode_payload(MessageType::kBatchFailed, failed), ProtocolError);
}

TEST(Wire, RandomCorruptionNeverCrashes) {
  const std::pair<MessageType, Message> samples[] = {{MessageType::kBatchResult, sample_result()},
                                                     {MessageType::kHello, sample_shared_hello()}};
  for (const auto& [type, message] : samples) {
    const std::string payload = encode_frame(message).substr(kHeaderBytes);
    std::mt19937 rng(7);
    int refused = 0;
    for (int i = 0; i < 3000; ++i) {
      std::string p = payload;
      const int flips = 1 + static_cast<int>(rng() % 4);
      for (int k = 0; k < flips; ++k) p[rng() % p.size()] = static_cast<char>(rng());
      try {
        decode_payload(type, p);
      } catch (const ProtocolError&) {
        ++refused;
      }
    }
    // Some corruptions are still valid messages (a changed character); many are not.
    EXPECT_GT(refused, 0) << message_type_name(type);
  }
}

struct SocketPair {
  SocketPair() {
    int sv[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    a = UniqueFd(sv[0]);
    b = UniqueFd(sv[1]);
  }
  UniqueFd a, b;
};

TEST(FramedSocket, CarriesABatchWithItsPcmInSharedMemory) {
  SocketPair p;
  FramedSocket server(std::move(p.a), kMaxResultPayload);
  FramedSocket worker(std::move(p.b), kMaxRequestPayload);

  std::vector<float> one(16000), two(800);
  for (size_t i = 0; i < one.size(); ++i) one[i] = static_cast<float>(i) / 16000.0f;
  for (size_t i = 0; i < two.size(); ++i) two[i] = -static_cast<float>(i);
  RunBatch run;
  run.batch_id = 12;
  {
    const SharedPcm pcm = SharedPcm::create({one, two}, &run.clips);
    server.send(run, pcm.fd());
  }  // the server's mapping and descriptor are gone; the memory lives on with the worker's descriptor

  auto in = worker.receive(5s);
  ASSERT_TRUE(in);
  const auto& got = std::get<RunBatch>(in->message);
  ASSERT_TRUE(in->fd.valid());
  const SharedPcm mapped = SharedPcm::map(std::move(in->fd), got.clips);
  const auto c1 = mapped.clip(got.clips[0]);
  const auto c2 = mapped.clip(got.clips[1]);
  ASSERT_EQ(c1.size(), one.size());
  ASSERT_EQ(c2.size(), two.size());
  EXPECT_TRUE(std::equal(c1.begin(), c1.end(), one.begin()));
  EXPECT_TRUE(std::equal(c2.begin(), c2.end(), two.begin()));

  worker.send(sample_result());
  auto reply = server.receive(5s);
  ASSERT_TRUE(reply);
  EXPECT_EQ(std::get<BatchResult>(reply->message).transcripts[0].text, "the rent is seven pounds a month");
  EXPECT_FALSE(server.receive(50ms));  // nothing more: a timeout, not an error
}

TEST(FramedSocket, SpansOutsideTheSharedMemoryAreRefused) {
  std::vector<ClipSpan> spans;
  std::vector<float> clip(100);
  const SharedPcm pcm = SharedPcm::create({clip}, &spans);
  const auto map_with = [&](ClipSpan s) { return SharedPcm::map(UniqueFd(::dup(pcm.fd())), {s}); };
  EXPECT_NO_THROW(map_with({0, 100, InjectedFault::kNone}));
  EXPECT_THROW(map_with({1, 100, InjectedFault::kNone}), ProtocolError);
  EXPECT_THROW(map_with({UINT64_MAX, 2, InjectedFault::kNone}), ProtocolError);  // overflowing offset + samples
  EXPECT_THROW(map_with({0, UINT64_MAX, InjectedFault::kNone}), ProtocolError);
}

TEST(FramedSocket, HostilePeersAreProtocolErrorsOrClosedConnections) {
  {  // garbage
    SocketPair p;
    FramedSocket server(std::move(p.a), kMaxResultPayload);
    ASSERT_EQ(::write(p.b.get(), "GET / HTTP/1.1\r\n\r\n", 18), 18);
    EXPECT_THROW(server.receive(2s), ProtocolError);
  }
  {  // a frame that claims a payload beyond the limit: refused from its header, before any of it is read
    SocketPair p;
    FramedSocket worker(std::move(p.b), kMaxRequestPayload);
    std::string frame = encode_frame(Heartbeat{});
    const uint32_t big = kMaxRequestPayload + 1;
    std::memcpy(frame.data() + 8, &big, 4);
    ASSERT_EQ(::write(p.a.get(), frame.data(), frame.size()), static_cast<ssize_t>(frame.size()));
    EXPECT_THROW(worker.receive(2s), ProtocolError);
  }
  {  // a descriptor with a message that must not carry one, and a RunBatch without one
    SocketPair p;
    FramedSocket server(std::move(p.a), kMaxResultPayload);
    FramedSocket worker(std::move(p.b), kMaxRequestPayload);
    UniqueFd memfd(::memfd_create("x", MFD_CLOEXEC));
    worker.send(Heartbeat{}, memfd.get());
    EXPECT_THROW(server.receive(2s), ProtocolError);
    server.send(RunBatch{1, {}});
    EXPECT_THROW(worker.receive(2s), ProtocolError);
  }
  {  // a Hello may carry a descriptor (the shared weights' memory) or none; one Hello cannot carry two
    SocketPair p;
    FramedSocket server(std::move(p.a), kMaxResultPayload);
    FramedSocket worker(std::move(p.b), kMaxRequestPayload);
    UniqueFd memfd(::memfd_create("weights", MFD_CLOEXEC));
    worker.send(sample_shared_hello(), memfd.get());
    auto with = server.receive(2s);
    ASSERT_TRUE(with);
    EXPECT_TRUE(std::get<Hello>(with->message).weights_shared);
    EXPECT_TRUE(with->fd.valid());
    worker.send(Hello{});
    auto without = server.receive(2s);
    ASSERT_TRUE(without);
    EXPECT_FALSE(without->fd.valid());
  }
  {  // a peer that goes away mid-frame
    SocketPair p;
    FramedSocket server(std::move(p.a), kMaxResultPayload);
    const std::string frame = encode_frame(sample_result());
    ASSERT_EQ(::write(p.b.get(), frame.data(), 20), 20);
    EXPECT_FALSE(server.receive(50ms));  // incomplete: wait
    p.b.reset();
    EXPECT_THROW(server.receive(2s), PeerClosed);
  }
}

}  // namespace
}  // namespace steno::serve::fleet

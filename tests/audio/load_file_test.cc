// load_audio_file: a regular file is mapped, a pipe is read (at most max_bytes of it); both decode as the bytes in
// memory do.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <csignal>
#include <fstream>
#include <thread>

#include "audio_fixtures.h"
#include "steno/audio/decode.h"
#include "steno/core/error.h"

namespace steno::audio {
namespace {

using ::testing::HasSubstr;
using testing::one_second_wav;

// Writes `bytes` into the FIFO at `path` from another thread (opening a FIFO blocks until both ends are open).
std::thread feed_fifo(const std::string& path, std::vector<uint8_t> bytes) {
  return std::thread([path, bytes = std::move(bytes)] {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  });
}

TEST(LoadFile, MappedFileDecodesAsTheBytesDo) {
  testing::TempDir dir;
  std::vector<uint8_t> wav = one_second_wav();
  wav.resize(wav.size() - 1000);  // truncated, to carry a warning too
  testing::write_bytes(dir.file("a.wav"), wav);
  const DecodedAudio from_file = load_audio_file(dir.file("a.wav"));
  const DecodedAudio from_memory = decode_audio(wav);
  EXPECT_EQ(from_file.samples, from_memory.samples);
  EXPECT_EQ(from_file.warnings, from_memory.warnings);
  EXPECT_EQ(from_file.warnings.size(), 1u);
}

TEST(LoadFile, EmptyFile) {
  testing::TempDir dir;
  testing::write_bytes(dir.file("empty.wav"), {});
  try {
    load_audio_file(dir.file("empty.wav"));
    ADD_FAILURE() << "an empty file decoded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("empty (0 bytes)"));
  }
}

TEST(LoadFile, PipeIsRead) {
  testing::TempDir dir;
  const std::string fifo = dir.file("pipe.wav");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::thread writer = feed_fifo(fifo, one_second_wav());
  const DecodedAudio a = load_audio_file(fifo);
  writer.join();
  EXPECT_EQ(a.samples, decode_audio(one_second_wav()).samples);
}

TEST(LoadFile, PipeOverTheByteLimitIsRefusedAfterMaxBytes) {
  // The reader stops after 1001 bytes and closes the pipe; the writer may not be done: let it see EPIPE, not die.
  std::signal(SIGPIPE, SIG_IGN);
  testing::TempDir dir;
  const std::string fifo = dir.file("pipe.wav");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::thread writer = feed_fifo(fifo, one_second_wav());
  try {
    load_audio_file(fifo, {.max_bytes = 1000});
    ADD_FAILURE() << "a pipe over the limit decoded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kOutOfRange);
    EXPECT_EQ(std::string(e.what()), "audio file " + fifo + " is over the limit of 1000 bytes");
  }
  writer.join();
}

}  // namespace
}  // namespace steno::audio

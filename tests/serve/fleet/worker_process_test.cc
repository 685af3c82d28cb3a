// How the server starts a worker: its command line for each way of getting the weights (--share-weights), and
// the shared weights' descriptor reaching the child as descriptor 4 beside its socket on 3.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "serve/fleet/worker_supervisor.h"
#include "steno/serve/fleet/shared_weights.h"
#include "serve/fleet/worker_process.h"

namespace steno::serve::fleet {
namespace {

bool has_pair(const std::vector<std::string>& args, const std::string& flag, const std::string& value) {
  const auto it = std::find(args.begin(), args.end(), flag);
  return it != args.end() && it + 1 != args.end() && *(it + 1) == value;
}

TEST(WorkerArguments, SayHowTheWorkerGetsItsWeights) {
  WorkerFleetConfig config;
  config.command.model_dir = "/models/m";
  const auto plain = worker_arguments(config, 1);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), "--export-weights"), 0);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), "--import-weights-fd"), 0);
  EXPECT_TRUE(has_pair(plain, "--index", "1"));

  const auto creator = worker_arguments(config, 0, WeightsArgs{WeightsRole::kExport});
  EXPECT_EQ(std::count(creator.begin(), creator.end(), "--export-weights"), 1);
  EXPECT_EQ(std::count(creator.begin(), creator.end(), "--weights-bytes"), 0);  // nothing measured yet

  // A creator after a group restart gets the size and identity the first one measured.
  const auto again = worker_arguments(config, 0, WeightsArgs{WeightsRole::kExport, 4096, 77});
  EXPECT_EQ(std::count(again.begin(), again.end(), "--export-weights"), 1);
  EXPECT_TRUE(has_pair(again, "--weights-bytes", "4096"));
  EXPECT_TRUE(has_pair(again, "--weights-layout", "77"));
  EXPECT_EQ(std::count(again.begin(), again.end(), "--import-weights-fd"), 0);

  const auto importer = worker_arguments(config, 2, WeightsArgs{WeightsRole::kImport, 123456, 0xfeedfacecafebeefull});
  EXPECT_TRUE(has_pair(importer, "--import-weights-fd", std::to_string(kWorkerWeightsFd)));
  EXPECT_TRUE(has_pair(importer, "--weights-bytes", "123456"));
  EXPECT_TRUE(has_pair(importer, "--weights-layout", std::to_string(0xfeedfacecafebeefull)));
  EXPECT_EQ(std::count(importer.begin(), importer.end(), "--export-weights"), 0);
}

TEST(WorkerArguments, CarryTheDecodingSettings) {
  WorkerFleetConfig config;
  config.command.model_dir = "/models/m";
  const auto greedy = worker_arguments(config, 0);
  for (const char* flag :
       {"--decoding", "--beam-size", "--lm", "--lm-alpha", "--lm-beta", "--lexicon", "--unknown-word-penalty"})
    EXPECT_EQ(std::count(greedy.begin(), greedy.end(), flag), 0) << flag;

  config.command.decoding.lm = "/models/m/lm.arpa.gz";
  config.command.decoding.beam_size = 12;
  config.command.decoding.lm_alpha = 0.1 + 0.2;  // not 0.3: the worker must get the same double
  config.command.decoding.lm_beta = 0.6;
  config.command.decoding.lexicon = "/models/m/words.txt.gz";
  config.command.decoding.unknown_word_penalty = 2.5;
  const auto beam = worker_arguments(config, 0);
  EXPECT_EQ(std::count(beam.begin(), beam.end(), "--decoding"), 0);  // beam follows from the LM, as in the CLI
  EXPECT_TRUE(has_pair(beam, "--lm", "/models/m/lm.arpa.gz"));
  EXPECT_TRUE(has_pair(beam, "--beam-size", "12"));
  EXPECT_TRUE(has_pair(beam, "--lm-beta", "0.6"));
  EXPECT_TRUE(has_pair(beam, "--lexicon", "/models/m/words.txt.gz"));
  EXPECT_TRUE(has_pair(beam, "--unknown-word-penalty", "2.5"));
  const auto alpha = std::find(beam.begin(), beam.end(), "--lm-alpha");
  ASSERT_NE(alpha, beam.end());
  EXPECT_EQ(std::stod(*(alpha + 1)), 0.1 + 0.2);
}

TEST(WorkerProcess, TheSharedWeightsDescriptorIsInheritedAsDescriptor4) {
  const int memfd = ::memfd_create("weights", MFD_CLOEXEC);
  ASSERT_GE(memfd, 0);
  const std::string content = "one copy of the weights";
  ASSERT_EQ(::write(memfd, content.data(), content.size()), static_cast<ssize_t>(content.size()));
  WorkerLaunch launch;
  launch.executable = "/bin/sh";
  // The child copies what it finds on 4 to its socket (3), and says whether 5 and up are closed.
  launch.args = {"-c", "cat /proc/self/fd/4 >&3; ls /proc/self/fd | sort -n | tail -n +6 | wc -l >&3"};
  launch.weights_fd = memfd;
  auto worker = WorkerProcess::spawn(launch);
  ::close(memfd);  // the child has its own copy
  std::string got;
  for (int i = 0; i < 100; ++i) {
    pollfd p{worker->socket().fd(), POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    char buf[256];
    const ssize_t n = ::read(worker->socket().fd(), buf, sizeof buf);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  const auto status = worker->wait(std::chrono::seconds(5));
  ASSERT_TRUE(status);
  EXPECT_EQ(status->str(), "exit status 0");
  // 0-4 are inherited; `ls` itself opens one more to read the directory, so at most one beyond them.
  EXPECT_TRUE(got == content + "0\n" || got == content + "1\n") << got;
}

// An importer checks the model files' identity, not only the weights' sizes: a model replaced in place by one of
// the same shapes must not be written into the copy the other workers read.
TEST(SharedWeights, TheIdentityChangesWithAnyModelFileAndTheDtype) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("steno_identity_" + std::to_string(getpid()));
  fs::create_directories(dir / "sub");
  auto write = [&](const char* name, const std::string& text) { std::ofstream(dir / name) << text; };
  write("config.json", "{}");
  write("model.safetensors", "weights-1");
  const uint64_t first = model_files_identity(dir.string());
  EXPECT_EQ(model_files_identity(dir.string()), first);  // stable while nothing changes
  std::ofstream(dir / "sub" / "ignored") << "x";          // directories are not the model's files
  EXPECT_EQ(model_files_identity(dir.string()), first);

  write("model.safetensors", "weights-2");  // same size, new contents: a new modification time
  fs::last_write_time(dir / "model.safetensors",
                      fs::last_write_time(dir / "model.safetensors") + std::chrono::seconds(1));
  const uint64_t second = model_files_identity(dir.string());
  EXPECT_NE(second, first);
  write("tokenizer.model", "t");  // a file more
  EXPECT_NE(model_files_identity(dir.string()), second);
  EXPECT_NE(weights_identity(dir.string(), DType::kBF16), weights_identity(dir.string(), DType::kF16));
  EXPECT_EQ(weights_identity(dir.string(), DType::kBF16), weights_identity(dir.string(), DType::kBF16));
  EXPECT_NE(weights_identity(dir.string(), DType::kBF16), weights_identity(dir.string(), DType::kBF16, true));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace steno::serve::fleet

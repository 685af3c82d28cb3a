#include "grpc_test_util.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>

namespace steno::testing {

std::string audio_path(const std::string& clip) {
  return std::string(STENO_TEST_DATA) + "/testset/espeak/audio/" + clip;
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << "cannot read " << path;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

namespace {
std::map<std::string, std::string> read_transcripts(const std::string& tsv_name) {
  std::map<std::string, std::string> t;
  std::ifstream tsv(std::string(STENO_TEST_DATA) + "/testset/espeak/" + tsv_name);
  for (std::string line; std::getline(tsv, line);) {
    const size_t tab = line.find('\t');
    if (tab == std::string::npos) continue;
    const std::string path = line.substr(0, tab);  // "audio/test-0000001.flac"
    t[path.substr(path.rfind('/') + 1)] = line.substr(tab + 1);
  }
  return t;
}
}  // namespace

const std::map<std::string, std::string>& reference_transcripts() {
  static const std::map<std::string, std::string> table = read_transcripts("reference_transcripts.tsv");
  return table;
}

const std::map<std::string, std::string>& default_transcripts() {
  static const std::map<std::string, std::string> table = read_transcripts("reference_beam_lm_transcripts.tsv");
  return table;
}

GrpcTestServer::GrpcTestServer(serve::TranscriptionService& service, serve::rpc::GrpcServerOptions options) {
  options.host = "127.0.0.1";
  options.port = 0;
  server_ = std::make_unique<serve::rpc::GrpcServer>(std::move(options), service);
  server_->start();
}

GrpcTestServer::~GrpcTestServer() { server_->stop(); }

std::unique_ptr<Stub> GrpcTestServer::stub() const {
  ::grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  auto channel = ::grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(port()),
                                             ::grpc::InsecureChannelCredentials(), args);
  return inference::GRPCInferenceService::NewStub(channel);
}

void prepare(::grpc::ClientContext& context, std::chrono::milliseconds timeout, const std::string& api_key) {
  context.set_deadline(std::chrono::system_clock::now() + timeout);
  if (!api_key.empty()) context.AddMetadata("authorization", "Bearer " + api_key);
}

namespace {

inference::ModelInferRequest audio_request(const std::string& datatype, std::vector<int64_t> shape) {
  inference::ModelInferRequest r;
  r.set_model_name(FakeService::kModel);
  auto* in = r.add_inputs();
  in->set_name("audio");
  in->set_datatype(datatype);
  for (int64_t d : shape) in->add_shape(d);
  return r;
}

}  // namespace

inference::ModelInferRequest bytes_request(const std::string& file, bool raw) {
  inference::ModelInferRequest r = audio_request("BYTES", {1});
  if (raw) {
    const uint32_t len = static_cast<uint32_t>(file.size());
    r.add_raw_input_contents(std::string(reinterpret_cast<const char*>(&len), 4) + file);
  } else {
    r.mutable_inputs(0)->mutable_contents()->add_bytes_contents(file);
  }
  return r;
}

inference::ModelInferRequest fp32_request(const std::vector<float>& pcm, std::optional<int64_t> sample_rate,
                                          bool raw) {
  inference::ModelInferRequest r = audio_request("FP32", {1, static_cast<int64_t>(pcm.size())});
  if (sample_rate) (*r.mutable_inputs(0)->mutable_parameters())["sample_rate"].set_int64_param(*sample_rate);
  if (raw) {
    r.add_raw_input_contents(std::string(reinterpret_cast<const char*>(pcm.data()), pcm.size() * sizeof(float)));
  } else {
    auto* c = r.mutable_inputs(0)->mutable_contents();
    for (float v : pcm) c->add_fp32_contents(v);
  }
  return r;
}

std::map<std::string, Output> outputs_of(const inference::ModelInferResponse& response) {
  std::map<std::string, Output> out;
  EXPECT_EQ(response.raw_output_contents_size(), response.outputs_size());
  for (int i = 0; i < response.outputs_size() && i < response.raw_output_contents_size(); ++i) {
    const auto& t = response.outputs(i);
    Output o;
    o.datatype = t.datatype();
    o.shape.assign(t.shape().begin(), t.shape().end());
    std::string_view data = response.raw_output_contents(i);
    if (o.datatype == "BYTES") {
      while (data.size() >= 4) {
        uint32_t len;
        std::memcpy(&len, data.data(), 4);
        data.remove_prefix(4);
        EXPECT_LE(len, data.size()) << t.name();
        if (len > data.size()) break;
        o.bytes.emplace_back(data.substr(0, len));
        data.remove_prefix(len);
      }
      EXPECT_TRUE(data.empty()) << t.name() << ": trailing bytes";
    } else {
      EXPECT_EQ(o.datatype, "FP32") << t.name();
      EXPECT_EQ(data.size() % 4, 0u) << t.name();
      o.fp32.resize(data.size() / 4);
      std::memcpy(o.fp32.data(), data.data(), o.fp32.size() * 4);
    }
    out[t.name()] = std::move(o);
  }
  return out;
}

std::string trailer(const ::grpc::ClientContext& context, const std::string& key) {
  const auto& md = context.GetServerTrailingMetadata();
  const auto it = md.find(key);
  return it == md.end() ? std::string() : std::string(it->second.data(), it->second.size());
}

int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

}  // namespace steno::testing

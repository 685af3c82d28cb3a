#include "golden.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

namespace steno::testing {

namespace fs = std::filesystem;

std::vector<GoldenCase> all_golden_cases() {
  std::vector<GoldenCase> cases;
  const fs::path prepared = fs::path(STENO_BINARY_DIR) / "testdata";
  cases.push_back({"nemo24", (prepared / "nemo-tiny-24").string(), (prepared / "golden-nemo24").string()});
  cases.push_back({"nemo25", (prepared / "nemo-tiny-25").string(), (prepared / "golden-nemo25").string()});
  const fs::path project = fs::path(STENO_TEST_DATA) / "golden";
  if (fs::is_directory(project)) {
    std::vector<fs::path> dirs;
    for (const auto& entry : fs::directory_iterator(project))
      if (fs::exists(entry.path() / "golden.safetensors")) dirs.push_back(entry.path());
    std::sort(dirs.begin(), dirs.end());
    for (const auto& d : dirs) {
      std::string name = d.filename().string();
      std::replace_if(name.begin(), name.end(), [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); }, '_');
      cases.push_back({name, d.string(), d.string()});
    }
  }
  return cases;
}

GoldenSet::GoldenSet(const std::string& dir) : file_(SafeTensorsFile::open(fs::path(dir) / "golden.safetensors")) {
  std::ifstream in(fs::path(dir) / "golden.json");
  json_ = nlohmann::json::parse(in);
  for (int i = 0; has("audio.clip" + std::to_string(i)); ++i) clips_.push_back(floats("audio.clip" + std::to_string(i)));
}

Tensor GoldenSet::tensor(const std::string& key) const { return file_.get(key); }

std::vector<float> GoldenSet::floats(const std::string& key) const { return file_.get(key).to_vector(); }

std::vector<int64_t> GoldenSet::ints(const std::string& key) const {
  const Tensor t = file_.get(key);
  const int64_t* p = t.data<int64_t>();
  return std::vector<int64_t>(p, p + t.numel());
}

std::vector<int> GoldenSet::ints32(const std::string& key) const {
  const auto v = ints(key);
  return std::vector<int>(v.begin(), v.end());
}

std::string GoldenSet::text(const std::string& key) const { return json_.at("texts").at(key).get<std::string>(); }

int GoldenSet::num_clips() const { return static_cast<int>(clips_.size()); }

double relative_max_error(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return INFINITY;
  double max_diff = 0, max_ref = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    max_diff = std::max(max_diff, static_cast<double>(std::fabs(a[i] - b[i])));
    max_ref = std::max(max_ref, static_cast<double>(std::fabs(b[i])));
  }
  return max_ref > 0 ? max_diff / max_ref : max_diff;
}

}  // namespace steno::testing

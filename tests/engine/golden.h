// Golden sets for the engine tests (docs/model-format.md, "Golden files"): a reference implementation's outputs
// for a model and a few clips, read from golden.safetensors + golden.json.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "steno/core/safetensors.h"

namespace steno::testing {

struct GoldenCase {
  std::string name;        // test-name friendly
  std::string model_dir;   // steno model directory
  std::string golden_dir;  // golden.safetensors + golden.json
};

// gtest prints the case by name (in test names and failures) instead of its bytes.
inline void PrintTo(const GoldenCase& c, std::ostream* os) { *os << c.name; }

// NeMo's own outputs (converted at test time by the prepare_nemo_tiny fixture) and the committed project goldens.
std::vector<GoldenCase> all_golden_cases();

class GoldenSet {
 public:
  explicit GoldenSet(const std::string& golden_dir);

  bool has(const std::string& key) const { return file_.has(key); }
  Tensor tensor(const std::string& key) const;  // as stored
  std::vector<float> floats(const std::string& key) const;
  std::vector<int64_t> ints(const std::string& key) const;
  std::vector<int> ints32(const std::string& key) const;
  std::string text(const std::string& key) const;  // golden.json "texts"
  const nlohmann::json& meta() const { return json_.at("meta"); }  // golden.json "meta"
  int num_clips() const;
  const std::vector<float>& clip(int i) const { return clips_.at(i); }

 private:
  SafeTensorsFile file_;
  nlohmann::json json_;
  std::vector<std::vector<float>> clips_;
};

// max |a - b| / max |b|: the error relative to the reference tensor's largest magnitude.
double relative_max_error(const std::vector<float>& a, const std::vector<float>& b);

}  // namespace steno::testing

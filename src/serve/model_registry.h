// The models a server holds, by name: each with its own batcher, executor pool and statistics. Every route of
// every protocol finds a model here, by its name or one of its aliases (find_model_index in service.h, the one
// lookup).
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "serve/batcher.h"
#include "serve/executor_pool.h"
#include "serve/statistics.h"

namespace steno::serve {

// One served model at work. Declaration order is destruction order in reverse: the pool stops before the batcher
// it pulls from goes away, and `resources` (an MPS daemon the executors use) outlive both.
struct ServedModel {
  ModelInfo info;
  ModelStatistics* stats = nullptr;
  std::shared_ptr<void> resources;
  std::unique_ptr<DynamicBatcher> batcher;
  std::unique_ptr<ExecutorPool> pool;
};

class ModelRegistry {
 public:
  // Throws kInvalidArgument when its name or an alias is already taken (by a name or an alias).
  void add(std::unique_ptr<ServedModel> model);

  // By name or alias; "" is the default (of `task`, when given) where `default_allowed`.
  ServedModel* find(std::string_view name, bool default_allowed, std::string_view task = {}) const;
  const std::vector<ModelInfo>& infos() const { return infos_; }
  const std::vector<std::unique_ptr<ServedModel>>& all() const { return models_; }

 private:
  std::vector<std::unique_ptr<ServedModel>> models_;
  std::vector<ModelInfo> infos_;  // models_[i]->info, kept side by side for lookups
};

}  // namespace steno::serve

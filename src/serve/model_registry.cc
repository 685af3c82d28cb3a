#include "serve/model_registry.h"

#include "steno/core/error.h"

namespace steno::serve {

void ModelRegistry::add(std::unique_ptr<ServedModel> model) {
  STENO_CHECK(model != nullptr, "no model to add");
  const ModelInfo& info = model->info;
  STENO_CHECK(!info.name.empty(), "a served model needs a name");
  auto taken = [&](const std::string& name) {
    for (const ModelInfo& other : infos_) {
      if (other.name == name) return true;
      for (const std::string& alias : other.aliases)
        if (alias == name) return true;
    }
    return false;
  };
  STENO_CHECK(!taken(info.name), "model name '{}' is already taken by another model or alias", info.name);
  for (const std::string& alias : info.aliases) {
    STENO_CHECK(!alias.empty(), "model '{}' has an empty alias", info.name);
    STENO_CHECK(alias != info.name && !taken(alias), "alias '{}' of model '{}' is already taken", alias, info.name);
  }
  infos_.push_back(info);
  models_.push_back(std::move(model));
}

ServedModel* ModelRegistry::find(std::string_view name, bool default_allowed, std::string_view task) const {
  const std::optional<size_t> i = find_model_index(infos_, name, default_allowed, task);
  return i ? models_[*i].get() : nullptr;
}

}  // namespace steno::serve

// cli/weights.cpp: a file or a model folder behind one interface for the reading commands.
#include "weights.hpp"

#include <set>

#include <fmt/core.h>

#include "cli_util.hpp"
#include "tlio/error.hpp"
#include "tlio/location.hpp"

namespace tlio::cli {

Weights Weights::open(const std::string& location) {
  Weights w;
  if (!tlio::is_standard_stream(location) && tlio::is_model_directory(location, open_options())) {
    w.model_.emplace(tlio::Model::open(location, open_options()));
    w.quantized_ = w.model_->quantized();
  } else {
    w.file_.emplace(tlio::File::open(location, open_options()));
    w.quantized_ = tlio::find_quantized_weights(*w.file_);
  }
  return w;
}

const std::string& Weights::name() const noexcept { return model_ ? model_->name() : file_->name(); }

std::span<const tlio::File> Weights::files() const noexcept {
  if (model_) return model_->files();
  return std::span(&*file_, 1);
}

std::pair<const tlio::File*, const tlio::TensorInfo*> Weights::at(std::string_view name) const {
  if (file_) {
    if (const tlio::TensorInfo* t = file_->header().find(name)) return {&*file_, t};
  } else if (const tlio::ModelTensor* t = model_->find(name)) {
    return {&model_->files()[t->file], t->info};
  }
  // Not there: the nearest name, or the logical name of a quantized weight's part.
  std::vector<std::string> names;
  for (const tlio::TensorInfo* t : tensors()) names.push_back(t->name);
  for (const tlio::QuantizedWeight& q : quantized_) names.push_back(q.name);
  const std::string near = closest(std::string(name), names);
  throw tlio::Error(tlio::ErrorCode::not_found, tlio::Rule::none, std::string(name), std::nullopt,
                    fmt::format("no tensor named {}{}", json_string(name),
                                near.empty() ? "" : fmt::format("; did you mean {}?", json_string(near))),
                    this->name());
}

std::vector<const tlio::TensorInfo*> Weights::tensors() const {
  std::vector<const tlio::TensorInfo*> out;
  for (const tlio::File& f : files())
    for (const tlio::TensorInfo& t : f.tensors()) out.push_back(&t);
  return out;
}

std::vector<std::string> Weights::value_names() const {
  std::set<std::string_view> parts;
  for (const tlio::QuantizedWeight& q : quantized_) parts.insert(q.stored.begin(), q.stored.end());
  std::vector<std::string> names;
  for (const tlio::TensorInfo* t : tensors())
    if (!parts.contains(t->name)) names.push_back(t->name);
  for (const tlio::QuantizedWeight& q : quantized_) names.push_back(q.name);
  return names;
}

}  // namespace tlio::cli

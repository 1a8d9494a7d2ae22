// cli/weights.cpp: a file or a model folder behind one interface for the reading commands.
#include "weights.hpp"

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
  if (file_) return {&*file_, &file_->header().at(name)};
  const tlio::ModelTensor* t = model_->find(name);
  if (!t)
    throw tlio::Error(tlio::ErrorCode::not_found, tlio::Rule::none, std::string(name), std::nullopt,
                      fmt::format("no tensor named {}", json_string(name)), model_->name());
  return {&model_->files()[t->file], t->info};
}

std::vector<const tlio::TensorInfo*> Weights::tensors() const {
  std::vector<const tlio::TensorInfo*> out;
  for (const tlio::File& f : files())
    for (const tlio::TensorInfo& t : f.tensors()) out.push_back(&t);
  return out;
}

}  // namespace tlio::cli

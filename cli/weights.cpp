// cli/weights.cpp: a file or a model folder behind one interface for the reading commands.
#include "weights.hpp"

#include <mutex>
#include <set>

#include <fmt/core.h>

#include "cli_util.hpp"
#include "gguf_listing.hpp"
#include "tlio/error.hpp"
#include "tlio/location.hpp"

namespace tlio::cli {

Weights Weights::open(const std::string& location) {
  Weights w;
  if (is_gguf_input(location)) {
    w.gguf_.emplace(tlio::GgufFile::open(location, open_options()));
    w.gguf_metadata_ = tlio::gguf_scalar_metadata(*w.gguf_);
  } else if (!tlio::is_standard_stream(location) && tlio::is_model_directory(location, open_options())) {
    w.model_.emplace(tlio::Model::open(location, open_options()));
    w.quantized_ = w.model_->quantized();
  } else {
    w.file_.emplace(tlio::File::open(location, open_options()));
    w.quantized_ = tlio::find_quantized_weights(*w.file_);
  }
  return w;
}

const std::string& Weights::name() const noexcept {
  return gguf_ ? gguf_->name() : model_ ? model_->name() : file_->name();
}

std::span<const tlio::File> Weights::files() const noexcept {
  if (model_) return model_->files();
  if (gguf_) return {};
  return std::span(&*file_, 1);
}

std::optional<DecodedValues> Weights::decoded(std::string_view name) const {
  if (gguf_) {
    const tlio::GgufTensorInfo* t = gguf_->tensor(name);
    if (!t) {
      (void)at(name);  // throws the not-found error, with the nearest name
      return std::nullopt;
    }
    const tlio::GgufFile file = *gguf_;  // shares the open file
    return DecodedValues{t->shape(), std::string(tlio::ggml_type(t->type)->name), t->bytes,
                         [file, t](uint64_t first, uint64_t count, std::span<std::byte> f32) {
                           file.read_values(*t, first, count, tlio::Dtype::F32, f32);
                         }};
  }
  const auto q = std::find_if(quantized_.begin(), quantized_.end(), [&](const auto& x) { return x.name == name; });
  if (q == quantized_.end()) return std::nullopt;
  // The reader (views of the packed bytes: copies for a URL) is made at the first read, so a
  // command listing many weights holds one at a time.
  struct Lazy {
    std::once_flag made;
    std::optional<tlio::QuantizedReader> reader;
  };
  auto lazy = std::make_shared<Lazy>();
  return DecodedValues{{q->shape.begin(), q->shape.end()}, q->scheme.name(), q->stored_bytes,
                       [this, weight = *q, lazy](uint64_t first, uint64_t count, std::span<std::byte> f32) {
                         std::call_once(lazy->made, [&] { lazy->reader.emplace(reader(weight)); });
                         lazy->reader->read(first, count, tlio::Dtype::F32, f32);
                       }};
}

std::pair<const tlio::File*, const tlio::TensorInfo*> Weights::at(std::string_view name) const {
  if (file_) {
    if (const tlio::TensorInfo* t = file_->header().find(name)) return {&*file_, t};
  } else if (model_) {
    if (const tlio::ModelTensor* t = model_->find(name))
    return {&model_->files()[t->file], t->info};
  }
  // Not there: the nearest name, or the logical name of a quantized weight's part.
  const std::vector<std::string> names = value_names();
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
  if (gguf_) {
    std::vector<std::string> names;
    for (const tlio::GgufTensorInfo& t : gguf_->tensors()) names.push_back(t.name);
    return names;
  }
  std::set<std::string_view> parts;
  for (const tlio::QuantizedWeight& q : quantized_) parts.insert(q.stored.begin(), q.stored.end());
  std::vector<std::string> names;
  for (const tlio::TensorInfo* t : tensors())
    if (!parts.contains(t->name)) names.push_back(t->name);
  for (const tlio::QuantizedWeight& q : quantized_) names.push_back(q.name);
  return names;
}

}  // namespace tlio::cli

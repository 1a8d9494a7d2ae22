// report/weights.cpp: a file, a model folder or a GGUF file behind one interface for readers of
// values by name.
#include "tlio/weights.hpp"

#include <algorithm>
#include <mutex>
#include <set>

#include <fmt/core.h>

#include "common/json_text.hpp"
#include "tlio/error.hpp"
#include "tlio/ggml.hpp"
#include "tlio/location.hpp"

namespace tlio {

std::string closest_name(const std::string& word, std::span<const std::string> candidates) {
  // Levenshtein distance, one row at a time.
  const auto distance = [](const std::string& a, const std::string& b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
      size_t diagonal = row[0];
      row[0] = i;
      for (size_t j = 1; j <= b.size(); ++j) {
        const size_t up = row[j];
        row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
        diagonal = up;
      }
    }
    return row[b.size()];
  };
  const size_t limit = std::min<size_t>(3, std::max<size_t>(1, word.size() / 3));
  std::string best;
  size_t best_distance = limit + 1;
  for (const std::string& c : candidates) {
    const size_t d = distance(word, c);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  return best;
}

Weights Weights::open(const std::string& location, const OpenOptions& options) {
  Weights w;
  if (is_gguf_location(location)) {
    w.gguf_.emplace(GgufFile::open(location, options));
    w.gguf_metadata_ = gguf_scalar_metadata(*w.gguf_);
  } else if (!is_standard_stream(location) && is_model_directory(location, options)) {
    w.model_.emplace(Model::open(location, options));
    w.quantized_ = w.model_->quantized();
  } else {
    w.file_.emplace(File::open(location, options));
    w.quantized_ = find_quantized_weights(*w.file_);
  }
  return w;
}

uint64_t Weights::stored_size() const noexcept {
  if (gguf_) return gguf_->size();
  uint64_t total = 0;
  for (const File& f : files()) total += f.file_size();
  return total;
}

const std::string& Weights::name() const noexcept {
  return gguf_ ? gguf_->name() : model_ ? model_->name() : file_->name();
}

std::span<const File> Weights::files() const noexcept {
  if (model_) return model_->files();
  if (gguf_) return {};
  return std::span(&*file_, 1);
}

std::optional<DecodedValues> Weights::decoded(std::string_view name) const {
  if (gguf_) {
    const GgufTensorInfo* t = gguf_->tensor(name);
    if (!t) {
      (void)at(name);  // throws the not-found error, with the nearest name
      return std::nullopt;
    }
    const GgufFile file = *gguf_;  // shares the open file
    return DecodedValues{t->shape(), std::string(ggml_type(t->type)->name), t->bytes, ggml_decodes(t->type),
                         [file, t](uint64_t first, uint64_t count, std::span<std::byte> f32) {
                           file.read_values(*t, first, count, Dtype::F32, f32);
                         }};
  }
  const auto q = std::find_if(quantized_.begin(), quantized_.end(), [&](const auto& x) { return x.name == name; });
  if (q == quantized_.end()) return std::nullopt;
  // The reader (views of the packed bytes: copies for a URL) is made at the first read, so a
  // command listing many weights holds one at a time; it reads shares of the files, so the
  // values outlive this Weights.
  struct Lazy {
    std::vector<File> files;
    std::once_flag made;
    std::optional<QuantizedReader> reader;
  };
  auto lazy = std::make_shared<Lazy>();
  for (const File& f : files()) lazy->files.push_back(f.share());
  return DecodedValues{{q->shape.begin(), q->shape.end()}, q->scheme.name(), q->stored_bytes, true,
                       [weight = *q, lazy](uint64_t first, uint64_t count, std::span<std::byte> f32) {
                         std::call_once(lazy->made, [&] { lazy->reader.emplace(lazy->files, weight); });
                         lazy->reader->read(first, count, Dtype::F32, f32);
                       }};
}

std::pair<const File*, const TensorInfo*> Weights::at(std::string_view name) const {
  if (file_) {
    if (const TensorInfo* t = file_->header().find(name)) return {&*file_, t};
  } else if (model_) {
    if (const ModelTensor* t = model_->find(name)) return {&model_->files()[t->file], t->info};
  }
  // Not there: the nearest name, or the logical name of a quantized weight's part.
  const std::vector<std::string> names = value_names();
  const std::string near = closest_name(std::string(name), names);
  throw Error(ErrorCode::not_found, Rule::none, std::string(name), std::nullopt,
              fmt::format("no tensor named {}{}", detail::quote_name(name),
                          near.empty() ? "" : fmt::format("; did you mean {}?", detail::quote_name(near))),
              this->name());
}

std::vector<const TensorInfo*> Weights::tensors() const {
  std::vector<const TensorInfo*> out;
  for (const File& f : files())
    for (const TensorInfo& t : f.tensors()) out.push_back(&t);
  return out;
}

std::vector<std::string> Weights::value_names() const {
  if (gguf_) {
    std::vector<std::string> names;
    for (const GgufTensorInfo& t : gguf_->tensors()) names.push_back(t.name);
    return names;
  }
  std::set<std::string_view> parts;
  for (const QuantizedWeight& q : quantized_) parts.insert(q.stored.begin(), q.stored.end());
  std::vector<std::string> names;
  for (const TensorInfo* t : tensors())
    if (!parts.contains(t->name)) names.push_back(t->name);
  for (const QuantizedWeight& q : quantized_) names.push_back(q.name);
  return names;
}

}  // namespace tlio

// report/weights_safetensors.cpp: safetensors behind the Weights interface: one file, or a
// model folder whose shards are one namespace. Both read stored tensors as views and quantized
// weights through their scheme's decoder; they differ only in where the files come from.
#include <algorithm>
#include <mutex>
#include <set>

#include "report/weights_containers.hpp"
#include "tlio/model.hpp"

namespace tlio::detail {

namespace {

// What a file and a folder share: names, stored tensors and quantized weights over files().
class StoredWeights : public Weights {
 public:
  std::optional<DecodedValues> decoded(std::string_view name) const override {
    const auto q = std::find_if(quantized_.begin(), quantized_.end(),
                                [&](const auto& x) { return x.name == name; });
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
    return DecodedValues{
        {q->shape.begin(), q->shape.end()},
        q->scheme.name(),
        q->stored_bytes,
        true,
        [weight = *q, lazy](uint64_t first, uint64_t count, std::span<std::byte> f32) {
          std::call_once(lazy->made, [&] { lazy->reader.emplace(lazy->files, weight); });
          lazy->reader->read(first, count, Dtype::F32, f32);
        }};
  }

  std::vector<std::string> value_names() const override {
    std::set<std::string_view> parts;
    for (const QuantizedWeight& q : quantized_) parts.insert(q.stored.begin(), q.stored.end());
    std::vector<std::string> names;
    for (const TensorInfo* t : tensors())
      if (!parts.contains(t->name)) names.push_back(t->name);
    for (const QuantizedWeight& q : quantized_) names.push_back(q.name);
    return names;
  }

  const Metadata& metadata() const noexcept override { return files().front().metadata(); }

  uint64_t stored_size() const noexcept override {
    uint64_t total = 0;
    for (const File& f : files()) total += f.file_size();
    return total;
  }

  const std::vector<QuantizedWeight>& quantized() const noexcept override { return quantized_; }

 protected:
  std::vector<QuantizedWeight> quantized_;
};

class FileWeights final : public StoredWeights {
 public:
  explicit FileWeights(File file) : file_(std::move(file)) {
    quantized_ = find_quantized_weights(file_);
  }
  WeightsKind kind() const noexcept override { return WeightsKind::safetensors; }
  const std::string& name() const noexcept override { return file_.name(); }
  std::span<const File> files() const noexcept override { return std::span(&file_, 1); }
  std::pair<const File*, const TensorInfo*> at(std::string_view name) const override {
    if (const TensorInfo* t = file_.header().find(name)) return {&file_, t};
    throw_not_found(name);
  }

 private:
  File file_;
};

class FolderWeights final : public StoredWeights {
 public:
  explicit FolderWeights(Model model) : model_(std::move(model)) {
    quantized_ = model_.quantized();
  }
  WeightsKind kind() const noexcept override { return WeightsKind::model_folder; }
  const std::string& name() const noexcept override { return model_.name(); }
  std::span<const File> files() const noexcept override { return model_.files(); }
  std::pair<const File*, const TensorInfo*> at(std::string_view name) const override {
    if (const ModelTensor* t = model_.find(name)) return {&model_.files()[t->file], t->info};
    throw_not_found(name);
  }
  const std::string& config_json() const noexcept override { return model_.config_json(); }
  std::string quantization_config() const override {
    return std::string(model_.quantization_config());
  }

 private:
  Model model_;
};

}  // namespace

std::unique_ptr<const Weights> open_file_weights(const std::string& location,
                                                 const OpenOptions& options) {
  return std::make_unique<FileWeights>(File::open(location, options));
}

std::unique_ptr<const Weights> open_folder_weights(const std::string& location,
                                                   const OpenOptions& options) {
  return std::make_unique<FolderWeights>(Model::open(location, options));
}

}  // namespace tlio::detail

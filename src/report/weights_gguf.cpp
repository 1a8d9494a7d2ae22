// report/weights_gguf.cpp: a GGUF file behind the Weights interface: every tensor, block types
// and plain ones alike, read through GgufFile::read_values as F32; its numbers and strings as
// metadata.
#include "report/weights_containers.hpp"
#include "tlio/ggml.hpp"
#include "tlio/gguf.hpp"
#include "tlio/gguf_convert.hpp"

namespace tlio::detail {

namespace {

class GgufWeights final : public Weights {
 public:
  explicit GgufWeights(GgufFile file)
      : file_(std::move(file)), metadata_(gguf_scalar_metadata(file_)) {}
  WeightsKind kind() const noexcept override { return WeightsKind::gguf; }
  const std::string& name() const noexcept override { return file_.name(); }
  std::span<const File> files() const noexcept override { return {}; }
  std::optional<DecodedValues> decoded(std::string_view name) const override {
    const GgufTensorInfo* t = file_.tensor(name);
    if (!t) throw_not_found(name);
    return DecodedValues{
        t->shape(), std::string(ggml_type(t->type)->name), t->bytes, ggml_decodes(t->type),
        [file = file_, t](uint64_t first, uint64_t count, std::span<std::byte> f32) {
          file.read_values(*t, first, count, Dtype::F32, f32);  // a share of the open file
        }};
  }
  std::vector<std::string> value_names() const override {
    std::vector<std::string> names;
    for (const GgufTensorInfo& t : file_.tensors()) names.push_back(t.name);
    return names;
  }
  const Metadata& metadata() const noexcept override { return metadata_; }
  uint64_t stored_size() const noexcept override { return file_.size(); }
  size_t file_count() const noexcept override { return file_.splits(); }

 private:
  GgufFile file_;
  Metadata metadata_;
};

}  // namespace

std::unique_ptr<const Weights> open_gguf_weights(const std::string& location,
                                                 const OpenOptions& options) {
  return std::make_unique<GgufWeights>(GgufFile::open(location, options));
}

}  // namespace tlio::detail

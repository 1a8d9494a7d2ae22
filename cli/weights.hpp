// cli/weights.hpp: what the reading commands (cat, stats, diff, metadata) open: one file, a
// model folder (shards with their index, or model.safetensors; config.json optional) whose
// shards are read as one namespace, or a GGUF file, at any location.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tlio/file.hpp"
#include "tlio/gguf.hpp"
#include "tlio/model.hpp"
#include "tlio/quant.hpp"

namespace tlio::cli {

/// A name whose values are decoded by element range rather than viewed (a quantized weight, or
/// a tensor of a GGUF file): its shape, the type it is shown as ("nf4", "Q4_K"), its stored
/// bytes, and a reader of elements [first, first + count) as F32 (thread-safe).
struct DecodedValues {
  std::vector<uint64_t> shape;
  std::string type;
  uint64_t stored_bytes = 0;
  std::function<void(uint64_t first, uint64_t count, std::span<std::byte> f32)> read;
};

class Weights {
 public:
  /// A GGUF file when is_gguf_input says so, a model folder when tlio::is_model_directory says
  /// so, else a file (or "-").
  static Weights open(const std::string& location);

  /// The input as messages name it.
  const std::string& name() const noexcept;
  /// The file, or the folder's shards in index order; none for a GGUF file.
  std::span<const tlio::File> files() const noexcept;
  /// The GGUF file, or null.
  const tlio::GgufFile* gguf() const noexcept { return gguf_ ? &*gguf_ : nullptr; }
  /// How `name` is decoded, or nullopt for a stored safetensors tensor (see at()).
  std::optional<DecodedValues> decoded(std::string_view name) const;
  bool is_folder() const noexcept { return model_.has_value(); }
  /// A folder's quantization_config (JSON text), "" for a file.
  std::string quantization_config() const { return model_ ? std::string(model_->quantization_config()) : ""; }
  /// The stored tensor `name` and its file; Error{not_found} naming the input when none has it.
  std::pair<const tlio::File*, const tlio::TensorInfo*> at(std::string_view name) const;
  /// Every stored tensor, file by file, each file's in offset order.
  std::vector<const tlio::TensorInfo*> tensors() const;
  /// The names values are read by: the stored tensors that are no quantized weight's part, in
  /// tensors()' order, then the quantized weights' logical names.
  std::vector<std::string> value_names() const;
  /// The quantized weights of all files (parts may be in different shards).
  const std::vector<tlio::QuantizedWeight>& quantized() const noexcept { return quantized_; }
  /// A reader of one of quantized().
  tlio::QuantizedReader reader(const tlio::QuantizedWeight& w) const { return {files(), w}; }
  /// The metadata of the file, or of the folder's first shard; a GGUF's numbers and strings.
  const tlio::Metadata& metadata() const { return gguf_ ? gguf_metadata_ : files().front().metadata(); }

 private:
  std::optional<tlio::GgufFile> gguf_;
  tlio::Metadata gguf_metadata_;
  std::optional<tlio::File> file_;
  std::optional<tlio::Model> model_;
  std::vector<tlio::QuantizedWeight> quantized_;
};

}  // namespace tlio::cli

// tlio/weights.hpp: any input of weights read by name: one safetensors file, a model folder
// (shards with their index, or model.safetensors; config.json optional) whose shards are one
// namespace, or a GGUF file, at any location. What the reading commands (cat, stats, diff,
// metadata) and reports open.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tlio/export.hpp"
#include "tlio/file.hpp"
#include "tlio/gguf.hpp"
#include "tlio/model.hpp"
#include "tlio/quant.hpp"

namespace tlio {

/// A name whose values are decoded by element range rather than viewed (a quantized weight, or
/// a tensor of a GGUF file): its shape, the type it is shown as ("nf4", "Q4_K"), its stored
/// bytes, whether tlio decodes it (not the IQ1/IQ2/IQ3 ggml types: their read throws
/// Error{unsupported}), and a reader of elements [first, first + count) as F32 (thread-safe;
/// it holds the files it reads, so it may outlive the Weights that made it).
struct DecodedValues {
  std::vector<uint64_t> shape;
  std::string type;
  uint64_t stored_bytes = 0;
  bool decodes = true;
  std::function<void(uint64_t first, uint64_t count, std::span<std::byte> f32)> read;
};

/// The closest of `candidates` to `word` by edit distance (at most a third of its length, but at
/// least 1 and at most 3), or "" when none is that close: the "did you mean" of messages.
TLIO_API std::string closest_name(const std::string& word, std::span<const std::string> candidates);

class TLIO_API Weights {
 public:
  /// A GGUF file when is_gguf_location says so, a model folder when is_model_directory says so,
  /// else a file (or "-").
  static Weights open(const std::string& location, const OpenOptions& options = {});

  /// The input as messages name it.
  const std::string& name() const noexcept;
  /// The file, or the folder's shards in index order; none for a GGUF file.
  std::span<const File> files() const noexcept;
  /// The GGUF file, or null.
  const GgufFile* gguf() const noexcept { return gguf_ ? &*gguf_ : nullptr; }
  /// The model folder, or null.
  const Model* model() const noexcept { return model_ ? &*model_ : nullptr; }
  /// How `name` is decoded, or nullopt for a stored safetensors tensor (see at()).
  std::optional<DecodedValues> decoded(std::string_view name) const;
  bool is_folder() const noexcept { return model_.has_value(); }
  /// A folder's config.json (its text), "" for a file or a folder without one.
  const std::string& config_json() const noexcept { return model_ ? model_->config_json() : no_text_; }
  /// A folder's quantization_config (JSON text), "" for a file.
  std::string quantization_config() const { return model_ ? std::string(model_->quantization_config()) : ""; }
  /// The stored tensor `name` and its file; Error{not_found} naming the input when none has it.
  std::pair<const File*, const TensorInfo*> at(std::string_view name) const;
  /// Every stored tensor, file by file, each file's in offset order.
  std::vector<const TensorInfo*> tensors() const;
  /// The names values are read by: the stored tensors that are no quantized weight's part, in
  /// tensors()' order, then the quantized weights' logical names; a GGUF's tensors in its order.
  std::vector<std::string> value_names() const;
  /// The quantized weights of all files (parts may be in different shards).
  const std::vector<QuantizedWeight>& quantized() const noexcept { return quantized_; }
  /// A reader of one of quantized().
  QuantizedReader reader(const QuantizedWeight& w) const { return {files(), w}; }
  /// The metadata of the file, or of the folder's first shard; a GGUF's numbers and strings.
  const Metadata& metadata() const { return gguf_ ? gguf_metadata_ : files().front().metadata(); }
  /// The bytes of the weight files (every shard; a GGUF file whole).
  uint64_t stored_size() const noexcept;

 private:
  std::optional<GgufFile> gguf_;
  Metadata gguf_metadata_;
  std::optional<File> file_;
  std::optional<Model> model_;
  std::string no_text_;  // what a file's config_json() refers to
  std::vector<QuantizedWeight> quantized_;
};

}  // namespace tlio

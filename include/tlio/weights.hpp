// tlio/weights.hpp: any input of weights read by name: one safetensors file, a model folder
// (shards with their index, or model.safetensors; config.json optional) whose shards are one
// namespace, or a GGUF file, at any location. What the reading commands (cat, stats, diff,
// metadata) and reports open.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tlio/export.hpp"
#include "tlio/file.hpp"
#include "tlio/quant.hpp"
#include "tlio/weights_kind.hpp"

namespace tlio {

/// A name whose values are decoded by element range rather than viewed (a quantized weight, or
/// a tensor of a GGUF file): its shape, the type it is shown as ("nf4", "Q4_K"), its stored
/// bytes, whether tlio decodes it (not the IQ1/IQ2/IQ3 and Q8_1 ggml types: their read throws
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

/// Weights read by name, whatever holds them: the interface every container implements (a
/// safetensors file, a model folder, a GGUF file; report/weights_*.cpp, one unit each), opened by
/// one function that asks weights_kind once. Readers ask it for names, stored tensors and
/// decoded values, never which container it is, except where a container's own facts matter
/// (kind(): reports name it; pairing a GGUF file with a folder).
class TLIO_API Weights {
 public:
  virtual ~Weights();
  Weights(const Weights&) = delete;
  Weights& operator=(const Weights&) = delete;

  /// `location` opened as what weights_kind says it holds (tlio/weights_kind.hpp).
  static std::unique_ptr<const Weights> open(const std::string& location,
                                             const OpenOptions& options = {});

  virtual WeightsKind kind() const noexcept = 0;
  /// The input as messages name it.
  virtual const std::string& name() const noexcept = 0;
  /// The safetensors files: the file, or the folder's shards in index order; none for a GGUF.
  virtual std::span<const File> files() const noexcept = 0;
  /// How `name` is decoded (a quantized weight, a GGUF tensor), or nullopt for a stored
  /// safetensors tensor (see at()). Error{not_found} for a GGUF name it does not have.
  virtual std::optional<DecodedValues> decoded(std::string_view name) const = 0;
  /// The stored safetensors tensor `name` and its file; Error{not_found} naming the input and
  /// the nearest name when none has it (a GGUF has none).
  virtual std::pair<const File*, const TensorInfo*> at(std::string_view name) const;
  /// The names values are read by: the stored tensors that are no quantized weight's part, in
  /// tensors()' order, then the quantized weights' logical names; a GGUF's tensors in its order.
  virtual std::vector<std::string> value_names() const = 0;
  /// The metadata of the file, or of the folder's first shard; a GGUF's numbers and strings.
  virtual const Metadata& metadata() const noexcept = 0;
  /// The bytes of the weight files (every shard; a GGUF file, every file of a split set).
  virtual uint64_t stored_size() const noexcept = 0;
  /// The weight files: shards, or the files of a GGUF split set.
  virtual size_t file_count() const noexcept { return files().size(); }
  /// A folder's config.json (its text), "" for a file or a folder without one.
  virtual const std::string& config_json() const noexcept;
  /// A folder's quantization_config (JSON text), "" otherwise.
  virtual std::string quantization_config() const;
  /// The quantized weights of all files (parts may be in different shards); none for a GGUF.
  virtual const std::vector<QuantizedWeight>& quantized() const noexcept;

  /// Every stored safetensors tensor, file by file, each file's in offset order.
  std::vector<const TensorInfo*> tensors() const;
  /// A reader of one of quantized().
  QuantizedReader reader(const QuantizedWeight& w) const { return {files(), w}; }

 protected:
  Weights() = default;
  /// Error{not_found} for `name`, with the nearest of value_names().
  [[noreturn]] void throw_not_found(std::string_view name) const;
};

}  // namespace tlio

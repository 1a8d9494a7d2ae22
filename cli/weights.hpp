// cli/weights.hpp: what the reading commands (cat, stats, diff, metadata) open: one file, or a
// model folder (shards with their index, or model.safetensors; config.json optional) whose
// shards are read as one namespace, at any location.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tlio/file.hpp"
#include "tlio/model.hpp"
#include "tlio/quant.hpp"

namespace tlio::cli {

class Weights {
 public:
  /// A model folder when tlio::is_model_directory says so, else a file (or "-").
  static Weights open(const std::string& location);

  /// The input as messages name it.
  const std::string& name() const noexcept;
  /// The file, or the folder's shards in index order.
  std::span<const tlio::File> files() const noexcept;
  bool is_folder() const noexcept { return model_.has_value(); }
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
  /// The metadata of the file, or of the folder's first shard.
  const tlio::Metadata& metadata() const { return files().front().metadata(); }

 private:
  std::optional<tlio::File> file_;
  std::optional<tlio::Model> model_;
  std::vector<tlio::QuantizedWeight> quantized_;
};

}  // namespace tlio::cli

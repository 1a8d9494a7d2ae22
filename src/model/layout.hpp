// model/layout.hpp: the files of a model directory's weights and how a new set replaces an old.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "io/atomic_file.hpp"
#include "model/location.hpp"
#include "model/shard_index.hpp"
#include "tlio/file.hpp"

namespace tlio::detail {

/// What makes a folder a model directory (its architecture, for transformers).
inline constexpr const char* kConfigFile = "config.json";
inline constexpr const char* kSingleWeightsFile = "model.safetensors";
inline constexpr const char* kShardIndexFile = "model.safetensors.index.json";
/// The weights of a folder saved by torch.save (transformers before safetensors).
inline constexpr const char* kTorchWeightsFile = "pytorch_model.bin";
inline constexpr const char* kTorchIndexFile = "pytorch_model.bin.index.json";

/// Where older GPTQ folders keep their quantization options (newer ones: config.json's
/// quantization_config).
inline constexpr const char* kGptqConfigFile = "quantize_config.json";

/// The folder's quantization_config as JSON text: config.json's member (`config_text`, or read
/// when nullopt), else its "quantization" object (MLX's), else quantize_config.json when `weights`
/// hold GPTQ's `.qzeros` (asked for only then: a request less for every other remote folder), else
/// "". The quantized formats of the Hub take their options from it (quant/hub/).
std::string read_quantization_config(const ModelLocation& where, const std::vector<File>& weights,
                                     const std::optional<std::string>& config_text = std::nullopt);

/// A folder's weights, opened: the shards its index names (checked against it), else
/// model.safetensors alone.
struct WeightFiles {
  std::vector<std::string> names;
  std::vector<File> files;
  bool sharded = false;
};
/// Opens `where`'s weights. A folder whose weights are a PyTorch checkpoint gets a format
/// error that points to `tlio import`.
WeightFiles open_weights(const ModelLocation& where);
/// Opens the shards the index `index_file` of `where` names and checks them against it (the one
/// reading of an index: open_weights, and validate's indexes of any name); nullopt when there
/// is no such file.
std::optional<WeightFiles> open_indexed_weights(const ModelLocation& where,
                                                std::string_view index_file);

/// The shard each item goes to (0, 1, ...), greedily in the order given: a new shard starts when
/// the next item would take the current one past `max_size` (an item larger than that gets a
/// shard of its own), as transformers shards.
std::vector<size_t> plan_shards(std::span<const uint64_t> sizes, uint64_t max_size);

/// "model.safetensors" for one file, else "model-00001-of-00003.safetensors" (1-based `i`).
std::string weights_file_name(size_t i, size_t count);

/// Makes `dir` ready to take a set of output files: created (with its parents) when it is a
/// local folder; nothing for an object store's prefix, where folders need no creating.
void create_output_folder(const Location& dir);

/// Publishes `set`, the new weights of `dir` (the shards then their index, or
/// model.safetensors alone), in place of the previous ones: the new files are renamed in (the
/// index last), then the .safetensors files the previous index named that the new set does not
/// have are removed, and the previous index when the new set has none; all with the stop
/// signals held. Files no index named are left alone. Only while the renames run (a few system
/// calls) can a reader see new shards beside the old index, when the two sets share names.
/// In an object store the files are uploaded one by one (the index last), then the previous
/// set's other shards deleted.
/// `stale`: side files (tokenizer.json, ...) of the previous model that the new set does not
/// replace and that would not match it; they are removed after the renames, as the shards are.
void publish_weights(OutputSet& set, const Location& dir, std::span<const std::string> new_files,
                     std::span<const std::string_view> stale = {});

}  // namespace tlio::detail

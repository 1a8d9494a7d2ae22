#include "model/layout.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <system_error>

#include "common/json_members.hpp"
#include "io/store.hpp"
#include "model/shard_index.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {

std::string read_quantization_config(const ModelLocation& where, const std::vector<File>& weights,
                                     const std::optional<std::string>& config_text) {
  const std::optional<std::string> config =
      config_text ? config_text : where.read_text(kConfigFile);
  // MLX's folders have "quantization" (mlx-lm now writes "quantization_config" as a copy); a
  // null member says none.
  if (config) {
    bool none = false;
    for (const char* name : {"quantization_config", "quantization"}) {
      const auto member = json_member_text(*config, name, where.name_of(kConfigFile), Rule::model);
      if (!member) continue;
      if (*member == "null")
        none = true;
      else if (std::string_view(name) == "quantization_config" || member->starts_with('{'))
        return *member;
    }
    if (none) return {};
  }
  for (const File& f : weights)
    for (const TensorInfo& t : f.tensors())
      if (t.name.ends_with(".qzeros")) return where.read_text(kGptqConfigFile).value_or("");
  return {};
}
namespace {

// The shards the folder's index names now (none without an index, or with one that does not
// parse: then nothing is removed).
std::vector<std::string> indexed_shards(const Location& dir, bool& has_index) {
  const Location index = dir.join(kShardIndexFile);
  const std::optional<std::string> text = store_of(index).read_small(index, {});
  has_index = text.has_value();
  if (!text) return {};
  try {
    return parse_shard_index(*text, index.display()).files;
  } catch (const Error& e) {
    if (e.code() == ErrorCode::interrupted) throw;
    return {};
  }
}

// The new set is published, so a file of the old one that cannot be deleted stays (no index
// names it) and is not an error of the write.
void remove_replaced_file(const Location& file) {
  try {
    store_of(file).remove(file);
  } catch (const Error& e) {
    if (e.code() == ErrorCode::interrupted) throw;
  }
}

// Only a plain .safetensors file name of this folder is ever removed (an index could name
// anything), and a local store removes only regular files.
void remove_weights_file(const Location& dir, const std::string& name) {
  if (name.find('/') != std::string::npos || !name.ends_with(".safetensors") ||
      name.size() == std::string_view(".safetensors").size())
    return;
  remove_replaced_file(dir.join(name));
}

}  // namespace

std::optional<WeightFiles> open_indexed_weights(const ModelLocation& where,
                                                std::string_view index_file) {
  const std::optional<std::string> index_text = where.read_text(index_file);
  if (!index_text) return std::nullopt;
  const std::string index_name = where.name_of(index_file);
  WeightFiles w;
  w.sharded = true;
  const ShardIndex index = parse_shard_index(*index_text, index_name);
  for (const std::string& name : index.files) {
    w.names.push_back(name);
    w.files.push_back(where.open(name));
  }
  check_shard_index(index, w.files, index_name);
  return w;
}

WeightFiles open_weights(const ModelLocation& where) {
  if (std::optional<WeightFiles> sharded = open_indexed_weights(where, kShardIndexFile))
    return std::move(*sharded);
  WeightFiles w;
  try {
    w.files.push_back(where.open(kSingleWeightsFile));
  } catch (const Error& e) {
    // Named as what it is when the weights are a PyTorch checkpoint.
    if (e.code() == ErrorCode::io && e.os_error() == std::errc::no_such_file_or_directory &&
        (where.exists(kTorchWeightsFile) || where.exists(kTorchIndexFile)))
      throw Error(ErrorCode::format, Rule::model, kSingleWeightsFile, std::nullopt,
                  fmt::format("the weights are a PyTorch checkpoint ({}), not safetensors: "
                              "convert the directory with `tlio import`",
                              kTorchWeightsFile),
                  where.name());
    throw;
  }
  w.names.push_back(kSingleWeightsFile);
  return w;
}

std::vector<size_t> plan_shards(std::span<const uint64_t> sizes, uint64_t max_size) {
  std::vector<size_t> shard_of(sizes.size());
  size_t shard = 0;
  uint64_t used = 0;
  for (size_t k = 0; k < sizes.size(); ++k) {
    if (k > 0 && used + sizes[k] > max_size) {
      ++shard;
      used = 0;
    }
    shard_of[k] = shard;
    used += sizes[k];
  }
  return shard_of;
}

std::string weights_file_name(size_t i, size_t count) {
  return count == 1 ? std::string(kSingleWeightsFile)
                    : fmt::format("model-{:05}-of-{:05}.safetensors", i, count);
}

void create_output_folder(const Location& dir) { store_of(dir).make_directory(dir); }

void publish_weights(OutputSet& set, const Location& where, std::span<const std::string> new_files,
                     std::span<const std::string_view> stale) {
  bool had_index = false;
  const std::vector<std::string> previous = indexed_shards(where, had_index);
  const bool has_index =
      std::find(new_files.begin(), new_files.end(), kShardIndexFile) != new_files.end();
  set.commit([&] {
    // A previous index left beside a new model.safetensors would still be read first; a
    // previous model.safetensors beside a new index would be read first by transformers.
    if (had_index && !has_index) remove_replaced_file(where.join(kShardIndexFile));
    if (!had_index && has_index &&
        std::find(new_files.begin(), new_files.end(), kSingleWeightsFile) == new_files.end())
      remove_replaced_file(where.join(kSingleWeightsFile));
    for (const std::string& name : previous)
      if (std::find(new_files.begin(), new_files.end(), name) == new_files.end())
        remove_weights_file(where, name);
    for (std::string_view name : stale)
      if (std::find(new_files.begin(), new_files.end(), name) == new_files.end())
        remove_replaced_file(where.join(std::string(name)));
  });
}

}  // namespace tlio::detail

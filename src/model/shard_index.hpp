// model/shard_index.hpp: shard indexes (model.safetensors.index.json, pytorch_model.bin.index.json
// and indexes of other names): read and checked (every failure a format error naming the index),
// checked against the names its shards hold, and written as transformers does.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/json_doc.hpp"
#include "tlio/file.hpp"

namespace tlio::detail {

struct ShardIndex {
  std::vector<std::pair<std::string, std::string>> weight_map;  // tensor -> file, sorted
  std::vector<std::string> files;                               // distinct, sorted
  std::optional<uint64_t> total_size;
};

/// Reads an index file: weight_map names must be plain file names in the same
/// directory, and no tensor may be listed twice.
ShardIndex read_shard_index(const std::filesystem::path& path);
/// The same from the index text; `source` names it in errors.
ShardIndex parse_shard_index(std::string_view text, const std::string& source);

/// With the shards opened (in index.files order): every listed tensor is in its shard, every
/// shard tensor is listed for that shard, total_size is the sum of the tensors' data bytes.
void check_shard_index(const ShardIndex& index, const std::vector<File>& shards,
                       const std::string& source);
/// The same for shards of any format, given the names each holds (in index.files order);
/// total_size is not checked (a pickle's data bytes are not its tensors' bytes).
void check_shard_index(const ShardIndex& index,
                       const std::vector<std::vector<std::string_view>>& names,
                       const std::string& source);

/// The index text transformers writes: json.dumps(indent=2, sort_keys=True) + "\n" (non-ASCII
/// escaped as \uXXXX).
std::string shard_index_json(const ShardIndex& index);

}  // namespace tlio::detail

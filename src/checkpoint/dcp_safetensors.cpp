// checkpoint/dcp_safetensors.cpp: the per-rank safetensors shards of torch's
// HuggingFaceStorageWriter read as DCP chunks: each file opened by tlio's strict reader, its
// sharding info matched to its tensors, the chunks of one name put together and checked to tile.
#include "checkpoint/dcp_safetensors.hpp"

#include <fmt/core.h>
#include <simdjson.h>

#include <algorithm>
#include <string>
#include <system_error>
#include <unordered_map>
#include <vector>

#include "common/checked.hpp"
#include "common/json_doc.hpp"
#include "common/json_text.hpp"
#include "model/layout.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {
namespace {

// The .safetensors files of `dir`, by name.
std::vector<std::string> safetensors_files(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& item : std::filesystem::directory_iterator(dir))
    if (item.is_regular_file() && item.path().extension() == ".safetensors")
      names.push_back(item.path().filename().string());
  std::sort(names.begin(), names.end());
  if (names.size() > kMaxDcpFiles)
    throw_format(Rule::checkpoint, {}, fmt::format("more than {} shards", kMaxDcpFiles));
  return names;
}

// fqn -> saved_offsets, from a file's DCP_SHARDING_INFO.
std::unordered_map<std::string, std::vector<uint64_t>> sharding_info(const File& f,
                                                                     const std::string& shown) {
  const auto it = f.metadata().find(kDcpShardingKey);
  if (it == f.metadata().end())
    throw_format(Rule::checkpoint, {},
                 fmt::format("{} has no {} metadata: not one of DCP's safetensors shards", shown,
                             kDcpShardingKey));
  const JsonDoc doc(it->second, shown, Rule::checkpoint);
  std::unordered_map<std::string, std::vector<uint64_t>> out;
  simdjson::dom::object items;
  if (doc.root().get_object().get(items)) doc.fail(kDcpShardingKey, "is not an object");
  for (const auto field : items) {
    const std::string fqn(field.key);
    simdjson::dom::array offsets;
    if (field.value["saved_offsets"].get_array().get(offsets))
      doc.fail(fqn, "has no saved_offsets list");
    std::vector<uint64_t>& o = out[fqn];
    for (const auto v : offsets) {
      uint64_t n = 0;
      if (v.get_uint64().get(n)) doc.fail(fqn, "has a saved offset that is not a count");
      if (o.size() == kMaxDcpDims) doc.fail(fqn, "has too many saved offsets");
      o.push_back(n);
    }
  }
  return out;
}

// The layout records neither the tensors' sizes nor the number of ranks, so a lost shard can go
// unseen when it held the last rows; one missing among the ranks' numbers
// (shard-0000R-model-...) is refused.
void check_rank_numbers(const std::vector<std::string>& names, const std::string& folder) {
  std::vector<bool> seen;
  for (const std::string& name : names) {
    if (!name.starts_with("shard-")) continue;
    const size_t dash = name.find('-', 6);
    const std::string digits = name.substr(6, dash == std::string::npos ? 0 : dash - 6);
    if (digits.empty() || digits.size() > 6 ||
        !std::all_of(digits.begin(), digits.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
      continue;
    const size_t rank = std::stoul(digits);
    if (rank == 0) continue;
    if (seen.size() < rank) seen.resize(rank, false);
    seen[rank - 1] = true;
  }
  for (size_t r = 0; r < seen.size(); ++r)
    if (!seen[r])
      throw_format(Rule::checkpoint, {},
                   fmt::format("{} has shards of rank {} but none of rank {} (shard-{:05}-...)",
                               folder, seen.size(), r + 1, r + 1));
}

}  // namespace

bool is_sharded_safetensors_dcp(const std::filesystem::path& dir) {
  std::error_code ec;
  if (std::filesystem::exists(dir / kDcpMetadataFile, ec) ||
      std::filesystem::exists(dir / kSingleWeightsFile, ec) ||
      std::filesystem::exists(dir / kShardIndexFile, ec))
    return false;
  try {
    const std::vector<std::string> names = safetensors_files(dir);
    if (names.empty()) return false;
    const File first = File::open(dir / names.front());
    return first.metadata().count(kDcpShardingKey) > 0;
  } catch (const std::exception&) {
    return false;
  }
}

void load_sharded_safetensors(DcpCheckpoint& c, const std::filesystem::path& dir) {
  std::unordered_map<std::string, size_t> entry_of;
  for (const std::string& name : safetensors_files(dir)) {
    const auto file = static_cast<uint32_t>(c.files.size());
    c.files.push_back(File::open(dir / name));
    c.metadata.files.push_back(name);
    const File& f = c.files.back();
    auto offsets = sharding_info(f, c.shown(name));
    if (offsets.size() != f.tensors().size())
      throw_format(Rule::checkpoint, {},
                   fmt::format("{}: its sharding info names {} tensors, the file holds {}",
                               c.shown(name), offsets.size(), f.tensors().size()));
    for (const TensorInfo& t : f.tensors()) {
      const auto at = offsets.find(t.name);
      if (at == offsets.end() || at->second.size() != t.shape.size())
        throw_format(Rule::checkpoint, t.name,
                     fmt::format("{}: tensor {} has no saved offsets of its {} dimensions",
                                 c.shown(name), quote_name(t.name), t.shape.size()));
      const auto [slot, added] = entry_of.emplace(t.name, c.metadata.entries.size());
      if (added) {
        DcpEntry& e = c.metadata.entries.emplace_back();
        e.fqn = t.name;
        e.path = {t.name};
        e.dtype = t.dtype;
        e.dtype_name = dtype_name(t.dtype);
        e.shape.assign(t.shape.size(), 0);
      }
      DcpEntry& e = c.metadata.entries[slot->second];
      if (e.dtype != t.dtype || e.shape.size() != t.shape.size())
        throw_format(Rule::checkpoint, t.name,
                     fmt::format("{}: tensor {}'s chunk is {} {}, another's {} of {} dimensions",
                                 c.shown(name), quote_name(t.name), dtype_name(t.dtype),
                                 t.shape.size(), e.dtype_name, e.shape.size()));
      if (e.chunks.size() == kMaxDcpChunks)
        throw_format(
            Rule::checkpoint, t.name,
            fmt::format("tensor {} has more than {} chunks", quote_name(t.name), kMaxDcpChunks));
      DcpChunk& chunk = e.chunks.emplace_back();
      chunk.offsets = at->second;
      chunk.elements = 1;
      for (size_t d = 0; d < t.shape.size(); ++d) {
        chunk.sizes.push_back(t.shape[d]);
        chunk.elements *= t.shape[d];  // (a valid header's shapes do not overflow)
        const auto end = checked_add(chunk.offsets[d], t.shape[d]);
        if (!end)
          throw_format(Rule::checkpoint, t.name,
                       fmt::format("tensor {}: a saved offset overflows", quote_name(t.name)));
        e.shape[d] = std::max(e.shape[d], *end);  // (the size itself is not recorded)
      }
      chunk.storage.file = file;
    }
  }
  if (c.metadata.entries.empty())
    throw_format(Rule::checkpoint, {}, "the folder has no DCP safetensors shard");
  check_rank_numbers(c.metadata.files, c.name);
  for (const DcpEntry& e : c.metadata.entries) check_dcp_tiling(e);
}

DcpPiece safetensors_piece(const DcpCheckpoint& c, const DcpEntry& e, size_t k) {
  const DcpChunk& chunk = e.chunks[k];
  const TensorView view = c.files[chunk.storage.file].view(e.fqn);
  DcpPiece piece;
  piece.storage = view.bytes();
  piece.view.offset = 0;
  uint64_t stride = 1;
  for (size_t d = chunk.sizes.size(); d-- > 0;) {
    piece.view.size.insert(piece.view.size.begin(), static_cast<int64_t>(chunk.sizes[d]));
    piece.view.stride.insert(piece.view.stride.begin(), static_cast<int64_t>(stride));
    stride *= chunk.sizes[d];
  }
  return piece;  // contiguous, little-endian: copied as it is
}

}  // namespace tlio::detail

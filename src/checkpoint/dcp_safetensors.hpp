// checkpoint/dcp_safetensors.hpp: DCP's other layout: the per-rank safetensors files that
// torch's HuggingFaceStorageWriter(save_distributed=True) writes when it does not consolidate
// them (shard-0000R-model-0000I-of-0000N.safetensors), each tensor of a file a chunk whose place
// in the whole the file's DCP_SHARDING_INFO metadata gives ({fqn: {"saved_offsets": [...]}}).
#pragma once

#include <cstddef>
#include <filesystem>

#include "checkpoint/dcp_checkpoint.hpp"
#include "checkpoint/dcp_metadata.hpp"

namespace tlio::detail {

inline constexpr const char* kDcpShardingKey = "DCP_SHARDING_INFO";

/// Whether the local folder `dir` holds such files: its first .safetensors file (by name) has
/// DCP_SHARDING_INFO, and it has no .metadata, model.safetensors or index.
bool is_sharded_safetensors_dcp(const std::filesystem::path& dir);

/// c.metadata from the files' headers: each tensor of each file a chunk (offsets from the file's
/// sharding info, sizes its shape), each whole tensor as large as its chunks reach, checked to
/// tile it; c.files opened. A .safetensors file of the folder without sharding info, a tensor
/// without offsets (or offsets without a tensor), chunks of one name in different dtypes: refused.
void load_sharded_safetensors(DcpCheckpoint& c, const std::filesystem::path& dir);

/// Chunk k of `e`: its tensor's bytes in its file.
DcpPiece safetensors_piece(const DcpCheckpoint& c, const DcpEntry& e, size_t k);

}  // namespace tlio::detail

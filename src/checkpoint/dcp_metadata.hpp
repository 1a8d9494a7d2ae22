// checkpoint/dcp_metadata.hpp: the `.metadata` of a torch.distributed.checkpoint (DCP) folder,
// decoded with no pickle run: only the classes DCP writes are understood, anything else is
// refused by name. Every tensor's chunks are checked to tile it exactly, and every chunk and
// byte item is matched to its storage range, before anything is read or allocated by size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tlio/dtype.hpp"

namespace tlio::detail {

inline constexpr const char* kDcpMetadataFile = ".metadata";
/// Caps on what one DCP metadata may describe, each refused with its own error.
inline constexpr size_t kMaxDcpChunks = size_t{1} << 15;  // chunks of one tensor
inline constexpr size_t kMaxDcpDims = 64;                 // dimensions of one tensor
inline constexpr size_t kMaxDcpFiles = size_t{1} << 20;   // .distcp files
inline constexpr size_t kMaxDcpName = 4096;               // bytes of a name, its path joined
/// Pairs of chunks the overlap check compares for one tensor, at most (a tiling split the way
/// any DCP planner splits needs a few per chunk; only a crafted staircase needs more).
inline constexpr uint64_t kMaxDcpOverlapChecks = uint64_t{1} << 26;
/// Values and text the decoder copies out of the pickle, at most this many times its size
/// (plus 16 MiB): a pickle's memo can name one large value many times for a few bytes each.
inline constexpr uint64_t kDcpCopyFactor = 16;

/// Where an item's bytes are: `length` bytes at `offset` of files[file].
struct DcpStorage {
  uint32_t file = 0;
  uint64_t offset = 0, length = 0;
};

/// A piece of a tensor: the box [offsets, offsets + sizes) of it, saved by torch.save.
struct DcpChunk {
  std::vector<uint64_t> offsets, sizes;
  uint64_t elements = 0;
  DcpStorage storage;
};

struct DcpEntry {
  std::string fqn;                // the flattened name DCP keys it by
  std::vector<std::string> path;  // the state dict's keys down to it (planner_data), else {fqn}
  bool is_bytes = false;          // a pickled non-tensor value (BytesStorageMetadata)
  std::string dtype_name;         // torch's name of its dtype ("float32")
  std::optional<Dtype> dtype;     // nullopt: a dtype tlio does not write
  std::vector<uint64_t> shape;
  std::vector<DcpChunk> chunks;  // tiling the shape exactly, in the metadata's order
  DcpStorage storage;            // a byte item's
};

struct DcpMetadata {
  std::vector<DcpEntry> entries;   // in the metadata's order
  std::vector<std::string> files;  // the .distcp files named, in the order first met
  std::string version;             // DCP's metadata version ("1.0.0"), or ""
};

/// Error{format, Rule::checkpoint} naming the tensor unless e's chunks lie inside its shape, do
/// not overlap and together hold every element.
void check_dcp_tiling(const DcpEntry& e);

/// Decodes and checks a DCP `.metadata` pickle. Error{format, Rule::pickle} for a malformed
/// pickle or a class DCP does not write, Rule::checkpoint for chunks that overlap, leave gaps,
/// reach past their tensor, or have no storage; Error{unsupported} for storage transforms.
DcpMetadata parse_dcp_metadata(std::span<const std::byte> pickle);

}  // namespace tlio::detail

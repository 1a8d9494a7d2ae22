// checkpoint/dcp_checkpoint.hpp: a DCP folder opened: its metadata checked, the entries a key
// selects named, each of their chunks' torch.save archives found in the mapped .distcp files
// and its tensor checked against the chunk, before any tensor byte is read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "checkpoint/dcp_metadata.hpp"
#include "checkpoint/torch_resolver.hpp"
#include "io/os_file.hpp"
#include "tlio/checkpoint.hpp"
#include "tlio/dtype.hpp"
#include "tlio/file.hpp"

namespace tlio::detail {

/// A chunk's saved tensor: a view of a storage in a mapped .distcp file.
struct DcpPiece {
  std::span<const std::byte> storage;
  TensorRecord view;  // offset, sizes (the chunk's) and strides in elements of the storage
  bool contiguous = true;
  unsigned swap_unit = 0;  // a big-endian save: bytes reversed per unit (0: none)
};

struct DcpTensorPlan {
  std::string name;  // as written: the fqn, less the chosen key's prefix
  const DcpEntry* entry = nullptr;
  Dtype dtype = Dtype::F32;
  std::vector<DcpPiece> pieces;  // entry->chunks' saved tensors, in the same order
  std::vector<size_t> by_start;  // the chunks holding elements, by their start in dimension 0
};

struct DcpCheckpoint {
  std::string name;
  DcpMetadata metadata;
  std::vector<Mapping> mappings;  // the .distcp layout's metadata.files, mapped
  std::vector<File> files;        // the sharded safetensors layout's metadata.files, opened
  std::vector<DcpTensorPlan> plans;

  std::string shown(const std::string& file) const;  // a file of the folder, as messages name it
};

/// Opens the DCP folder `dir` (either layout): metadata, then the tensors ImportOptions selects
/// (key, all, skip_unsupported) planned and every chunk of theirs checked. Fills `contents`.
void open_dcp(DcpCheckpoint& c, const std::filesystem::path& dir, const ImportOptions& options,
              CheckpointContents& contents);

/// The tensors of c.metadata that ImportOptions selects, named, each chunk's piece (one holding
/// elements) from `piece_of`.
void plan_dcp(DcpCheckpoint& c, const ImportOptions& options, CheckpointContents& contents,
              const std::function<DcpPiece(const DcpEntry&, size_t)>& piece_of);

/// Elements [first, first + count) of the row-major order of plan `t`'s whole tensor, in its
/// saved dtype, gathered from the chunks that hold them into `out`. `read` (when given, one
/// per piece) gets how many of each piece's elements, in its own row-major order, have been read
/// when this call ends: a prefix, when calls go through the tensor in order.
void gather_dcp(const DcpTensorPlan& t, uint64_t first, uint64_t count, std::byte* out,
                std::vector<uint64_t>* read = nullptr);

/// import_checkpoint and read_checkpoint of a DCP folder.
ImportReport import_dcp(const std::filesystem::path& src, const std::filesystem::path& dst,
                        const ImportOptions& options);
CheckpointContents read_dcp(const std::filesystem::path& src, const ImportOptions& options);

}  // namespace tlio::detail

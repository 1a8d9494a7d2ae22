// checkpoint/dcp_import.cpp: a DCP folder's contents read, and imported as a Hugging Face
// folder: each tensor assembled from its chunks as it streams into the canonical writer.
#include <fmt/core.h>

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "checkpoint/dcp_checkpoint.hpp"
#include "checkpoint/dcp_metadata.hpp"
#include "checkpoint/dcp_safetensors.hpp"
#include "checkpoint/import_output.hpp"
#include "common/checked.hpp"
#include "io/location.hpp"
#include "io/os_file.hpp"
#include "io/store.hpp"
#include "model/layout.hpp"
#include "tlio/checkpoint.hpp"
#include "tlio/convert.hpp"
#include "tlio/error.hpp"
#include "tlio/writer.hpp"

namespace tlio {
namespace detail {
namespace {

/// Bytes assembled at a time (the chunks' pages read for them are let go after each).
constexpr size_t kAssembleBytes = size_t{8} << 20;

// Lets the pages of the chunks' bytes read so far go (the chunks are read in their own order,
// a prefix of each): this process's memory stays bounded whatever the size of a tensor.
void drop_read(const DcpTensorPlan& t, const std::vector<uint64_t>& read, bool all) {
  const unsigned element = dtype_bits(t.dtype) / 8;
  for (size_t k = 0; k < t.pieces.size(); ++k) {
    const DcpPiece& p = t.pieces[k];
    if (p.storage.empty()) continue;
    if (all)
      drop_pages(p.storage);
    else if (p.contiguous)  // (a strided view's reads are no prefix: its pages go at the end)
      drop_pages(p.storage.subspan(static_cast<size_t>(p.view.offset) * element,
                                   static_cast<size_t>(read[k] * element)));
  }
}

// Streams plan `t` into the declared tensor: gathered from its chunks a buffer at a time (and
// converted when written in another dtype), the chunks' pages let go as they are read.
void write_dcp_tensor(Writer& w, const DcpTensorPlan& t, Dtype to) {
  const unsigned element = dtype_bits(t.dtype) / 8, out_element = dtype_bits(to) / 8;
  const size_t count = kAssembleBytes / std::max(element, out_element);
  std::vector<uint64_t> read(t.pieces.size(), 0);
  const auto gather = [&](uint64_t first, uint64_t n, std::byte* out) {
    gather_dcp(t, first, n, out, &read);
    drop_read(t, read, false);
  };
  if (to == t.dtype) {
    w.write_from(
        t.name,
        [&](uint64_t offset, std::span<std::byte> buffer) {
          gather(offset / element, buffer.size() / element, buffer.data());
        },
        count * element);
  } else {
    std::vector<std::byte> scratch(count * element);
    w.write_from(
        t.name,
        [&](uint64_t offset, std::span<std::byte> buffer) {
          const uint64_t n = buffer.size() / out_element;
          gather(offset / out_element, n, scratch.data());
          convert(t.dtype,
                  std::span<const std::byte>(scratch.data(), static_cast<size_t>(n * element)), to,
                  buffer, n);
        },
        count * out_element);
  }
  drop_read(t, read, true);
}

}  // namespace

ImportReport import_dcp(const std::filesystem::path& src, const std::filesystem::path& dst,
                        const ImportOptions& options) {
  DcpCheckpoint c;
  ImportReport report;
  open_dcp(c, src, options, report.contents);
  refuse_if_empty(report.contents, options);
  std::vector<OutputFile> outputs(1);
  for (const DcpTensorPlan& t : c.plans) {
    const Dtype to = import_dtype(t.dtype, options);
    outputs[0].tensors.push_back({t.name, t.dtype, to, t.entry->shape,
                                  tensor_size(dtype_bits(to), t.entry->shape).bytes,
                                  [&t, to](Writer& w) { write_dcp_tensor(w, t, to); }});
  }
  write_import_folder(src, dst, std::move(outputs), options, report);
  return report;
}

CheckpointContents read_dcp(const std::filesystem::path& src, const ImportOptions& options) {
  DcpCheckpoint c;
  CheckpointContents contents;
  open_dcp(c, src, options, contents);
  return contents;
}

}  // namespace detail

bool is_dcp_checkpoint(const std::filesystem::path& dir) {
  std::error_code ec;
  const detail::Location where = detail::Location::parse(dir.native());
  if (!detail::store_of(where).local_node(where) || !std::filesystem::is_directory(dir, ec))
    return false;
  if (detail::is_sharded_safetensors_dcp(dir)) return true;
  // DCP's .metadata (a pickle whose first class is DCP's Metadata) and no safetensors weights:
  // a stray file of that name does not make a model folder a checkpoint.
  if (!std::filesystem::is_regular_file(dir / detail::kDcpMetadataFile, ec) ||
      std::filesystem::exists(dir / detail::kSingleWeightsFile, ec) ||
      std::filesystem::exists(dir / detail::kShardIndexFile, ec))
    return false;
  std::ifstream in(dir / detail::kDcpMetadataFile, std::ios::binary);
  std::string head(128, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  return head.size() > 2 && head[0] == '\x80' &&
         head.find("torch.distributed.checkpoint.metadata") != std::string::npos;
}

}  // namespace tlio

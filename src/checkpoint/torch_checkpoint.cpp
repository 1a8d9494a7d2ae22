// checkpoint/torch_checkpoint.cpp: the read API (looks_like_checkpoint, read_checkpoint, and the
// in-memory readers of torch_checkpoint.hpp).
//
// What torch.save writes, read without running it. The pickle machine decodes (pickle.cpp);
// TorchResolver decides what each global means (torch_resolver.cpp: tensor rebuilds, storages,
// dtypes, a few containers; refused callables; inert objects for the rest); torch_container.cpp
// opens the zip or legacy container; the walk names the tensors (torch_walk.cpp); the import
// (torch_import.cpp) checks every view against its storage (torch_views.cpp) before any byte is
// read, then streams the bytes from the mapped checkpoint into the canonical writer.
#include "checkpoint/torch_checkpoint.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>

#include "checkpoint/dcp_checkpoint.hpp"
#include "checkpoint/torch_container.hpp"
#include "checkpoint/torch_views.hpp"
#include "checkpoint/zip.hpp"
#include "io/os_file.hpp"
#include "io/store.hpp"
#include "model/layout.hpp"
#include "tlio/checkpoint.hpp"
#include "tlio/error.hpp"

namespace tlio {
namespace {

using detail::Checkpoint;
using detail::open_checkpoint;
using detail::parse_checkpoint;
using detail::TensorPlan;

}  // namespace

bool looks_like_checkpoint(const std::filesystem::path& path) {
  try {
    const detail::Location where = detail::Location::parse(path.native());
    // A remote name that says it is safetensors is not asked (a request) whether it is not.
    if (!detail::store_of(where).local_node(where) && where.text().ends_with(".safetensors"))
      return false;
    const std::shared_ptr<const detail::ByteSource> src =
        detail::open_source(where, {.access = detail::SourceOptions::Access::read});
    std::byte head[4] = {};
    if (src->size() < 4) return false;
    src->read(0, head);
    return detail::looks_like_zip(head) ||
           (std::to_integer<uint8_t>(head[0]) == 0x80 && std::to_integer<uint8_t>(head[2]) == 0x8a);
  } catch (const Error&) {
    return false;
  }
}

std::optional<std::filesystem::path> checkpoint_in_directory(const std::filesystem::path& dir) {
  // Local folders only: asking a remote one would cost requests on every safetensors folder,
  // and its weights' own open says when they are a PyTorch checkpoint (model/layout).
  std::error_code ec;
  const detail::Location where = detail::Location::parse(dir.native());
  if (!detail::store_of(where).local_node(where) || !std::filesystem::is_directory(dir, ec) ||
      std::filesystem::exists(dir / detail::kSingleWeightsFile, ec) ||
      std::filesystem::exists(dir / detail::kShardIndexFile, ec))
    return std::nullopt;
  const std::filesystem::path weights = dir / detail::kTorchWeightsFile;
  if (!looks_like_checkpoint(weights)) return std::nullopt;
  return weights;
}

namespace {
// The contents, with every storage found and checked against its records (no byte read).
CheckpointContents contents_of(Checkpoint& c, const ImportOptions& options) {
  CheckpointContents contents;
  for (const TensorPlan& pl : plan_tensors(c, options, contents))
    if (pl.alias_of.empty()) (void)c.storage_bytes(c.resolver.tensors[pl.tensor].storage);
  return contents;
}
}  // namespace

CheckpointContents read_checkpoint(const std::filesystem::path& src, const ImportOptions& options) {
  Checkpoint c;
  try {
    if (is_dcp_checkpoint(src)) return detail::read_dcp(src, options);
    open_checkpoint(c, src);
    return contents_of(c, options);
  } catch (const Error& e) {
    throw e.with_source(src.string());
  }
}

CheckpointContents detail::read_checkpoint_bytes(std::span<const std::byte> bytes,
                                                 const ImportOptions& options) {
  Checkpoint c;
  c.name = "<memory>";
  c.bytes = bytes;
  parse_checkpoint(c);
  return contents_of(c, options);
}

CheckpointContents detail::read_data_pickle(std::span<const std::byte> pickle) {
  Checkpoint c;
  c.format = "zip";
  c.root = c.pickle.run(pickle, 0, c.resolver);
  CheckpointContents contents;
  plan_tensors(c, {}, contents);
  return contents;
}

}  // namespace tlio

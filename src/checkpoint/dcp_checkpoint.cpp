// checkpoint/dcp_checkpoint.cpp: a DCP folder opened and planned (which entries, named how),
// every chunk's archive checked against its chunk, and the gather of a whole tensor's elements
// from its chunks.
#include "checkpoint/dcp_checkpoint.hpp"

#include <fcntl.h>
#include <fmt/core.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "checkpoint/dcp_safetensors.hpp"
#include "checkpoint/torch_container.hpp"
#include "checkpoint/torch_views.hpp"
#include "checkpoint/torch_walk.hpp"
#include "checkpoint/zip.hpp"
#include "common/checked.hpp"
#include "common/json_text.hpp"
#include "io/os_file.hpp"
#include "io/store.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {
namespace {

// The entries to import and their names: under options.key, or the model's part of a
// training state (as for torch.save's files), or all of them.
std::vector<std::pair<const DcpEntry*, std::string>> select_entries(const DcpMetadata& m,
                                                                    const ImportOptions& options,
                                                                    CheckpointContents& contents) {
  std::string prefix;    // joined with "." as DCP flattens names
  bool by_path = false;  // the prefix is a whole first key of the state dict's paths
  if (!options.key.empty()) {
    prefix = options.key;
  } else if (!options.import_all) {
    std::vector<std::string> keys;
    std::vector<bool> nested;
    std::unordered_map<std::string_view, size_t> index;
    for (const DcpEntry& e : m.entries) {
      const auto [it, added] = index.emplace(e.path.front(), keys.size());
      if (added) {
        keys.push_back(e.path.front());
        nested.push_back(e.path.size() > 1);
      } else {
        nested[it->second] = nested[it->second] && e.path.size() > 1;
      }
    }
    if (const std::optional<size_t> model = model_part(keys, [&](size_t i) { return nested[i]; })) {
      prefix = keys[*model];
      by_path = true;
      contents.chosen_key = prefix;
      for (const std::string& k : keys)
        if (k != prefix) contents.other_keys.push_back(k);
    }
  }
  std::vector<std::pair<const DcpEntry*, std::string>> out;
  for (const DcpEntry& e : m.entries) {
    std::string name = e.fqn;
    if (!prefix.empty()) {
      if (e.fqn.size() <= prefix.size() || !e.fqn.starts_with(prefix) ||
          e.fqn[prefix.size()] != '.' || (by_path && e.path.front() != prefix))
        continue;
      name = e.fqn.substr(prefix.size() + 1);
    }
    if (e.is_bytes) {
      ++contents.dropped_values;
      if (contents.dropped.size() < kMaxDroppedListed) contents.dropped.push_back({e.fqn, "bytes"});
      continue;
    }
    out.emplace_back(&e, std::move(name));
  }
  if (!options.key.empty() && out.empty() && contents.dropped_values == 0) {
    std::set<std::string> top;
    for (const DcpEntry& e : m.entries) top.insert(e.path.front());
    std::vector<std::string> shown(top.begin(), top.end());
    if (shown.size() > 20) shown.resize(20);
    throw_format(Rule::checkpoint, {},
                 fmt::format("no item of the checkpoint is under key {} (its top level has {})",
                             quote_name(options.key), fmt::join(shown, ", ")));
  }
  return out;
}

// The saved tensor of chunk `k` of `e`: its archive found in its file, its pickle decoded, its
// one tensor checked against the chunk (dtype, sizes) and its view against its storage.
DcpPiece read_piece(const DcpCheckpoint& c, const DcpEntry& e, size_t k) {
  const DcpChunk& chunk = e.chunks[k];
  const auto bytes = c.mappings[chunk.storage.file].bytes();  // (its range checked in open_dcp)
  const std::string& file = c.metadata.files[chunk.storage.file];
  Checkpoint saved;
  saved.name = file;
  saved.bytes = bytes.subspan(static_cast<size_t>(chunk.storage.offset),
                              static_cast<size_t>(chunk.storage.length));
  const auto refuse = [&](const std::string& why) {
    throw_format(Rule::checkpoint, e.fqn,
                 fmt::format("the chunk at ({}) of {} in {}: {}", fmt::join(chunk.offsets, ", "),
                             quote_name(e.fqn), file, why));
  };
  parse_checkpoint(saved);
  if (saved.format != "zip") refuse("not a torch.save archive");
  CheckpointContents inner;
  const std::vector<TensorPlan> plans = plan_tensors(saved, {}, inner);
  if (plans.size() != 1 || inner.chosen_key != "" ||
      saved.pickle[saved.root].kind != PyKind::resolved)
    refuse("its archive does not hold one tensor");
  const TensorPlan& pl = plans.front();
  if (pl.dtype != *e.dtype)
    refuse(fmt::format("saved as {}, the metadata says {}", dtype_name(pl.dtype), e.dtype_name));
  if (pl.shape != chunk.sizes)
    refuse(fmt::format("saved with sizes ({}), the metadata says ({})", fmt::join(pl.shape, ", "),
                       fmt::join(chunk.sizes, ", ")));
  DcpPiece piece;
  const TensorRecord& t = saved.resolver.tensors[pl.tensor];
  const StorageRecord& record = saved.resolver.storages[t.storage];
  const ZipEntry* entry = saved.zip->find(saved.prefix + "data/" +
                                          (record.root_key.empty() ? record.key : record.root_key));
  if (entry && entry->method != 0)  // (refused before anything is inflated)
    refuse("its storage is compressed in the archive (DCP writes it stored)");
  piece.storage = saved.storage_bytes(t.storage);
  piece.view = t;
  piece.contiguous = pl.contiguous;
  const unsigned element = dtype_bits(pl.dtype) / 8;
  piece.swap_unit = !saved.big_endian || element == 1 ? 0
                    : pl.dtype == Dtype::C64          ? element / 2
                                                      : element;
  return piece;
}

// A file of the checkpoint mapped: a regular file (a FIFO or a device named in the metadata is
// refused, not waited on).
Mapping map_regular(const std::filesystem::path& path, const std::string& shown) {
  const int raw = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (raw < 0) throw_errno("cannot open", shown, errno);
  const Fd fd(raw);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) throw_errno("cannot stat", shown, errno);
  if (!S_ISREG(st.st_mode))
    throw_format(Rule::checkpoint, {}, fmt::format("{} is not a regular file", shown));
  return Mapping(fd.get(), static_cast<uint64_t>(st.st_size), shown);
}

}  // namespace

namespace {

// The .distcp layout: .metadata decoded, every file mapped, every item's bytes inside its file
// (whatever is imported).
void load_distcp(DcpCheckpoint& c, const std::filesystem::path& dir) {
  {
    const Mapping m = map_regular(dir / kDcpMetadataFile, c.shown(kDcpMetadataFile));
    try {
      c.metadata = parse_dcp_metadata(m.bytes());
    } catch (const Error& e) {
      throw e.with_source(c.shown(kDcpMetadataFile));
    }
  }
  for (const std::string& file : c.metadata.files)
    c.mappings.push_back(map_regular(dir / file, c.shown(file)));
  const auto check_range = [&](const DcpStorage& s, const std::string& fqn) {
    const uint64_t size = c.mappings[s.file].bytes().size();
    if (s.offset > size || s.length > size - s.offset)
      throw_format(
          Rule::checkpoint, fqn,
          fmt::format("{}'s bytes {}+{} lie past the end of {} ({} bytes)", quote_name(fqn),
                      s.offset, s.length, c.metadata.files[s.file], size));
  };
  for (const DcpEntry& e : c.metadata.entries) {
    if (e.is_bytes) check_range(e.storage, e.fqn);
    for (const DcpChunk& k : e.chunks) check_range(k.storage, e.fqn);
  }
}

}  // namespace

std::string DcpCheckpoint::shown(const std::string& file) const {
  return (std::filesystem::path(name) / file).string();
}

void open_dcp(DcpCheckpoint& c, const std::filesystem::path& dir, const ImportOptions& options,
              CheckpointContents& contents) {
  c.name = Location::parse(dir.native()).display();
  contents.format = "dcp";
  std::error_code ec;
  if (!std::filesystem::exists(dir / kDcpMetadataFile, ec)) {
    load_sharded_safetensors(c, dir);
    plan_dcp(c, options, contents,
             [&](const DcpEntry& e, size_t k) { return safetensors_piece(c, e, k); });
    return;
  }
  load_distcp(c, dir);
  plan_dcp(c, options, contents, [&](const DcpEntry& e, size_t k) {
    try {
      return read_piece(c, e, k);
    } catch (const Error& error) {
      throw error.with_source(c.shown(c.metadata.files[e.chunks[k].storage.file]));
    }
  });
}

void plan_dcp(DcpCheckpoint& c, const ImportOptions& options, CheckpointContents& contents,
              const std::function<DcpPiece(const DcpEntry&, size_t)>& piece_of) {
  for (auto& [selected, selected_name] : select_entries(c.metadata, options, contents)) {
    const DcpEntry* entry = selected;  // (a plain variable: lambdas below capture it)
    std::string& name = selected_name;
    if (!entry->dtype) {
      const std::string why =
          fmt::format("tensor {} is saved as torch.{}, which safetensors has no dtype for",
                      quote_name(name), entry->dtype_name);
      if (!options.skip_unsupported)
        throw Error(ErrorCode::unsupported, Rule::checkpoint, name, std::nullopt,
                    why + " (--skip-unsupported leaves it out)");
      contents.skipped.push_back(why);
      continue;
    }
    DcpTensorPlan plan{std::move(name), entry, *entry->dtype, {}, {}};
    for (size_t k = 0; k < entry->chunks.size(); ++k) {
      // (a chunk without elements has nothing to read)
      plan.pieces.push_back(entry->chunks[k].elements > 0 ? piece_of(*entry, k) : DcpPiece{});
      if (entry->chunks[k].elements > 0) plan.by_start.push_back(k);
    }
    if (!entry->shape.empty())
      std::stable_sort(plan.by_start.begin(), plan.by_start.end(), [&](size_t a, size_t b) {
        return entry->chunks[a].offsets[0] < entry->chunks[b].offsets[0];
      });
    contents.tensors.push_back({plan.name,
                                plan.dtype,
                                Shape(entry->shape),
                                true,
                                {},
                                static_cast<uint32_t>(entry->chunks.size())});
    c.plans.push_back(std::move(plan));
  }
  std::set<std::string_view> names;
  for (const DcpTensorPlan& p : c.plans)
    if (!names.insert(p.name).second)
      refuse_checkpoint(p.name, fmt::format("two tensors would be named {}", quote_name(p.name)));
}

void gather_dcp(const DcpTensorPlan& t, uint64_t first, uint64_t count, std::byte* out,
                std::vector<uint64_t>* read) {
  const DcpEntry& e = *t.entry;
  const unsigned element = dtype_bits(t.dtype) / 8;
  const size_t rank = e.shape.size();
  const auto copy = [&](size_t k, uint64_t local, uint64_t n) {
    const DcpPiece& p = t.pieces[k];
    if (p.contiguous && p.swap_unit == 0)
      std::memcpy(out, p.storage.data() + (static_cast<uint64_t>(p.view.offset) + local) * element,
                  static_cast<size_t>(n * element));
    else
      gather_view(p.storage, p.view, element, p.swap_unit, local, n, out);
    out += n * element;
    if (read) (*read)[k] = local + n;
  };
  if (rank == 0) {  // a scalar: its one chunk
    if (count > 0) copy(0, 0, 1);
    return;
  }
  // Lines along the last dimension, each made of the pieces of the chunks that hold its line
  // index: the same chunks for every line inside all of their boxes (they tile the tensor).
  if (count == 0) return;  // (and a tensor with no elements has no width to divide by)
  const uint64_t width = e.shape[rank - 1];
  uint64_t column = first % width, rest = first / width;
  std::vector<uint64_t> index(rank - 1);
  for (size_t d = rank - 1; d-- > 0;) {
    index[d] = rest % e.shape[d];
    rest /= e.shape[d];
  }
  std::vector<size_t> covering;                      // by their start in the last dimension
  std::vector<uint64_t> lo(rank - 1), hi(rank - 1);  // where `covering` stays the same
  bool valid = false;
  // The chunks that may hold a line: those started at or before its index along dimension 0
  // (t.by_start's first `started`), less those ended before it. Lines only go forward.
  size_t started = 0;
  std::vector<size_t> active;
  while (count > 0) {
    bool inside = valid;
    for (size_t d = 0; d + 1 < rank && inside; ++d) inside = index[d] >= lo[d] && index[d] < hi[d];
    if (!inside && rank == 1) {
      covering = t.by_start;  // the one line: every chunk, by its start
    } else if (!inside) {
      for (; started < t.by_start.size() && e.chunks[t.by_start[started]].offsets[0] <= index[0];
           ++started)
        active.push_back(t.by_start[started]);
      std::erase_if(active, [&](size_t k) {
        return e.chunks[k].offsets[0] + e.chunks[k].sizes[0] <= index[0];
      });
      covering.clear();
      std::fill(lo.begin(), lo.end(), 0);
      for (size_t d = 0; d + 1 < rank; ++d) hi[d] = e.shape[d];
      for (const size_t k : active) {
        const DcpChunk& c = e.chunks[k];
        bool holds = true;
        for (size_t d = 1; d + 1 < rank && holds; ++d)
          holds = index[d] >= c.offsets[d] && index[d] < c.offsets[d] + c.sizes[d];
        if (!holds) continue;
        covering.push_back(k);
        for (size_t d = 0; d + 1 < rank; ++d) {
          lo[d] = std::max(lo[d], c.offsets[d]);
          hi[d] = std::min(hi[d], c.offsets[d] + c.sizes[d]);
        }
      }
      std::sort(covering.begin(), covering.end(), [&](size_t a, size_t b) {
        return e.chunks[a].offsets[rank - 1] < e.chunks[b].offsets[rank - 1];
      });
    }
    valid = true;
    // The pieces of this line from `column` on.
    for (const size_t k : covering) {
      const DcpChunk& c = e.chunks[k];
      const uint64_t start = c.offsets[rank - 1], end = start + c.sizes[rank - 1];
      if (count == 0 || column >= end) continue;
      if (column < start)
        throw_format(Rule::checkpoint, e.fqn,
                     fmt::format("tensor {}: no chunk holds an element", quote_name(e.fqn)));
      uint64_t local = 0;  // the element's place in the chunk's own row-major order
      for (size_t d = 0; d + 1 < rank; ++d) local = local * c.sizes[d] + (index[d] - c.offsets[d]);
      local = local * c.sizes[rank - 1] + (column - start);
      const uint64_t n = std::min(end - column, count);
      copy(k, local, n);
      column += n;
      count -= n;
    }
    if (count == 0) break;
    if (column != width)
      throw_format(Rule::checkpoint, e.fqn,
                   fmt::format("tensor {}: no chunk holds an element", quote_name(e.fqn)));
    column = 0;
    for (size_t d = rank - 1; d-- > 0;) {  // the next line's index
      if (++index[d] < e.shape[d]) break;
      index[d] = 0;
    }
  }
}

}  // namespace tlio::detail

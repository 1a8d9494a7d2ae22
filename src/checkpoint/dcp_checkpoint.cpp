// checkpoint/dcp_checkpoint.cpp: a DCP folder opened and planned (which entries, named how),
// every chunk's archive checked against its chunk, and the gather of a whole tensor's elements
// from its chunks.
#include "checkpoint/dcp_checkpoint.hpp"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "checkpoint/torch_container.hpp"
#include "checkpoint/torch_views.hpp"
#include "checkpoint/torch_walk.hpp"
#include "common/checked.hpp"
#include "common/json_text.hpp"
#include "io/store.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {
namespace {

// The entries to import and their names: under options.key, or the model's part of a
// training state (as for torch.save's files), or all of them.
std::vector<std::pair<const DcpEntry*, std::string>> select_entries(const DcpMetadata& m,
                                                                    const ImportOptions& options,
                                                                    CheckpointContents& contents) {
  std::string prefix;  // joined with "." as DCP flattens names
  if (!options.key.empty()) {
    prefix = options.key;
  } else if (!options.import_all) {
    std::vector<std::string> keys;
    std::vector<bool> nested;
    for (const DcpEntry& e : m.entries) {
      const auto it = std::find(keys.begin(), keys.end(), e.path.front());
      if (it == keys.end()) {
        keys.push_back(e.path.front());
        nested.push_back(e.path.size() > 1);
      } else {
        nested[static_cast<size_t>(it - keys.begin())] =
            nested[static_cast<size_t>(it - keys.begin())] && e.path.size() > 1;
      }
    }
    if (const std::optional<size_t> model = model_part(keys, [&](size_t i) { return nested[i]; })) {
      prefix = keys[*model];
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
          e.fqn[prefix.size()] != '.')
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
  const auto bytes = c.mappings[chunk.storage.file].bytes();
  const std::string& file = c.metadata.files[chunk.storage.file];
  if (chunk.storage.offset > bytes.size() ||
      chunk.storage.length > bytes.size() - chunk.storage.offset)
    throw_format(Rule::checkpoint, e.fqn,
                 fmt::format("the chunk at ({}) of {} lies at bytes {}+{}, past the end of {} "
                             "({} bytes)",
                             fmt::join(chunk.offsets, ", "), quote_name(e.fqn),
                             chunk.storage.offset, chunk.storage.length, file, bytes.size()));
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
  piece.storage = saved.storage_bytes(t.storage);
  if (piece.storage.data() < saved.bytes.data() ||
      piece.storage.data() + piece.storage.size() > saved.bytes.data() + saved.bytes.size())
    refuse("its storage is compressed in the archive (DCP writes it stored)");
  piece.view = t;
  piece.contiguous = pl.contiguous;
  const unsigned element = dtype_bits(pl.dtype) / 8;
  piece.swap_unit = !saved.big_endian || element == 1 ? 0
                    : pl.dtype == Dtype::C64          ? element / 2
                                                      : element;
  return piece;
}

}  // namespace

void open_dcp(DcpCheckpoint& c, const std::filesystem::path& dir, const ImportOptions& options,
              CheckpointContents& contents) {
  const Location where = Location::parse(dir.native());
  c.name = where.display();
  {
    const Location meta = where.join(kDcpMetadataFile);
    const Fd fd = open_whole_file(meta);
    const Mapping m(fd.get(), fd_size(fd.get(), meta.display()), meta.display());
    try {
      c.metadata = parse_dcp_metadata(m.bytes());
    } catch (const Error& e) {
      throw e.with_source(meta.display());
    }
  }
  contents.format = "dcp";
  for (const std::string& file : c.metadata.files) {
    const Location at = where.join(file);
    const Fd fd = open_whole_file(at);
    c.mappings.emplace_back(fd.get(), fd_size(fd.get(), at.display()), at.display());
  }
  for (auto& [entry, name] : select_entries(c.metadata, options, contents)) {
    if (!entry->dtype) {
      const std::string why = fmt::format(
          "tensor {} is saved as torch.{}, which safetensors has "
          "no dtype for",
          quote_name(name), entry->dtype_name);
      if (!options.skip_unsupported)
        throw Error(ErrorCode::unsupported, Rule::checkpoint, name, std::nullopt,
                    why + " (--skip-unsupported leaves it out)");
      contents.skipped.push_back(why);
      continue;
    }
    DcpTensorPlan plan{std::move(name), entry, *entry->dtype, {}};
    for (size_t k = 0; k < entry->chunks.size(); ++k)
      if (entry->chunks[k].elements > 0) {
        try {
          plan.pieces.push_back(read_piece(c, *entry, k));
        } catch (const Error& e) {
          throw e.with_source(
              where.join(c.metadata.files[entry->chunks[k].storage.file]).display());
        }
      } else {
        plan.pieces.emplace_back();  // nothing to read
      }
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
  while (count > 0) {
    bool inside = valid;
    for (size_t d = 0; d + 1 < rank && inside; ++d) inside = index[d] >= lo[d] && index[d] < hi[d];
    if (!inside) {
      covering.clear();
      std::fill(lo.begin(), lo.end(), 0);
      for (size_t d = 0; d + 1 < rank; ++d) hi[d] = e.shape[d];
      for (size_t k = 0; k < e.chunks.size(); ++k) {
        const DcpChunk& c = e.chunks[k];
        bool holds = c.elements > 0;
        for (size_t d = 0; d + 1 < rank && holds; ++d)
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
      valid = true;
    }
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

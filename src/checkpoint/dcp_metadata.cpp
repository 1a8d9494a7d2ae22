// checkpoint/dcp_metadata.cpp: DCP's `.metadata` pickle decoded by an allowlist of the classes
// torch.distributed.checkpoint writes (metadata.py's dataclasses, filesystem.py's _StorageInfo,
// torch.Size, dtypes), then checked: chunks tile their tensor, storages are plain files' ranges.
#include "checkpoint/dcp_metadata.hpp"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>
#include <numeric>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "checkpoint/pickle.hpp"
#include "checkpoint/torch_resolver.hpp"
#include "common/checked.hpp"
#include "common/json_text.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {
namespace {

enum class DcpClass : int64_t {
  metadata = 1,
  tensor_storage,
  bytes_storage,
  chunk,
  properties,
  index,
  storage_meta,
  storage_info,
  mem_format,
  torch_size,
  dtype,
  layout,
  get_layout,
  getattr,
  path,
  ordered_dict,
};

struct KnownGlobal {
  std::string_view module, name;
  DcpClass kind;
};
constexpr std::string_view kMetadataModule = "torch.distributed.checkpoint.metadata";
constexpr std::array kKnownGlobals = {
    KnownGlobal{kMetadataModule, "Metadata", DcpClass::metadata},
    KnownGlobal{kMetadataModule, "TensorStorageMetadata", DcpClass::tensor_storage},
    KnownGlobal{kMetadataModule, "BytesStorageMetadata", DcpClass::bytes_storage},
    KnownGlobal{kMetadataModule, "ChunkStorageMetadata", DcpClass::chunk},
    KnownGlobal{kMetadataModule, "TensorProperties", DcpClass::properties},
    KnownGlobal{kMetadataModule, "MetadataIndex", DcpClass::index},
    KnownGlobal{kMetadataModule, "StorageMeta", DcpClass::storage_meta},
    KnownGlobal{kMetadataModule, "_MEM_FORMAT_ENCODING", DcpClass::mem_format},
    // torch < 2.2 kept TensorProperties with sharded tensors.
    KnownGlobal{"torch.distributed._shard.sharded_tensor.metadata", "TensorProperties",
                DcpClass::properties},
    KnownGlobal{"torch.distributed._shard.sharded_tensor.metadata", "MEM_FORMAT_ENCODING",
                DcpClass::mem_format},
    KnownGlobal{"torch.distributed.checkpoint.filesystem", "_StorageInfo", DcpClass::storage_info},
    KnownGlobal{"torch", "Size", DcpClass::torch_size},
    KnownGlobal{"torch", "strided", DcpClass::layout},
    KnownGlobal{"torch", "sparse_coo", DcpClass::layout},
    KnownGlobal{"torch.serialization", "_get_layout", DcpClass::get_layout},
    KnownGlobal{"builtins", "getattr", DcpClass::getattr},
    KnownGlobal{"pathlib", "PosixPath", DcpClass::path},
    KnownGlobal{"pathlib", "PurePosixPath", DcpClass::path},
    KnownGlobal{"pathlib", "WindowsPath", DcpClass::path},
    KnownGlobal{"pathlib", "PureWindowsPath", DcpClass::path},
    KnownGlobal{"collections", "OrderedDict", DcpClass::ordered_dict},
};
// torch's dtypes that tlio does not write: a tensor of one is refused by name (or skipped).
constexpr std::array kOtherTorchDtypes = {"complex128",
                                          "cdouble",
                                          "complex32",
                                          "chalf",
                                          "cfloat",
                                          "float8_e4m3fnuz",
                                          "float8_e5m2fnuz",
                                          "float8_e8m0fnu",
                                          "float4_e2m1fn_x2",
                                          "uint32",
                                          "uint64",
                                          "qint8",
                                          "quint8",
                                          "qint32",
                                          "quint4x2",
                                          "quint2x4",
                                          "bits1x8",
                                          "bits2x4",
                                          "bits4x2",
                                          "bits8",
                                          "bits16",
                                          "uint1",
                                          "uint2",
                                          "uint3",
                                          "uint4",
                                          "uint5",
                                          "uint6",
                                          "uint7",
                                          "int1",
                                          "int2",
                                          "int3",
                                          "int4",
                                          "int5",
                                          "int6",
                                          "int7"};

[[noreturn]] void malformed(const std::string& what) {
  throw_format(Rule::pickle, {}, "DCP metadata: " + what);
}

// What the decoder may still copy out of the pickle (values and bytes of text): a pickle's memo
// names a value again for a few bytes, so copies are charged against a budget its size sets.
class CopyBudget {
 public:
  explicit CopyBudget(size_t pickle_bytes)
      : left_(kDcpCopyFactor * pickle_bytes + (uint64_t{16} << 20)) {}
  void take(uint64_t n) {
    if (n > left_)
      malformed(fmt::format("it names its values again more than {} times its size allows",
                            kDcpCopyFactor));
    left_ -= n;
  }

 private:
  uint64_t left_;
};

class DcpResolver final : public PickleResolver {
 public:
  explicit DcpResolver(CopyBudget& budget) : budget_(budget) {}

  ValueId global(Pickle& p, std::string_view module, std::string_view name) override {
    const std::string full = fmt::format("{}.{}", module, name);
    const auto tagged = [&](DcpClass c) {
      const ValueId v = p.make_text(PyKind::global, full);
      p[v].integer = static_cast<int64_t>(c);
      return v;
    };
    for (const KnownGlobal& g : kKnownGlobals)
      if (g.module == module && g.name == name) return tagged(g.kind);
    if (module == "torch" &&
        (torch_dtype_named(name) || std::find(kOtherTorchDtypes.begin(), kOtherTorchDtypes.end(),
                                              name) != kOtherTorchDtypes.end()))
      return tagged(DcpClass::dtype);
    throw_format(Rule::pickle, {},
                 fmt::format("DCP metadata names {}, which is not one of the classes "
                             "torch.distributed.checkpoint writes (nothing is run)",
                             full));
  }

  ValueId call(Pickle& p, ValueId callable, ValueId args) override {
    const std::vector<ValueId> a = p[args].items;  // a copy: p may grow below
    switch (p[callable].kind == PyKind::global ? static_cast<DcpClass>(p[callable].integer)
                                               : DcpClass{}) {
      case DcpClass::torch_size: {
        const ValueId t = p.make(PyKind::tuple);
        if (a.size() != 1 || (p[a[0]].kind != PyKind::tuple && p[a[0]].kind != PyKind::list))
          malformed("torch.Size of something that is not a tuple");
        if (p[a[0]].items.size() > kMaxDcpDims)
          malformed(fmt::format("a torch.Size of {} dimensions (at most {})", p[a[0]].items.size(),
                                kMaxDcpDims));
        budget_.take(p[a[0]].items.size() * sizeof(ValueId));
        p[t].items = p[a[0]].items;
        return t;
      }
      case DcpClass::get_layout:
      case DcpClass::getattr:  // _MEM_FORMAT_ENCODING.X, torch.strided: only named
        if (a.empty()) return p.make_text(PyKind::text, {});
        budget_.take(p[a.back()].text.size());
        return p.make_text(PyKind::text, p[a.back()].text);
      case DcpClass::ordered_dict: {
        const ValueId d = p.make(PyKind::dict);
        if (!a.empty()) {
          budget_.take(p[a[0]].items.size() * 2 * sizeof(ValueId));
          const std::vector<ValueId> items = p[a[0]].items;
          for (const ValueId pair : items) {
            if (p[pair].items.size() != 2) malformed("an OrderedDict of something but pairs");
            p[d].pairs.push_back(p[pair].items[0]);
            p[d].pairs.push_back(p[pair].items[1]);
          }
        }
        return d;
      }
      default:
        return p.object(callable, args);  // a dataclass, an enum by value, a path: inert
    }
  }

  ValueId persistent(Pickle&, ValueId) override {
    malformed("a persistent id (DCP's metadata holds no storages)");
  }

 private:
  CopyBudget& budget_;
};

// A name copied out of the pickle: text of at most kMaxDcpName bytes, charged to the budget.
const std::string& name_text(const Pickle& p, ValueId v, std::string_view what,
                             CopyBudget& budget) {
  if (p[v].kind != PyKind::text) malformed(fmt::format("{} is not text", what));
  if (p[v].text.size() > kMaxDcpName)
    malformed(fmt::format("{} of {} bytes (at most {})", what, p[v].text.size(), kMaxDcpName));
  budget.take(p[v].text.size());
  return p[v].text;
}

bool is_class(const Pickle& p, ValueId v, DcpClass c) {
  if (p[v].kind != PyKind::object || p[v].callable == kNoValue) return false;
  const PyValue& cls = p[p[v].callable];
  return cls.kind == PyKind::global && static_cast<DcpClass>(cls.integer) == c;
}

// Field `name` of a dataclass instance (its BUILD state, a dict), or kNoValue.
ValueId field(const Pickle& p, ValueId object, std::string_view name) {
  const ValueId state = p[object].state;
  if (state == kNoValue || p[state].kind != PyKind::dict) return kNoValue;
  const auto& pairs = p[state].pairs;
  for (size_t i = 0; i + 1 < pairs.size(); i += 2)
    if (p[pairs[i]].kind == PyKind::text && p[pairs[i]].text == name) return pairs[i + 1];
  return kNoValue;
}

ValueId required(const Pickle& p, ValueId object, std::string_view name, std::string_view what) {
  const ValueId v = field(p, object, name);
  if (v == kNoValue) malformed(fmt::format("{} without its {}", what, name));
  return v;
}

uint64_t count(const Pickle& p, ValueId v, std::string_view what) {
  if (p[v].kind != PyKind::integer || p[v].integer < 0)
    malformed(fmt::format("{} is not a count", what));
  return static_cast<uint64_t>(p[v].integer);
}

std::vector<uint64_t> counts(const Pickle& p, ValueId v, std::string_view what) {
  if (p[v].kind != PyKind::tuple && p[v].kind != PyKind::list)
    malformed(fmt::format("{} is not a tuple", what));
  if (p[v].items.size() > kMaxDcpDims)
    malformed(
        fmt::format("{} has {} dimensions (at most {})", what, p[v].items.size(), kMaxDcpDims));
  std::vector<uint64_t> out;
  for (const ValueId i : p[v].items) out.push_back(count(p, i, what));
  return out;
}

// The dtype of a TensorProperties: its state is the tuple of __getstate__ (dtype first), or
// (older torch) a dict with "dtype".
void read_dtype(const Pickle& p, ValueId properties, DcpEntry& e) {
  if (!is_class(p, properties, DcpClass::properties))
    malformed(fmt::format("tensor {}'s properties are not a TensorProperties", quote_name(e.fqn)));
  const ValueId state = p[properties].state;
  ValueId dtype = kNoValue;
  if (state != kNoValue && p[state].kind == PyKind::tuple && !p[state].items.empty())
    dtype = p[state].items[0];
  else if (state != kNoValue && p[state].kind == PyKind::dict)
    dtype = field(p, properties, "dtype");
  if (dtype == kNoValue || p[dtype].kind != PyKind::global ||
      static_cast<DcpClass>(p[dtype].integer) != DcpClass::dtype)
    malformed(fmt::format("tensor {} has no dtype", quote_name(e.fqn)));
  e.dtype_name = p[dtype].text.substr(p[dtype].text.find('.') + 1);
  e.dtype = torch_dtype_named(e.dtype_name);
}

std::string box_text(const std::vector<uint64_t>& v) {
  return fmt::format("({})", fmt::join(v, ", "));
}

// A storage's file: a plain name in the checkpoint's folder.
uint32_t file_index(const std::string& name, DcpMetadata& m,
                    std::unordered_map<std::string, uint32_t>& files) {
  if (name.empty() || name == "." || name == ".." || name == kDcpMetadataFile ||
      name.find_first_of(std::string_view("/\\\0", 3)) != std::string::npos)
    malformed(
        fmt::format("storage file {} is not a plain file name of the folder", quote_name(name)));
  const auto [it, added] = files.emplace(name, static_cast<uint32_t>(m.files.size()));
  if (added) {
    if (m.files.size() >= kMaxDcpFiles)
      malformed(fmt::format("more than {} storage files", kMaxDcpFiles));
    m.files.push_back(name);
  }
  return it->second;
}

using StorageKey = std::tuple<std::string, bool, std::vector<uint64_t>>;  // fqn, offset?, offset

// storage_data: MetadataIndex -> _StorageInfo.
std::map<StorageKey, DcpStorage> read_storages(const Pickle& p, ValueId dict, DcpMetadata& m,
                                               CopyBudget& budget) {
  if (dict == kNoValue || p[dict].kind != PyKind::dict)
    malformed("no storage_data dict (a storage layer other than FileSystemWriter's)");
  std::map<StorageKey, DcpStorage> out;
  std::unordered_map<std::string, uint32_t> files;
  const auto& pairs = p[dict].pairs;
  for (size_t i = 0; i + 1 < pairs.size(); i += 2) {
    const ValueId index = pairs[i], info = pairs[i + 1];
    if (!is_class(p, index, DcpClass::index) || !is_class(p, info, DcpClass::storage_info))
      malformed("a storage_data entry that is not MetadataIndex -> _StorageInfo");
    const ValueId fqn = required(p, index, "fqn", "a MetadataIndex");
    (void)name_text(p, fqn, "a MetadataIndex's fqn", budget);
    const ValueId offset = field(p, index, "offset");
    const bool has_offset = offset != kNoValue && p[offset].kind != PyKind::none;
    StorageKey key{
        p[fqn].text, has_offset,
        has_offset ? counts(p, offset, "a MetadataIndex offset") : std::vector<uint64_t>{}};
    if (const ValueId t = field(p, info, "transform_descriptors");
        t != kNoValue && !p[t].items.empty()) {
      std::vector<std::string> names;
      for (const ValueId n : p[t].items) names.push_back(p[n].text);
      throw Error(ErrorCode::unsupported, Rule::checkpoint, p[fqn].text, std::nullopt,
                  fmt::format("{} is stored through DCP's stream transforms ({}), which tlio "
                              "does not decode",
                              quote_name(p[fqn].text), fmt::join(names, ", ")));
    }
    const ValueId path = required(p, info, "relative_path", "a _StorageInfo");
    DcpStorage s{file_index(name_text(p, path, "a storage file name", budget), m, files),
                 count(p, required(p, info, "offset", "a _StorageInfo"), "a storage offset"),
                 count(p, required(p, info, "length", "a _StorageInfo"), "a storage length")};
    if (!checked_add(s.offset, s.length)) malformed("a storage range that overflows");
    if (!out.emplace(std::move(key), s).second)
      malformed(fmt::format("two storages for one chunk of {}", quote_name(p[fqn].text)));
  }
  return out;
}

// No two items' bytes overlap (DCP writes each once, one after another).
void check_disjoint(const std::map<StorageKey, DcpStorage>& storages, const DcpMetadata& m) {
  std::vector<const std::pair<const StorageKey, DcpStorage>*> order;
  for (const auto& entry : storages) order.push_back(&entry);
  std::sort(order.begin(), order.end(), [](const auto* a, const auto* b) {
    return std::tie(a->second.file, a->second.offset) < std::tie(b->second.file, b->second.offset);
  });
  for (size_t i = 1; i < order.size(); ++i) {
    const DcpStorage &a = order[i - 1]->second, &b = order[i]->second;
    if (a.file == b.file && b.offset < a.offset + a.length && b.length > 0 && a.length > 0)
      throw_format(Rule::checkpoint, std::get<0>(order[i]->first),
                   fmt::format("the bytes of {} and {} overlap in {}",
                               quote_name(std::get<0>(order[i - 1]->first)),
                               quote_name(std::get<0>(order[i]->first)), m.files[a.file]));
  }
}

DcpStorage take_storage(std::map<StorageKey, DcpStorage>& storages, const StorageKey& key) {
  const auto it = storages.find(key);
  if (it == storages.end())
    throw_format(Rule::checkpoint, std::get<0>(key),
                 std::get<1>(key)
                     ? fmt::format("the chunk at {} of {} has no storage",
                                   box_text(std::get<2>(key)), quote_name(std::get<0>(key)))
                     : fmt::format("{} has no storage", quote_name(std::get<0>(key))));
  const DcpStorage s = it->second;
  storages.erase(it);
  return s;
}

// planner_data: fqn -> the tuple of state dict keys it was flattened from.
std::unordered_map<std::string, std::vector<std::string>> read_paths(const Pickle& p, ValueId d,
                                                                     CopyBudget& budget) {
  std::unordered_map<std::string, std::vector<std::string>> out;
  if (d == kNoValue || p[d].kind != PyKind::dict) return out;  // a custom planner's, or none
  const auto& pairs = p[d].pairs;
  for (size_t i = 0; i + 1 < pairs.size(); i += 2) {
    const PyValue& path = p[pairs[i + 1]];
    if (p[pairs[i]].kind != PyKind::text || path.kind != PyKind::tuple) continue;
    std::vector<std::string> parts;
    size_t length = 0;
    for (const ValueId part : path.items) {
      if (p[part].kind == PyKind::text)
        parts.push_back(name_text(p, part, "a planner_data path part", budget));
      else if (p[part].kind == PyKind::integer)
        parts.push_back(std::to_string(p[part].integer));
      else
        malformed("a planner_data path part that is neither text nor an index");
      if ((length += parts.back().size() + 1) > kMaxDcpName)
        malformed(fmt::format("a planner_data path longer than {} bytes", kMaxDcpName));
    }
    out[name_text(p, pairs[i], "a planner_data name", budget)] = std::move(parts);
  }
  return out;
}

DcpEntry read_tensor(const Pickle& p, const std::string& fqn, ValueId v) {
  DcpEntry e;
  e.fqn = fqn;
  read_dtype(p, required(p, v, "properties", "a TensorStorageMetadata"), e);
  e.shape = counts(p, required(p, v, "size", "a TensorStorageMetadata"), "a tensor size");
  const ValueId chunks = required(p, v, "chunks", "a TensorStorageMetadata");
  if (p[chunks].kind != PyKind::list) malformed("chunks that are not a list");
  if (p[chunks].items.size() > kMaxDcpChunks)
    throw_format(Rule::checkpoint, fqn,
                 fmt::format("tensor {} has {} chunks (at most {})", quote_name(fqn),
                             p[chunks].items.size(), kMaxDcpChunks));
  for (const ValueId c : p[chunks].items) {
    if (!is_class(p, c, DcpClass::chunk)) malformed("a chunk that is not a ChunkStorageMetadata");
    DcpChunk chunk;
    chunk.offsets = counts(p, required(p, c, "offsets", "a chunk"), "chunk offsets");
    chunk.sizes = counts(p, required(p, c, "sizes", "a chunk"), "chunk sizes");
    chunk.elements = 1;
    for (const uint64_t s : chunk.sizes)
      if (const auto n = checked_mul(chunk.elements, s))
        chunk.elements = *n;
      else
        throw_format(Rule::checkpoint, fqn,
                     fmt::format("tensor {}: a chunk's size overflows", quote_name(fqn)));
    e.chunks.push_back(std::move(chunk));
  }
  check_dcp_tiling(e);
  return e;
}

}  // namespace

void check_dcp_tiling(const DcpEntry& e) {
  const auto refuse = [&](const std::string& why) {
    throw_format(Rule::checkpoint, e.fqn, fmt::format("tensor {}: {}", quote_name(e.fqn), why));
  };
  const size_t rank = e.shape.size();
  uint64_t numel = 1, covered = 0;
  for (const uint64_t d : e.shape)
    if (const auto n = checked_mul(numel, d))
      numel = *n;
    else
      refuse("its size overflows");
  for (const DcpChunk& c : e.chunks) {
    if (c.offsets.size() != rank || c.sizes.size() != rank)
      refuse(fmt::format("a chunk at {} has {} dimensions, the tensor {}", box_text(c.offsets),
                         c.offsets.size(), rank));
    for (size_t d = 0; d < rank; ++d) {
      const auto end = checked_add(c.offsets[d], c.sizes[d]);
      if (!end || *end > e.shape[d])
        refuse(fmt::format("the chunk at {} of sizes {} reaches past its shape {}",
                           box_text(c.offsets), box_text(c.sizes), box_text(e.shape)));
    }
    const auto sum = checked_add(covered, c.elements);
    if (!sum) refuse("its chunks' sizes overflow");
    covered = *sum;
  }
  // Disjoint: a sweep along the dimension where the chunks start at the most places (where a
  // tiling is split), each chunk compared with those starting before it ends there.
  std::vector<size_t> order;
  for (size_t i = 0; i < e.chunks.size(); ++i)
    if (e.chunks[i].elements > 0) order.push_back(i);
  if (rank > 0 && order.size() > 1) {
    size_t axis = 0, most = 0;
    for (size_t d = 0; d < rank; ++d) {
      std::vector<uint64_t> starts;
      for (const size_t i : order) starts.push_back(e.chunks[i].offsets[d]);
      std::sort(starts.begin(), starts.end());
      const size_t n =
          static_cast<size_t>(std::unique(starts.begin(), starts.end()) - starts.begin());
      if (n > most) most = n, axis = d;
    }
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return e.chunks[a].offsets[axis] < e.chunks[b].offsets[axis];
    });
    uint64_t checks = 0;
    for (size_t i = 0; i < order.size(); ++i) {
      const DcpChunk& a = e.chunks[order[i]];
      for (size_t j = i + 1; j < order.size(); ++j) {
        const DcpChunk& b = e.chunks[order[j]];
        if (b.offsets[axis] >= a.offsets[axis] + a.sizes[axis]) break;
        if (++checks > kMaxDcpOverlapChecks)
          refuse(
              fmt::format("its {} chunks overlap along every dimension too often to check "
                          "(more than {} pairs)",
                          e.chunks.size(), kMaxDcpOverlapChecks));
        bool overlap = true;
        for (size_t d = 0; d < rank && overlap; ++d)
          overlap =
              a.offsets[d] < b.offsets[d] + b.sizes[d] && b.offsets[d] < a.offsets[d] + a.sizes[d];
        if (overlap)
          refuse(fmt::format("its chunks at {} and {} overlap", box_text(a.offsets),
                             box_text(b.offsets)));
      }
    }
  } else if (rank == 0 && order.size() > 1) {
    refuse("a scalar saved in more than one chunk");
  }
  if (covered != numel)
    refuse(fmt::format("its chunks hold {} of its {} elements", covered, numel));
}

DcpMetadata parse_dcp_metadata(std::span<const std::byte> pickle) {
  Pickle p;
  CopyBudget budget(pickle.size());
  DcpResolver resolver(budget);
  const ValueId root = p.run(pickle, 0, resolver);
  if (!is_class(p, root, DcpClass::metadata)) malformed("the pickle is not a DCP Metadata");
  DcpMetadata m;
  if (const ValueId v = field(p, root, "version"); v != kNoValue && p[v].kind == PyKind::text)
    m.version = p[v].text;
  const ValueId entries = required(p, root, "state_dict_metadata", "Metadata");
  if (p[entries].kind != PyKind::dict) malformed("state_dict_metadata is not a dict");
  std::map<StorageKey, DcpStorage> storages =
      read_storages(p, field(p, root, "storage_data"), m, budget);
  check_disjoint(storages, m);
  auto paths = read_paths(p, field(p, root, "planner_data"), budget);
  const auto& pairs = p[entries].pairs;
  std::unordered_map<std::string_view, size_t> seen;
  for (size_t i = 0; i + 1 < pairs.size(); i += 2) {
    const std::string& fqn = name_text(p, pairs[i], "a state_dict_metadata key", budget);
    if (!seen.emplace(fqn, i).second) malformed(fmt::format("{} is listed twice", quote_name(fqn)));
    const ValueId v = pairs[i + 1];
    DcpEntry e;
    if (is_class(p, v, DcpClass::bytes_storage)) {
      e.fqn = fqn;
      e.is_bytes = true;
      e.storage = take_storage(storages, {fqn, false, {}});
    } else if (is_class(p, v, DcpClass::tensor_storage)) {
      e = read_tensor(p, fqn, v);
      for (DcpChunk& c : e.chunks) c.storage = take_storage(storages, {fqn, true, c.offsets});
    } else {
      malformed(
          fmt::format("{} is neither a tensor's nor a byte item's metadata", quote_name(fqn)));
    }
    if (auto it = paths.find(fqn); it != paths.end() && !it->second.empty())
      e.path = std::move(it->second);
    else
      e.path = {fqn};
    m.entries.push_back(std::move(e));
  }
  if (!storages.empty())
    malformed(fmt::format("a storage for {} that no item of the metadata has",
                          quote_name(std::get<0>(storages.begin()->first))));
  return m;
}

}  // namespace tlio::detail

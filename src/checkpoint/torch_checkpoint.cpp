// checkpoint/torch_checkpoint.cpp: what torch.save writes, read without running it. The pickle
// machine decodes; TorchResolver decides what each global means (tensor rebuilds, storages,
// dtypes, a few containers; refused callables; inert objects for the rest); the walk names the
// tensors; the import checks every view against its storage before any byte is read, then
// streams the bytes from the mapped checkpoint into the canonical writer.
#include "tlio/checkpoint.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "checkpoint/pickle.hpp"
#include "checkpoint/torch_checkpoint.hpp"
#include "checkpoint/zip.hpp"
#include "common/checked.hpp"
#include "common/json_text.hpp"
#include "format/writer_access.hpp"
#include "io/atomic_file.hpp"
#include "io/os_file.hpp"
#include "model/json_util.hpp"
#include "model/layout.hpp"
#include "tlio/error.hpp"
#include "tlio/writer.hpp"

namespace tlio {
namespace {

using detail::kNoValue;
using detail::Pickle;
using detail::PyKind;
using detail::PyValue;
using detail::quote_name;
using detail::ValueId;

/// How deep the walk goes into nested containers, and how many values it may visit.
constexpr size_t kMaxWalkDepth = 1000;
constexpr uint64_t kMaxWalkSteps = uint64_t{1} << 24;
/// Nested _rebuild_from_type_v2 calls followed.
constexpr int kMaxRebuildNesting = 8;
/// Bytes gathered at a time for non-contiguous or byte-swapped tensors.
constexpr size_t kGatherBytes = size_t{8} << 20;

[[noreturn]] void refuse(std::string tensor, std::string detail) {
  throw_format(Rule::checkpoint, std::move(tensor), std::move(detail));
}

// ---- what globals mean ----------------------------------------------------------------------

enum class Callable : int64_t {
  unknown,           // an inert class
  rebuild_tensor,    // _rebuild_tensor(storage, offset, size, stride)
  rebuild_tensor_v2, // (storage, offset, size, stride, requires_grad, hooks[, metadata])
  rebuild_tensor_v3, // (..., hooks, dtype, metadata)
  rebuild_parameter, // (data, requires_grad, hooks[, state])
  rebuild_from_type, // _rebuild_from_type_v2(func, new_type, args, state)
  unsupported_tensor,
  storage_class,     // torch.FloatStorage, torch.UntypedStorage, ...: index in kStorageClasses
  dtype,             // torch.float32, ...: the Dtype
  ordered_dict,
  torch_size,
  codecs_encode,
  builtin_container,  // set, frozenset, list, tuple, dict, bytearray, bytes
};

// A resolved global keeps its Callable in the low byte of PyValue::integer and what it names
// (a storage class, a dtype) above it.
Callable callable_of(const PyValue& v) { return static_cast<Callable>(v.integer & 0xFF); }
size_t named_of(const PyValue& v) { return static_cast<size_t>(v.integer >> 8); }

struct StorageClass {
  std::string_view name;
  std::optional<Dtype> dtype;  // nullopt: a type tlio cannot write
};
constexpr std::array kStorageClasses = {
    StorageClass{"FloatStorage", Dtype::F32},       StorageClass{"DoubleStorage", Dtype::F64},
    StorageClass{"HalfStorage", Dtype::F16},        StorageClass{"BFloat16Storage", Dtype::BF16},
    StorageClass{"LongStorage", Dtype::I64},        StorageClass{"IntStorage", Dtype::I32},
    StorageClass{"ShortStorage", Dtype::I16},       StorageClass{"CharStorage", Dtype::I8},
    StorageClass{"ByteStorage", Dtype::U8},         StorageClass{"BoolStorage", Dtype::BOOL},
    StorageClass{"ComplexFloatStorage", Dtype::C64}, StorageClass{"UntypedStorage", Dtype::U8},
    StorageClass{"ComplexDoubleStorage", std::nullopt}, StorageClass{"QInt8Storage", std::nullopt},
    StorageClass{"QUInt8Storage", std::nullopt},   StorageClass{"QInt32Storage", std::nullopt},
    StorageClass{"QUInt4x2Storage", std::nullopt}, StorageClass{"QUInt2x4Storage", std::nullopt},
};
constexpr std::array<std::pair<std::string_view, Dtype>, 20> kTorchDtypes = {{
    {"float32", Dtype::F32}, {"float", Dtype::F32}, {"float64", Dtype::F64}, {"double", Dtype::F64},
    {"float16", Dtype::F16}, {"half", Dtype::F16}, {"bfloat16", Dtype::BF16}, {"int64", Dtype::I64},
    {"long", Dtype::I64}, {"int32", Dtype::I32}, {"int", Dtype::I32}, {"int16", Dtype::I16},
    {"short", Dtype::I16}, {"int8", Dtype::I8}, {"uint8", Dtype::U8}, {"bool", Dtype::BOOL},
    {"complex64", Dtype::C64}, {"float8_e4m3fn", Dtype::F8_E4M3}, {"float8_e5m2", Dtype::F8_E5M2},
    {"uint16", Dtype::U16},
}};

// Modules (and single callables, "numpy.load") torch.load would run code through; naming one
// refuses the file. builtins/__builtin__ are handled apart, by an allowlist.
constexpr std::array kRefusedModules = {
    "os", "posix", "nt", "subprocess", "sys", "importlib", "runpy", "shutil", "socket", "pickle",
    "_pickle", "cPickle", "marshal", "types", "ctypes", "_ctypes", "code", "codeop", "pty",
    "operator", "functools", "io", "_io", "posixpath", "ntpath", "multiprocessing", "threading",
    "_thread", "signal", "asyncio", "webbrowser", "pdb", "bdb", "tempfile", "glob", "pathlib",
    "zipimport", "pkgutil", "inspect", "gc", "site", "sysconfig", "platform", "commands",
    "popen2", "timeit", "trace", "cProfile", "profile", "urllib", "http", "ftplib", "smtplib",
    "telnetlib", "requests", "dill", "joblib", "torch.hub", "torch.jit", "torch._C",
    "torch.package", "torch.serialization", "numpy.load", "numpy.lib.npyio", "copyreg",
    "__main__"};
// builtins/__builtin__ names that only build containers or values; any other builtin is refused.
constexpr std::array kHarmlessBuiltins = {"set", "frozenset", "list", "tuple", "dict", "bytearray",
                                          "bytes", "complex", "slice", "range", "int", "float",
                                          "str", "bool", "object"};

bool in_module(std::string_view module, std::string_view root) {
  return module == root || (module.size() > root.size() && module.substr(0, root.size()) == root &&
                            module[root.size()] == '.');
}

struct StorageRecord {
  std::string key;
  std::optional<Dtype> dtype;  // nullopt: unsupported storage type
  std::string type_name;
  uint64_t numel = 0;
  // Legacy storage views: elements [view_offset, view_offset + numel) of another storage.
  std::string root_key;
  uint64_t view_offset = 0;
};

struct TensorRecord {
  size_t storage = SIZE_MAX;  // SIZE_MAX for unsupported tensors
  std::optional<Dtype> dtype; // nullopt: the storage's (v2) when supported
  int64_t offset = 0;
  std::vector<int64_t> size, stride;
  std::string unsupported;    // why, for tensors tlio cannot write
};

class TorchResolver : public detail::PickleResolver {
 public:
  std::vector<StorageRecord> storages;
  std::unordered_map<std::string, size_t> storage_by_key;
  std::vector<TensorRecord> tensors;

  ValueId global(Pickle& p, std::string_view module, std::string_view name) override {
    const std::string full = fmt::format("{}.{}", module, name);
    auto tagged = [&](Callable c, int64_t extra = 0) {
      ValueId v = p.make_text(PyKind::global, full);
      p[v].integer = static_cast<int64_t>(c) | (extra << 8);
      return v;
    };
    if (module == "builtins" || module == "__builtin__") {
      if (std::find(kHarmlessBuiltins.begin(), kHarmlessBuiltins.end(), name) == kHarmlessBuiltins.end())
        refused(full);
      return tagged(Callable::builtin_container);
    }
    for (std::string_view m : kRefusedModules)
      if (in_module(module, m) || full == m) refused(full);
    if (module == "torch._utils") {
      if (name == "_rebuild_tensor") return tagged(Callable::rebuild_tensor);
      if (name == "_rebuild_tensor_v2") return tagged(Callable::rebuild_tensor_v2);
      if (name == "_rebuild_tensor_v3") return tagged(Callable::rebuild_tensor_v3);
      if (name == "_rebuild_parameter" || name == "_rebuild_parameter_with_state")
        return tagged(Callable::rebuild_parameter);
      if (name.substr(0, 9) == "_rebuild_") return tagged(Callable::unsupported_tensor);
    }
    if (module == "torch._tensor" && name == "_rebuild_from_type_v2") return tagged(Callable::rebuild_from_type);
    if (module == "torch" || module == "torch.storage") {
      for (size_t i = 0; i < kStorageClasses.size(); ++i)
        if (name == kStorageClasses[i].name)
          return tagged(Callable::storage_class, static_cast<int64_t>(i));
      for (const auto& [n, d] : kTorchDtypes)
        if (name == n) return tagged(Callable::dtype, static_cast<int64_t>(d));
      if (name == "Size") return tagged(Callable::torch_size);
    }
    if (module == "collections" && name == "OrderedDict") return tagged(Callable::ordered_dict);
    if (module == "_codecs" && name == "encode") return tagged(Callable::codecs_encode);
    return tagged(Callable::unknown);  // an inert class: never called
  }

  ValueId call(Pickle& p, ValueId callable, ValueId args) override { return call(p, callable, args, 0); }

  ValueId persistent(Pickle& p, ValueId pid) override {
    const PyValue& t = p[pid];
    if (t.kind != PyKind::tuple || t.items.empty() || !is_text(p, t.items[0], "storage")) {
      if (t.kind == PyKind::tuple && !t.items.empty() && is_text(p, t.items[0], "module"))
        return p.object(kNoValue, pid);  // a module's source: kept inert
      throw_format(Rule::pickle, {}, "a persistent id that is not a storage");
    }
    const auto& f = t.items;
    if (f.size() < 5) throw_format(Rule::pickle, {}, "a storage id with fewer than 5 fields");
    const PyValue& cls = p[f[1]];
    if (cls.kind != PyKind::global || callable_of(cls) != Callable::storage_class)
      throw_format(Rule::pickle, {}, fmt::format("a storage of unknown type {}", cls.kind == PyKind::global ? cls.text : "?"));
    const StorageClass& sc = kStorageClasses[named_of(cls)];
    const std::string key = text_or_int(p, f[2], "a storage key");
    const int64_t numel = integer(p, f[4], "a storage size");
    if (numel < 0) throw_format(Rule::checkpoint, {}, fmt::format("storage {} has a negative size", quote_name(key)));
    size_t index;
    if (auto it = storage_by_key.find(key); it != storage_by_key.end()) {
      index = it->second;
    } else {
      index = storages.size();
      storages.push_back({key, sc.dtype, std::string(sc.name), static_cast<uint64_t>(numel), {}, 0});
      storage_by_key.emplace(key, index);
    }
    // Legacy views: (view_key, offset, size) of the root storage just named.
    if (f.size() >= 6 && p[f[5]].kind == PyKind::tuple) {
      const auto& view = p[f[5]].items;
      if (view.size() != 3) throw_format(Rule::pickle, {}, "a storage view id without 3 fields");
      const std::string view_key = text_or_int(p, view[0], "a view key");
      const int64_t offset = integer(p, view[1], "a view offset");
      const int64_t size = integer(p, view[2], "a view size");
      if (offset < 0 || size < 0) throw_format(Rule::checkpoint, {}, "a storage view with a negative offset or size");
      if (auto it = storage_by_key.find(view_key); it != storage_by_key.end()) {
        index = it->second;
      } else {
        StorageRecord view_record = storages[index];
        view_record.key = view_key;
        view_record.root_key = key;
        view_record.view_offset = static_cast<uint64_t>(offset);
        view_record.numel = static_cast<uint64_t>(size);
        index = storages.size();
        storages.push_back(std::move(view_record));
        storage_by_key.emplace(view_key, index);
      }
    }
    ValueId v = p.make(PyKind::resolved);
    p[v].integer = static_cast<int64_t>(index);
    p[v].text = "storage";
    return v;
  }

 private:
  [[noreturn]] static void refused(const std::string& full) {
    throw_format(Rule::pickle, {}, fmt::format("refuses {}: torch.load would run it (tlio never runs a pickle)", full));
  }
  static bool is_text(const Pickle& p, ValueId v, std::string_view s) {
    return p[v].kind == PyKind::text && p[v].text == s;
  }
  static int64_t integer(const Pickle& p, ValueId v, const char* what) {
    if (p[v].kind != PyKind::integer && p[v].kind != PyKind::boolean)
      throw_format(Rule::pickle, {}, fmt::format("{} is not an integer", what));
    return p[v].integer;
  }
  static std::string text_or_int(const Pickle& p, ValueId v, const char* what) {
    if (p[v].kind == PyKind::text) return p[v].text;
    if (p[v].kind == PyKind::integer) return std::to_string(p[v].integer);
    throw_format(Rule::pickle, {}, fmt::format("{} is not a string", what));
  }
  static std::vector<int64_t> int_tuple(const Pickle& p, ValueId v, const char* what) {
    if (p[v].kind != PyKind::tuple && p[v].kind != PyKind::list)
      throw_format(Rule::pickle, {}, fmt::format("{} is not a tuple", what));
    std::vector<int64_t> out;
    for (ValueId i : p[v].items) out.push_back(integer(p, i, what));
    return out;
  }
  ValueId tensor_value(Pickle& p, size_t index) {
    ValueId v = p.make(PyKind::resolved);
    p[v].integer = static_cast<int64_t>(index);
    p[v].text = "tensor";
    return v;
  }
  ValueId unsupported(Pickle& p, std::string why) {
    tensors.push_back({SIZE_MAX, std::nullopt, 0, {}, {}, std::move(why)});
    return tensor_value(p, tensors.size() - 1);
  }

  ValueId call(Pickle& p, ValueId callable, ValueId args, int nesting) {
    if (p[callable].kind != PyKind::global) return p.object(callable, args);
    const Callable kind = callable_of(p[callable]);
    const std::vector<ValueId> a = p[args].items;  // a copy: p may grow below
    switch (kind) {
      case Callable::rebuild_tensor:
      case Callable::rebuild_tensor_v2:
      case Callable::rebuild_tensor_v3: {
        if (a.size() < 4) throw_format(Rule::pickle, {}, fmt::format("{} with {} arguments", p[callable].text, a.size()));
        const PyValue& s = p[a[0]];
        if (s.kind != PyKind::resolved || s.text != "storage")
          throw_format(Rule::pickle, {}, fmt::format("{} of something that is not a storage", p[callable].text));
        TensorRecord t;
        t.storage = static_cast<size_t>(s.integer);
        t.offset = integer(p, a[1], "a storage offset");
        t.size = int_tuple(p, a[2], "a tensor size");
        t.stride = int_tuple(p, a[3], "a tensor stride");
        if (kind == Callable::rebuild_tensor_v3) {
          if (a.size() < 7) throw_format(Rule::pickle, {}, "_rebuild_tensor_v3 without a dtype");
          const PyValue& d = p[a[6]];
          if (d.kind != PyKind::global || callable_of(d) != Callable::dtype)
            return unsupported(p, fmt::format("its dtype {} is not one tlio writes", d.kind == PyKind::global ? d.text : "?"));
          t.dtype = static_cast<Dtype>(named_of(d));
        }
        tensors.push_back(std::move(t));
        return tensor_value(p, tensors.size() - 1);
      }
      case Callable::rebuild_parameter:
        if (a.empty() || p[a[0]].kind != PyKind::resolved)
          throw_format(Rule::pickle, {}, "_rebuild_parameter of something that is not a tensor");
        return a[0];
      case Callable::rebuild_from_type:
        if (a.size() < 3 || p[a[2]].kind != PyKind::tuple)
          throw_format(Rule::pickle, {}, "_rebuild_from_type_v2 with malformed arguments");
        if (nesting >= kMaxRebuildNesting)
          throw_format(Rule::pickle, {}, "_rebuild_from_type_v2 nested too deeply");
        return call(p, a[0], a[2], nesting + 1);
      case Callable::unsupported_tensor:
        return unsupported(p, fmt::format("{} (quantized, sparse, nested or device tensors are not written)", p[callable].text));
      case Callable::ordered_dict: {
        ValueId d = p.make(PyKind::dict);
        if (!a.empty()) {  // OrderedDict([(k, v), ...])
          const std::vector<ValueId> items = p[a[0]].items;
          for (ValueId pair : items) {
            if (p[pair].items.size() != 2) throw_format(Rule::pickle, {}, "OrderedDict of something that is not pairs");
            p[d].pairs.push_back(p[pair].items[0]);
            p[d].pairs.push_back(p[pair].items[1]);
          }
        }
        return d;
      }
      case Callable::torch_size: {
        ValueId t = p.make(PyKind::tuple);
        if (!a.empty()) p[t].items = p[a[0]].items;
        return t;
      }
      case Callable::codecs_encode: {
        ValueId b = p.make(PyKind::bytes);
        if (!a.empty()) p[b].text = p[a[0]].text;
        return b;
      }
      case Callable::builtin_container: {
        if (!a.empty() && (p[a[0]].kind == PyKind::list || p[a[0]].kind == PyKind::tuple ||
                           p[a[0]].kind == PyKind::set)) {
          ValueId c = p.make(PyKind::list);
          p[c].items = p[a[0]].items;
          return c;
        }
        return p.object(callable, args);
      }
      case Callable::unknown:
      case Callable::storage_class:
      case Callable::dtype:
        return p.object(callable, args);
    }
    return p.object(callable, args);
  }
};

// ---- the checkpoint: container, pickle, storages ---------------------------------------------

struct Checkpoint {
  detail::Fd fd;
  detail::Mapping mapping;
  std::span<const std::byte> bytes;
  std::string name;
  std::string format;
  bool big_endian = false;
  std::optional<detail::ZipArchive> zip;
  std::string prefix;  // zip: "archive/"
  Pickle pickle;
  TorchResolver resolver;
  ValueId root = kNoValue;
  // Legacy: the raw storages after the pickles, by key.
  std::unordered_map<std::string, std::span<const std::byte>> legacy_storages;
  std::unordered_map<std::string, std::vector<std::byte>> inflated;  // deflated zip entries

  // The bytes of storage `s`, checked against the size the pickle gives it.
  std::span<const std::byte> storage_bytes(size_t s) {
    const StorageRecord& r = resolver.storages[s];
    const std::string& key = r.root_key.empty() ? r.key : r.root_key;
    std::span<const std::byte> whole;
    if (zip) {
      const detail::ZipEntry* e = zip->find(prefix + "data/" + key);
      if (!e) refuse({}, fmt::format("storage {} has no entry data/{} in the archive", quote_name(key), key));
      if (e->method == 0) {
        whole = zip->stored(*e);
      } else {
        auto it = inflated.find(key);
        if (it == inflated.end()) it = inflated.emplace(key, zip->read(*e)).first;
        whole = it->second;
      }
    } else {
      auto it = legacy_storages.find(key);
      if (it == legacy_storages.end()) refuse({}, fmt::format("storage {} is not in the file", quote_name(key)));
      whole = it->second;
    }
    const unsigned bits = dtype_bits(*r.dtype);
    const StorageRecord& root_record = r.root_key.empty() ? r : resolver.storages[resolver.storage_by_key.at(r.root_key)];
    const auto root_bytes = detail::checked_mul(root_record.numel, bits / 8);
    if (!root_bytes || *root_bytes != whole.size())
      refuse({}, fmt::format("storage {} holds {} bytes, but its record says {} elements of {} bytes",
                             quote_name(key), whole.size(), root_record.numel, bits / 8));
    if (r.root_key.empty()) return whole;
    const auto begin = detail::checked_mul(r.view_offset, bits / 8);
    const auto size = detail::checked_mul(r.numel, bits / 8);
    const auto end = begin && size ? detail::checked_add(*begin, *size) : std::nullopt;
    if (!end || *end > whole.size())
      refuse({}, fmt::format("storage view {} lies outside storage {}", quote_name(r.key), quote_name(key)));
    return whole.subspan(static_cast<size_t>(*begin), static_cast<size_t>(*size));
  }
};

// The 10-byte little-endian magic number the legacy format starts with (0x1950a86a20f9469cfc6c).
constexpr std::array<uint8_t, 10> kLegacyMagic = {0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};

// Reads the container and runs the pickle(s) of c.bytes.
void parse_checkpoint(Checkpoint& c) {
  if (detail::looks_like_zip(c.bytes)) {
    c.format = "zip";
    c.zip.emplace(c.bytes);
    // torch writes one top-level folder (any name) holding data.pkl.
    const detail::ZipEntry* pkl = nullptr;
    for (const detail::ZipEntry& e : c.zip->entries()) {
      const auto slash = e.name.find('/');
      if (slash != std::string::npos && e.name.substr(slash + 1) == "data.pkl") {
        if (pkl) throw_format(Rule::zip, e.name, "more than one data.pkl in the archive");
        pkl = &e;
        c.prefix = e.name.substr(0, slash + 1);
      }
    }
    if (!pkl) throw_format(Rule::zip, {}, "a zip archive without <folder>/data.pkl is not a PyTorch checkpoint");
    if (const detail::ZipEntry* order = c.zip->find(c.prefix + "byteorder")) {
      const auto text = c.zip->read(*order);
      const std::string_view s(reinterpret_cast<const char*>(text.data()), text.size());
      if (s != "little" && s != "big") throw_format(Rule::zip, order->name, "byteorder is neither \"little\" nor \"big\"");
      c.big_endian = s == "big";
    }
    const std::vector<std::byte> data = c.zip->read(*pkl);
    c.root = c.pickle.run(data, 0, c.resolver);
    return;
  }
  // Legacy: magic number, protocol version, sys_info, the object, storage keys, raw storages.
  const auto head = c.bytes.first(std::min<size_t>(c.bytes.size(), 2));
  if (head.size() < 2 || std::to_integer<uint8_t>(head[0]) != 0x80)
    throw_format(Rule::checkpoint, {}, "not a PyTorch checkpoint (neither a zip archive nor a pickle)");
  c.format = "legacy";
  size_t pos = 0;
  ValueId magic = c.pickle.run(c.bytes, pos, c.resolver, &pos);
  const PyValue& m = c.pickle[magic];
  if (m.kind != PyKind::big_integer || m.text.size() != kLegacyMagic.size() ||
      std::memcmp(m.text.data(), kLegacyMagic.data(), kLegacyMagic.size()) != 0)
    throw_format(Rule::checkpoint, {}, "a pickle that is not a PyTorch checkpoint (no legacy magic number)");
  ValueId protocol = c.pickle.run(c.bytes, pos, c.resolver, &pos);
  if (c.pickle[protocol].kind != PyKind::integer || c.pickle[protocol].integer != 1001)
    throw_format(Rule::checkpoint, {}, "legacy checkpoint protocol is not 1001");
  ValueId sys_info = c.pickle.run(c.bytes, pos, c.resolver, &pos);
  const auto& info = c.pickle[sys_info].pairs;
  for (size_t i = 0; i + 1 < info.size(); i += 2)
    if (c.pickle[info[i]].text == "little_endian") c.big_endian = c.pickle[info[i + 1]].integer == 0;
  c.root = c.pickle.run(c.bytes, pos, c.resolver, &pos);
  ValueId keys = c.pickle.run(c.bytes, pos, c.resolver, &pos);
  if (c.pickle[keys].kind != PyKind::list) throw_format(Rule::checkpoint, {}, "the legacy storage key list is missing");
  for (ValueId k : c.pickle[keys].items) {
    const std::string& key = c.pickle[k].text;
    auto it = c.resolver.storage_by_key.find(key);
    if (it == c.resolver.storage_by_key.end())
      throw_format(Rule::checkpoint, {}, fmt::format("storage {} is listed but never used", quote_name(key)));
    const StorageRecord& r = c.resolver.storages[it->second];
    if (!r.dtype) throw_format(Rule::checkpoint, {}, fmt::format("storage {} is a {}, which tlio cannot read", quote_name(key), r.type_name));
    if (c.bytes.size() - pos < 8) throw_format(Rule::checkpoint, {}, fmt::format("storage {} is cut short", quote_name(key)));
    uint64_t numel = 0;
    for (int i = 0; i < 8; ++i) numel |= uint64_t(std::to_integer<uint8_t>(c.bytes[pos + i])) << (8 * i);
    if (c.big_endian) numel = __builtin_bswap64(numel);
    pos += 8;
    const auto size = detail::checked_mul(numel, dtype_bits(*r.dtype) / 8);
    if (!size || *size > c.bytes.size() - pos)
      throw_format(Rule::checkpoint, {}, fmt::format("storage {} of {} elements runs past the end of the file", quote_name(key), numel));
    if (!c.legacy_storages.emplace(key, c.bytes.subspan(pos, static_cast<size_t>(*size))).second)
      throw_format(Rule::checkpoint, {}, fmt::format("storage {} is listed twice", quote_name(key)));
    pos += static_cast<size_t>(*size);
  }
}

void open_checkpoint(Checkpoint& c, const std::filesystem::path& path) {
  c.name = path.string();
  c.fd = detail::open_read(path);
  c.mapping = detail::Mapping(c.fd.get(), detail::fd_size(c.fd.get(), c.name), c.name);
  c.bytes = c.mapping.bytes();
  parse_checkpoint(c);
}

// ---- naming: the walk ------------------------------------------------------------------------

struct Named {
  std::string name;
  size_t tensor;
};

struct WalkResult {
  std::vector<Named> tensors;
  uint64_t dropped = 0;
};

std::optional<std::string> key_text(const Pickle& p, ValueId k) {
  if (p[k].kind == PyKind::text) return p[k].text;
  if (p[k].kind == PyKind::integer) return std::to_string(p[k].integer);
  return std::nullopt;
}

// The value at `key` (a.b.c: dict keys, list indices) under `root`.
ValueId descend(const Pickle& p, ValueId root, const std::string& key) {
  ValueId v = root;
  size_t start = 0;
  while (start <= key.size()) {
    const size_t dot = std::min(key.find('.', start), key.size());
    const std::string part = key.substr(start, dot - start);
    const PyValue& c = p[v];
    ValueId next = kNoValue;
    const std::vector<ValueId>* pairs = c.kind == PyKind::dict ? &c.pairs
                                        : c.kind == PyKind::object && c.state != kNoValue ? &p[c.state].pairs
                                                                                          : nullptr;
    if (pairs)
      for (size_t i = 0; i + 1 < pairs->size(); i += 2)
        if (key_text(p, (*pairs)[i]) == part) next = (*pairs)[i + 1];
    if (next == kNoValue && (c.kind == PyKind::list || c.kind == PyKind::tuple)) {
      char* stop = nullptr;
      const unsigned long long i = std::strtoull(part.c_str(), &stop, 10);
      if (!part.empty() && *stop == '\0' && i < c.items.size()) next = c.items[static_cast<size_t>(i)];
    }
    if (next == kNoValue)
      throw Error(ErrorCode::not_found, Rule::none, key, std::nullopt,
                  fmt::format("--key {}: no {} in the checkpoint", quote_name(key), quote_name(key.substr(0, dot))));
    v = next;
    start = dot + 1;
  }
  return v;
}

WalkResult walk(const Pickle& p, ValueId root) {
  WalkResult out;
  struct Item {
    ValueId value;
    std::string path;
    size_t depth;
  };
  std::vector<Item> todo{{root, "", 0}};
  std::unordered_set<ValueId> seen;  // containers are walked once: no cycles, no blow-up
  uint64_t steps = 0;
  auto join = [](const std::string& path, const std::string& part) {
    return path.empty() ? part : path + "." + part;
  };
  while (!todo.empty()) {
    Item it = std::move(todo.back());
    todo.pop_back();
    if (++steps > kMaxWalkSteps)
      throw_format(Rule::checkpoint, {}, fmt::format("the object holds more than {} values", kMaxWalkSteps));
    const PyValue& v = p[it.value];
    if (v.kind == PyKind::resolved) {
      if (v.text == "tensor") out.tensors.push_back({it.path, static_cast<size_t>(v.integer)});
      else ++out.dropped;  // a bare storage
      continue;
    }
    const bool container = v.kind == PyKind::dict || v.kind == PyKind::list || v.kind == PyKind::tuple ||
                           v.kind == PyKind::set || v.kind == PyKind::object;
    if (!container) {
      ++out.dropped;
      continue;
    }
    if (!seen.insert(it.value).second) continue;
    if (it.depth >= kMaxWalkDepth)
      throw_format(Rule::checkpoint, {}, fmt::format("the object nests deeper than {} levels", kMaxWalkDepth));
    // Children pushed in reverse so they are met in order.
    std::vector<Item> children;
    auto add_pairs = [&](const std::vector<ValueId>& pairs, const std::string& base) {
      for (size_t i = 0; i + 1 < pairs.size(); i += 2) {
        if (auto k = key_text(p, pairs[i])) children.push_back({pairs[i + 1], join(base, *k), it.depth + 1});
        else ++out.dropped;
      }
    };
    auto add_items = [&](const std::vector<ValueId>& items, const std::string& base) {
      for (size_t i = 0; i < items.size(); ++i) children.push_back({items[i], join(base, std::to_string(i)), it.depth + 1});
    };
    if (v.kind == PyKind::dict) {
      add_pairs(v.pairs, it.path);
    } else if (v.kind == PyKind::object) {
      // An inert object: its state (attributes), then what was set or appended into it, then
      // the arguments it was made from.
      if (v.state != kNoValue) {
        if (p[v.state].kind == PyKind::dict) add_pairs(p[v.state].pairs, it.path);
        else children.push_back({v.state, it.path, it.depth + 1});
      }
      add_pairs(v.pairs, it.path);
      add_items(v.items, it.path);
      if (v.args != kNoValue && p[v.args].kind == PyKind::tuple) add_items(p[v.args].items, it.path);
    } else {
      add_items(v.items, it.path);
    }
    for (auto c = children.rbegin(); c != children.rend(); ++c) todo.push_back(std::move(*c));
  }
  return out;
}

// ---- views ----------------------------------------------------------------------------------

struct Plan {
  std::string name;
  size_t tensor;
  Dtype dtype;
  std::vector<uint64_t> shape;
  bool contiguous = true;
  std::string alias_of;
};

// Checks a tensor's view against its storage; returns the dtype it is written as.
Dtype check_view(Checkpoint& c, const std::string& name, const TensorRecord& t, bool* contiguous) {
  const StorageRecord& s = c.resolver.storages[t.storage];
  if (!s.dtype)
    throw Error(ErrorCode::unsupported, Rule::checkpoint, name, std::nullopt,
                fmt::format("tensor {} is stored as {}, which safetensors has no dtype for", quote_name(name), s.type_name));
  const Dtype dtype = t.dtype.value_or(*s.dtype);
  if (t.size.size() != t.stride.size())
    refuse(name, fmt::format("tensor {} has {} sizes but {} strides", quote_name(name), t.size.size(), t.stride.size()));
  if (t.offset < 0) refuse(name, fmt::format("tensor {} has a negative storage offset", quote_name(name)));
  uint64_t last = static_cast<uint64_t>(t.offset), numel = 1;
  bool empty = false;
  for (size_t i = 0; i < t.size.size(); ++i) {
    if (t.size[i] < 0 || t.stride[i] < 0)
      refuse(name, fmt::format("tensor {} has a negative size or stride", quote_name(name)));
    if (t.size[i] == 0) empty = true;
    const auto n = detail::checked_mul(numel, static_cast<uint64_t>(t.size[i]));
    if (!n) refuse(name, fmt::format("tensor {}: its size overflows", quote_name(name)));
    numel = *n;
  }
  if (!empty)
    for (size_t i = 0; i < t.size.size(); ++i) {
      const auto step = detail::checked_mul(static_cast<uint64_t>(t.size[i] - 1), static_cast<uint64_t>(t.stride[i]));
      const auto sum = step ? detail::checked_add(last, *step) : std::nullopt;
      if (!sum) refuse(name, fmt::format("tensor {}: its view overflows", quote_name(name)));
      last = *sum;
    }
  // The view's elements (of `dtype`) must lie inside the storage's bytes.
  const unsigned element = dtype_bits(dtype) / 8;
  const auto storage_bytes = detail::checked_mul(s.numel, dtype_bits(*s.dtype) / 8);
  const auto end = detail::checked_add(last, 1);
  const auto view_end = end ? detail::checked_mul(*end, element) : std::nullopt;
  if (!empty && (!view_end || !storage_bytes || *view_end > *storage_bytes))
    refuse(name, fmt::format("tensor {} reaches element {} of a storage of {} bytes ({} {}-byte elements)",
                             quote_name(name), last, storage_bytes.value_or(0), storage_bytes.value_or(0) / element, element));
  // Row-major strides: then the bytes can be written in one piece.
  uint64_t expected = 1;
  *contiguous = true;
  for (size_t i = t.size.size(); i-- > 0;) {
    if (t.size[i] != 1 && static_cast<uint64_t>(t.stride[i]) != expected) *contiguous = false;
    expected *= static_cast<uint64_t>(t.size[i]);
  }
  return dtype;
}

std::vector<Plan> plan(Checkpoint& c, const ImportOptions& options, CheckpointContents& contents) {
  ValueId root = c.root;
  if (!options.key.empty()) {
    root = descend(c.pickle, root, options.key);
  } else if (c.pickle[root].kind == PyKind::dict) {
    const auto& pairs = c.pickle[root].pairs;
    for (size_t i = 0; i + 1 < pairs.size(); i += 2)
      if (key_text(c.pickle, pairs[i]) == "state_dict" && c.pickle[pairs[i + 1]].kind == PyKind::dict)
        root = pairs[i + 1];
  }
  WalkResult w = walk(c.pickle, root);
  contents.format = c.format;
  contents.dropped_values = w.dropped;
  std::vector<Plan> plans;
  std::unordered_set<std::string> names;
  for (const Named& n : w.tensors) {
    const std::string name = n.name.empty() ? "tensor" : n.name;
    if (!names.insert(name).second)
      refuse(name, fmt::format("two tensors would be named {}", quote_name(name)));
    const TensorRecord& t = c.resolver.tensors[n.tensor];
    std::string why = t.unsupported;
    Plan pl{name, n.tensor, Dtype::F32, {}, true, {}};
    if (why.empty()) {
      try {
        pl.dtype = check_view(c, name, t, &pl.contiguous);
      } catch (const Error& e) {
        if (e.code() != ErrorCode::unsupported) throw;
        why = e.detail();
      }
    } else {
      why = fmt::format("tensor {}: {}", quote_name(name), why);
    }
    if (!why.empty()) {
      if (!options.skip_unsupported)
        throw Error(ErrorCode::unsupported, Rule::checkpoint, name, std::nullopt,
                    why + " (--skip-unsupported leaves it out)");
      contents.skipped.push_back(why);
      continue;
    }
    for (int64_t d : t.size) pl.shape.push_back(static_cast<uint64_t>(d));
    plans.push_back(std::move(pl));
  }
  // Exact aliases (same storage, offset, sizes, strides, dtype): the alphabetically first name
  // is written, the others recorded.
  std::map<std::tuple<size_t, int64_t, std::vector<int64_t>, std::vector<int64_t>, Dtype>, std::string> first;
  for (const Plan& pl : plans) {
    const TensorRecord& t = c.resolver.tensors[pl.tensor];
    auto key = std::make_tuple(t.storage, t.offset, t.size, t.stride, pl.dtype);
    auto [it, inserted] = first.emplace(key, pl.name);
    if (!inserted && pl.name < it->second) it->second = pl.name;
  }
  for (Plan& pl : plans) {
    const TensorRecord& t = c.resolver.tensors[pl.tensor];
    const std::string& kept = first.at(std::make_tuple(t.storage, t.offset, t.size, t.stride, pl.dtype));
    if (kept != pl.name) pl.alias_of = kept;
  }
  for (const Plan& pl : plans)
    contents.tensors.push_back({pl.name, pl.dtype, Shape(pl.shape), pl.contiguous, pl.alias_of});
  return plans;
}

// Copies elements [first, first + count) of the row-major order of view `t` into `out`.
void gather(std::span<const std::byte> storage, const TensorRecord& t, unsigned element, bool swap,
            uint64_t first, uint64_t count, std::byte* out) {
  const size_t rank = t.size.size();
  std::vector<uint64_t> index(rank);
  uint64_t rest = first;
  for (size_t i = rank; i-- > 0;) {
    const auto n = static_cast<uint64_t>(t.size[i]);
    index[i] = rest % n;
    rest /= n;
  }
  for (uint64_t k = 0; k < count; ++k) {
    uint64_t at = static_cast<uint64_t>(t.offset);
    for (size_t i = 0; i < rank; ++i) at += index[i] * static_cast<uint64_t>(t.stride[i]);
    const std::byte* src = storage.data() + at * element;
    if (swap)
      for (unsigned b = 0; b < element; ++b) out[k * element + b] = src[element - 1 - b];
    else
      std::memcpy(out + k * element, src, element);
    for (size_t i = rank; i-- > 0;) {  // next index, last dimension fastest
      if (++index[i] < static_cast<uint64_t>(t.size[i])) break;
      index[i] = 0;
    }
  }
}

}  // namespace

bool looks_like_checkpoint(const std::filesystem::path& path) {
  try {
    detail::Fd fd = detail::open_read(path);
    std::byte head[4] = {};
    const uint64_t size = detail::fd_size(fd.get(), path.string());
    if (size < 4) return false;
    detail::pread_exact(fd.get(), 0, head, path.string());
    return detail::looks_like_zip(head) ||
           (std::to_integer<uint8_t>(head[0]) == 0x80 && std::to_integer<uint8_t>(head[2]) == 0x8a);
  } catch (const Error&) {
    return false;
  }
}

namespace {
// The contents, with every storage found and checked against its records (no byte read).
CheckpointContents contents_of(Checkpoint& c, const ImportOptions& options) {
  CheckpointContents contents;
  for (const Plan& pl : plan(c, options, contents))
    if (pl.alias_of.empty()) (void)c.storage_bytes(c.resolver.tensors[pl.tensor].storage);
  return contents;
}
}  // namespace

CheckpointContents read_checkpoint(const std::filesystem::path& src, const ImportOptions& options) {
  Checkpoint c;
  try {
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
  plan(c, {}, contents);
  return contents;
}

namespace {

// One tensor to write: which checkpoint and plan, and its storage (checked).
struct Job {
  Checkpoint* checkpoint;
  const Plan* plan;
  std::span<const std::byte> storage;
  uint64_t bytes = 0;
};

// Writes one tensor of a checkpoint: contiguous bytes file-to-file in the kernel, strided or
// byte-swapped ones gathered a chunk at a time.
void write_tensor(Writer& w, const Job& job) {
  Checkpoint& c = *job.checkpoint;
  const Plan& pl = *job.plan;
  const TensorRecord& t = c.resolver.tensors[pl.tensor];
  const unsigned element = dtype_bits(pl.dtype) / 8;
  const bool swap = c.big_endian && element > 1;
  const auto piece = job.bytes == 0 ? std::span<const std::byte>{}
                                    : job.storage.subspan(static_cast<size_t>(t.offset) * element,
                                                          static_cast<size_t>(job.bytes));
  const bool in_file = job.bytes != 0 && piece.data() >= c.bytes.data() &&
                       piece.data() <= c.bytes.data() + c.bytes.size();
  if (pl.contiguous && !swap && in_file) {
    // Straight from the checkpoint file to the output, in the kernel: the bytes never pass
    // through this process (its memory stays small whatever the checkpoint's size).
    w.copy_from_fd(pl.name, c.fd.get(), static_cast<uint64_t>(piece.data() - c.bytes.data()));
  } else if (pl.contiguous && !swap) {
    w.write(pl.name, piece);  // an inflated entry, in memory
  } else {
    const size_t chunk = kGatherBytes / element * element;
    w.write_from(pl.name, [&](uint64_t offset, std::span<std::byte> buffer) {
      gather(job.storage, t, element, swap, offset / element, buffer.size() / element, buffer.data());
    }, chunk);
  }
  if (in_file) detail::drop_pages(job.storage);  // gathered pages leave this process
}

// Output files of an import: each gets its jobs and the alias records of its tensors.
struct Output {
  std::string name;
  std::vector<Job> jobs;
  std::vector<std::pair<std::string, std::string>> aliases;  // dropped -> kept
};

// The jobs of one checkpoint's plans (storages checked before anything is written), and its
// alias records.
void add_jobs(Checkpoint& c, const std::vector<Plan>& plans, std::vector<Job>& jobs,
              std::vector<std::pair<std::string, std::string>>& aliases) {
  for (const Plan& pl : plans) {
    if (!pl.alias_of.empty()) {
      aliases.emplace_back(pl.name, pl.alias_of);
      continue;
    }
    jobs.push_back({&c, &pl, c.storage_bytes(c.resolver.tensors[pl.tensor].storage),
                    detail::tensor_size(dtype_bits(pl.dtype), pl.shape).bytes});
  }
}

// Writes every output (atomically each); returns the bytes written.
// Writes one file, or (with a set) each output into the set under its name in the folder.
uint64_t write_outputs(const std::filesystem::path& dir_or_file, detail::OutputSet* set,
                       const std::vector<Output>& outputs, const ImportOptions& options,
                       ImportReport& report) {
  uint64_t total = 0, done = 0;
  for (const Output& o : outputs)
    for (const Job& j : o.jobs) total += j.bytes;
  for (const Output& o : outputs) {
    Writer w = set ? detail::WriterAccess::into_set(*set, dir_or_file / o.name)
                   : Writer::to_file(dir_or_file);
    w.set_metadata("format", "pt");
    for (const auto& [dropped, kept] : o.aliases)
      if (dropped != "format") w.set_metadata(dropped, kept);  // "format" stays "pt"
    for (const Job& j : o.jobs) w.declare(j.plan->name, j.plan->dtype, Shape(j.plan->shape));
    for (const Job& j : o.jobs) {
      write_tensor(w, j);
      done += j.bytes;
      ++report.tensors_written;
      if (options.progress) options.progress(done, total);
    }
    w.commit();
  }
  return done;
}

bool is_side_file(const std::filesystem::path& p) {
  // Config and tokenizer files a model directory carries; never weights or code.
  const std::string name = p.filename().string();
  const std::string ext = p.extension().string();
  if (name == "pytorch_model.bin.index.json" || name == "model.safetensors.index.json") return false;
  return ext == ".json" || ext == ".txt" || ext == ".model" || ext == ".tiktoken" || ext == ".jinja";
}

ImportReport import_directory(const std::filesystem::path& src, const std::filesystem::path& dst,
                              const ImportOptions& options) {
  ImportReport report;
  std::vector<std::string> sources;
  std::optional<detail::ShardIndex> index;
  std::error_code ec;
  if (std::filesystem::exists(src / "pytorch_model.bin.index.json", ec)) {
    index = detail::read_shard_index(src / "pytorch_model.bin.index.json");
    sources = index->files;
  } else if (std::filesystem::exists(src / "pytorch_model.bin", ec)) {
    sources = {"pytorch_model.bin"};
  } else {
    throw_format(Rule::checkpoint, {}, "the directory has neither pytorch_model.bin nor pytorch_model.bin.index.json");
  }
  // Open and plan every source first: nothing is written until all of them check out.
  std::vector<std::unique_ptr<Checkpoint>> checkpoints;
  std::vector<std::vector<Plan>> plans;
  std::vector<Output> outputs;
  std::unordered_map<std::string, std::string> found;  // tensor -> source file
  for (const std::string& file : sources) {
    auto c = std::make_unique<Checkpoint>();
    try {
      open_checkpoint(*c, src / file);
      CheckpointContents contents;
      plans.push_back(plan(*c, options, contents));
      report.contents.dropped_values += contents.dropped_values;
      for (auto& t : contents.tensors) {
        if (!found.emplace(t.name, file).second)
          refuse(t.name, fmt::format("tensor {} is in two shards", quote_name(t.name)));
        report.contents.tensors.push_back(std::move(t));
      }
      for (auto& why : contents.skipped) report.contents.skipped.push_back(std::move(why));
      Output o;
      add_jobs(*c, plans.back(), o.jobs, o.aliases);
      outputs.push_back(std::move(o));
    } catch (const Error& e) {
      throw e.with_source((src / file).string());
    }
    checkpoints.push_back(std::move(c));
  }
  report.contents.format = checkpoints.front()->format;
  if (index) {  // the index must describe the shards (aliases are tensors of their shard)
    const std::string where = (src / "pytorch_model.bin.index.json").string();
    for (const auto& [name, file] : index->weight_map) {
      auto it = found.find(name);
      if (it == found.end() || it->second != file)
        throw Error(ErrorCode::format, Rule::index, name, std::nullopt,
                    fmt::format("tensor {} is listed for {} but {}", quote_name(name), file,
                                it == found.end() ? "no shard holds it" : "is in " + it->second),
                    where);
    }
    if (found.size() != index->weight_map.size())
      for (const auto& [name, file] : found)
        if (!std::binary_search(index->weight_map.begin(), index->weight_map.end(), std::make_pair(name, file)))
          throw Error(ErrorCode::format, Rule::index, name, std::nullopt,
                      fmt::format("tensor {} of {} is not in the index", quote_name(name), file), where);
  }
  // As the source was split, or greedily by --max-size.
  if (options.max_shard_size > 0) {
    std::vector<uint64_t> sizes;
    for (const Output& o : outputs)
      for (const Job& j : o.jobs) sizes.push_back(j.bytes);
    const std::vector<size_t> shard_of = detail::plan_shards(sizes, options.max_shard_size);
    std::vector<Output> split(shard_of.empty() ? 1 : shard_of.back() + 1);
    size_t k = 0;
    for (Output& o : outputs) {
      for (Job& j : o.jobs) split[shard_of[k++]].jobs.push_back(j);
      // Alias records go with the shard of their kept tensor.
      for (auto& a : o.aliases)
        for (Output& s : split)
          if (std::any_of(s.jobs.begin(), s.jobs.end(), [&](const Job& j) { return j.plan->name == a.second; }))
            s.aliases.push_back(a);
    }
    outputs = std::move(split);
  }
  const size_t n = outputs.size();
  for (size_t i = 0; i < n; ++i) outputs[i].name = detail::weights_file_name(i + 1, n);

  std::filesystem::create_directories(dst, ec);
  if (ec) throw_io("cannot create the directory", dst.string(), ec);
  detail::OutputSet set;  // the folder's weights change only once every file is whole
  std::vector<std::string> written;
  report.bytes_written = write_outputs(dst, &set, outputs, options, report);
  for (const Output& o : outputs) written.push_back(o.name);
  if (n > 1) {
    detail::ShardIndex out_index;
    out_index.total_size = report.bytes_written;
    for (const Output& o : outputs) {
      out_index.files.push_back(o.name);
      for (const Job& j : o.jobs) out_index.weight_map.emplace_back(j.plan->name, o.name);
    }
    std::sort(out_index.weight_map.begin(), out_index.weight_map.end());
    set.add_text(dst / detail::kShardIndexFile, detail::shard_index_json(out_index));
    written.push_back(detail::kShardIndexFile);
  }
  for (const auto& entry : std::filesystem::directory_iterator(src)) {
    if (!entry.is_regular_file() || !is_side_file(entry.path())) continue;
    set.add_copy(entry.path(), dst / entry.path().filename());
    written.push_back(entry.path().filename().string());
  }
  detail::publish_weights(set, dst, written);
  return report;
}

}  // namespace

ImportReport import_checkpoint(const std::filesystem::path& src, const std::filesystem::path& dst,
                               const ImportOptions& options) {
  std::error_code ec;
  if (std::filesystem::is_directory(src, ec)) {
    try {
      return import_directory(src, dst, options);
    } catch (const Error& e) {
      throw e.with_source(src.string());
    } catch (const std::filesystem::filesystem_error& e) {
      throw_io(e.what(), dst.string(), e.code());
    }
  }
  if (options.max_shard_size > 0)
    throw_invalid("--max-size splits model directories: give a directory holding pytorch_model.bin");
  Checkpoint c;
  ImportReport report;
  try {
    open_checkpoint(c, src);
    const std::vector<Plan> plans = plan(c, options, report.contents);
    std::vector<Output> outputs(1);
    add_jobs(c, plans, outputs[0].jobs, outputs[0].aliases);
    report.bytes_written = write_outputs(dst, nullptr, outputs, options, report);
    return report;
  } catch (const Error& e) {
    throw e.with_source(src.string());
  }
}

}  // namespace tlio

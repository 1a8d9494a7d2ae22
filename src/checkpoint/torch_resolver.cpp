// checkpoint/torch_resolver.cpp: TorchResolver, which decides what each global of a torch pickle
// means: tensor rebuilds, storages, dtypes, a few containers; refused callables; inert objects
// for the rest.
#include "checkpoint/torch_resolver.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "checkpoint/pickle.hpp"
#include "common/json_text.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {
namespace {

/// Nested _rebuild_from_type_v2 calls followed.
constexpr int kMaxRebuildNesting = 8;

enum class Callable : int64_t {
  unknown,            // an inert class
  rebuild_tensor,     // _rebuild_tensor(storage, offset, size, stride)
  rebuild_tensor_v2,  // (storage, offset, size, stride, requires_grad, hooks[, metadata])
  rebuild_tensor_v3,  // (..., hooks, dtype, metadata)
  rebuild_parameter,  // (data, requires_grad, hooks[, state])
  rebuild_from_type,  // _rebuild_from_type_v2(func, new_type, args, state)
  unsupported_tensor,
  storage_class,  // torch.FloatStorage, torch.UntypedStorage, ...: index in kStorageClasses
  dtype,          // torch.float32, ...: the Dtype
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
    StorageClass{"FloatStorage", Dtype::F32},
    StorageClass{"DoubleStorage", Dtype::F64},
    StorageClass{"HalfStorage", Dtype::F16},
    StorageClass{"BFloat16Storage", Dtype::BF16},
    StorageClass{"LongStorage", Dtype::I64},
    StorageClass{"IntStorage", Dtype::I32},
    StorageClass{"ShortStorage", Dtype::I16},
    StorageClass{"CharStorage", Dtype::I8},
    StorageClass{"ByteStorage", Dtype::U8},
    StorageClass{"BoolStorage", Dtype::BOOL},
    StorageClass{"ComplexFloatStorage", Dtype::C64},
    StorageClass{"UntypedStorage", Dtype::U8},
    StorageClass{"ComplexDoubleStorage", std::nullopt},
    StorageClass{"QInt8Storage", std::nullopt},
    StorageClass{"QUInt8Storage", std::nullopt},
    StorageClass{"QInt32Storage", std::nullopt},
    StorageClass{"QUInt4x2Storage", std::nullopt},
    StorageClass{"QUInt2x4Storage", std::nullopt},
};
constexpr std::array<std::pair<std::string_view, Dtype>, 20> kTorchDtypes = {{
    {"float32", Dtype::F32},         {"float", Dtype::F32},     {"float64", Dtype::F64},
    {"double", Dtype::F64},          {"float16", Dtype::F16},   {"half", Dtype::F16},
    {"bfloat16", Dtype::BF16},       {"int64", Dtype::I64},     {"long", Dtype::I64},
    {"int32", Dtype::I32},           {"int", Dtype::I32},       {"int16", Dtype::I16},
    {"short", Dtype::I16},           {"int8", Dtype::I8},       {"uint8", Dtype::U8},
    {"bool", Dtype::BOOL},           {"complex64", Dtype::C64}, {"float8_e4m3fn", Dtype::F8_E4M3},
    {"float8_e5m2", Dtype::F8_E5M2}, {"uint16", Dtype::U16},
}};

// Modules (and single callables, "numpy.load") torch.load would run code through; naming one
// refuses the file. builtins/__builtin__ are handled apart, by an allowlist.
constexpr std::array kRefusedModules = {"os",
                                        "posix",
                                        "nt",
                                        "subprocess",
                                        "sys",
                                        "importlib",
                                        "runpy",
                                        "shutil",
                                        "socket",
                                        "pickle",
                                        "_pickle",
                                        "cPickle",
                                        "marshal",
                                        "types",
                                        "ctypes",
                                        "_ctypes",
                                        "code",
                                        "codeop",
                                        "pty",
                                        "operator",
                                        "functools",
                                        "io",
                                        "_io",
                                        "posixpath",
                                        "ntpath",
                                        "multiprocessing",
                                        "threading",
                                        "_thread",
                                        "signal",
                                        "asyncio",
                                        "webbrowser",
                                        "pdb",
                                        "bdb",
                                        "tempfile",
                                        "glob",
                                        "pathlib",
                                        "zipimport",
                                        "pkgutil",
                                        "inspect",
                                        "gc",
                                        "site",
                                        "sysconfig",
                                        "platform",
                                        "commands",
                                        "popen2",
                                        "timeit",
                                        "trace",
                                        "cProfile",
                                        "profile",
                                        "urllib",
                                        "http",
                                        "ftplib",
                                        "smtplib",
                                        "telnetlib",
                                        "requests",
                                        "dill",
                                        "joblib",
                                        "torch.hub",
                                        "torch.jit",
                                        "torch._C",
                                        "torch.package",
                                        "torch.serialization",
                                        "numpy.load",
                                        "numpy.lib.npyio",
                                        "copyreg"};
// (A class or function of __main__, such as a model class defined in the saving script, is
// left inert like any other: nothing of it is run, so it is no reason to refuse the file.)
// builtins/__builtin__ names that only build containers or values; any other builtin is refused.
constexpr std::array kHarmlessBuiltins = {"set",       "frozenset", "list",    "tuple", "dict",
                                          "bytearray", "bytes",     "complex", "slice", "range",
                                          "int",       "float",     "str",     "bool",  "object"};

bool in_module(std::string_view module, std::string_view root) {
  return module == root || (module.size() > root.size() && module.substr(0, root.size()) == root &&
                            module[root.size()] == '.');
}

}  // namespace

std::optional<Dtype> torch_dtype_named(std::string_view name) {
  for (const auto& [n, d] : kTorchDtypes)
    if (name == n) return d;
  return std::nullopt;
}

ValueId TorchResolver::global(Pickle& p, std::string_view module, std::string_view name) {
  const std::string full = fmt::format("{}.{}", module, name);
  auto tagged = [&](Callable c, int64_t extra = 0) {
    ValueId v = p.make_text(PyKind::global, full);
    p[v].integer = static_cast<int64_t>(c) | (extra << 8);
    return v;
  };
  if (module == "builtins" || module == "__builtin__") {
    if (std::find(kHarmlessBuiltins.begin(), kHarmlessBuiltins.end(), name) ==
        kHarmlessBuiltins.end())
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
  if (module == "torch._tensor" && name == "_rebuild_from_type_v2")
    return tagged(Callable::rebuild_from_type);
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

ValueId TorchResolver::call(Pickle& p, ValueId callable, ValueId args) {
  return call(p, callable, args, 0);
}

ValueId TorchResolver::persistent(Pickle& p, ValueId pid) {
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
    throw_format(
        Rule::pickle, {},
        fmt::format("a storage of unknown type {}", cls.kind == PyKind::global ? cls.text : "?"));
  const StorageClass& sc = kStorageClasses[named_of(cls)];
  const std::string key = text_or_int(p, f[2], "a storage key");
  const int64_t numel = integer(p, f[4], "a storage size");
  if (numel < 0)
    throw_format(Rule::checkpoint, {},
                 fmt::format("storage {} has a negative size", quote_name(key)));
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
    if (offset < 0 || size < 0)
      throw_format(Rule::checkpoint, {}, "a storage view with a negative offset or size");
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

void TorchResolver::refused(const std::string& full) {
  throw_format(Rule::pickle, {},
               fmt::format("refuses {}: torch.load would run it (tlio never runs a pickle)", full));
}

bool TorchResolver::is_text(const Pickle& p, ValueId v, std::string_view s) {
  return p[v].kind == PyKind::text && p[v].text == s;
}

int64_t TorchResolver::integer(const Pickle& p, ValueId v, const char* what) {
  if (p[v].kind != PyKind::integer && p[v].kind != PyKind::boolean)
    throw_format(Rule::pickle, {}, fmt::format("{} is not an integer", what));
  return p[v].integer;
}

std::string TorchResolver::text_or_int(const Pickle& p, ValueId v, const char* what) {
  if (p[v].kind == PyKind::text) return p[v].text;
  if (p[v].kind == PyKind::integer) return std::to_string(p[v].integer);
  throw_format(Rule::pickle, {}, fmt::format("{} is not a string", what));
}

std::vector<int64_t> TorchResolver::int_tuple(const Pickle& p, ValueId v, const char* what) {
  if (p[v].kind != PyKind::tuple && p[v].kind != PyKind::list)
    throw_format(Rule::pickle, {}, fmt::format("{} is not a tuple", what));
  std::vector<int64_t> out;
  for (ValueId i : p[v].items) out.push_back(integer(p, i, what));
  return out;
}

ValueId TorchResolver::tensor_value(Pickle& p, size_t index) {
  ValueId v = p.make(PyKind::resolved);
  p[v].integer = static_cast<int64_t>(index);
  p[v].text = "tensor";
  return v;
}

ValueId TorchResolver::unsupported(Pickle& p, std::string why) {
  tensors.push_back({SIZE_MAX, std::nullopt, 0, {}, {}, std::move(why)});
  return tensor_value(p, tensors.size() - 1);
}

ValueId TorchResolver::call(Pickle& p, ValueId callable, ValueId args, int nesting) {
  if (p[callable].kind != PyKind::global) return p.object(callable, args);
  const Callable kind = callable_of(p[callable]);
  const std::vector<ValueId> a = p[args].items;  // a copy: p may grow below
  switch (kind) {
    case Callable::rebuild_tensor:
    case Callable::rebuild_tensor_v2:
    case Callable::rebuild_tensor_v3: {
      if (a.size() < 4)
        throw_format(Rule::pickle, {},
                     fmt::format("{} with {} arguments", p[callable].text, a.size()));
      const PyValue& s = p[a[0]];
      if (s.kind != PyKind::resolved || s.text != "storage")
        throw_format(Rule::pickle, {},
                     fmt::format("{} of something that is not a storage", p[callable].text));
      TensorRecord t;
      t.storage = static_cast<size_t>(s.integer);
      t.offset = integer(p, a[1], "a storage offset");
      t.size = int_tuple(p, a[2], "a tensor size");
      t.stride = int_tuple(p, a[3], "a tensor stride");
      if (kind == Callable::rebuild_tensor_v3) {
        if (a.size() < 7) throw_format(Rule::pickle, {}, "_rebuild_tensor_v3 without a dtype");
        const PyValue& d = p[a[6]];
        if (d.kind != PyKind::global || callable_of(d) != Callable::dtype)
          return unsupported(p, fmt::format("its dtype {} is not one tlio writes",
                                            d.kind == PyKind::global ? d.text : "?"));
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
      return unsupported(
          p, fmt::format("{} (quantized, sparse, nested or device tensors are not written)",
                         p[callable].text));
    case Callable::ordered_dict: {
      ValueId d = p.make(PyKind::dict);
      if (!a.empty()) {  // OrderedDict([(k, v), ...])
        const std::vector<ValueId> items = p[a[0]].items;
        for (ValueId pair : items) {
          if (p[pair].items.size() != 2)
            throw_format(Rule::pickle, {}, "OrderedDict of something that is not pairs");
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

}  // namespace tlio::detail

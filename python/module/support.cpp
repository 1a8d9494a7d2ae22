// python/module/support.cpp: what the binding files share (python/module/support.hpp).
#include "module/support.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <new>

namespace tlio_py {

thread_local PendingInterrupt t_pending;

bool python_wants_stop(void*) {
  const auto now = std::chrono::steady_clock::now();
  if (now - t_pending.last_asked < std::chrono::milliseconds(50)) return false;
  t_pending.last_asked = now;
  const py::gil_scoped_acquire gil;
  if (PyErr_CheckSignals() == 0) return false;
  PyErr_Fetch(&t_pending.type, &t_pending.value, &t_pending.traceback);
  return true;
}

// The numpy dtype a tensor is exposed as (raw bits for types numpy lacks).
py::dtype numpy_dtype(tlio::Dtype d) {
  using D = tlio::Dtype;
  switch (d) {
    case D::BOOL:
      return py::dtype("bool");
    case D::U8:
      return py::dtype("uint8");
    case D::I8:
      return py::dtype("int8");
    case D::U16:
      return py::dtype("<u2");
    case D::I16:
      return py::dtype("<i2");
    case D::U32:
      return py::dtype("<u4");
    case D::I32:
      return py::dtype("<i4");
    case D::U64:
      return py::dtype("<u8");
    case D::I64:
      return py::dtype("<i8");
    case D::F16:
      return py::dtype("<f2");
    case D::F32:
      return py::dtype("<f4");
    case D::F64:
      return py::dtype("<f8");
    case D::C64:
      return py::dtype("<c8");
    case D::BF16:
      return py::dtype("<u2");  // raw bits
    default:
      return py::dtype("uint8");  // F8_* raw bits; F4/F6 packed bytes
  }
}

// The array shape: the header's, except packed sub-byte types, which are their bytes
// (F4: the last dimension halved; F6: one flat dimension).
std::vector<py::ssize_t> numpy_shape(const tlio::TensorInfo& t) {
  std::vector<py::ssize_t> shape;
  if (tlio::dtype_bits(t.dtype) == 6) return {static_cast<py::ssize_t>(t.byte_size())};
  for (uint64_t d : t.shape) {
    if (d > static_cast<uint64_t>(PTRDIFF_MAX))
      throw py::value_error("tensor \"" + t.name + "\" has a dimension numpy cannot hold (" +
                            std::to_string(d) + ")");
    shape.push_back(static_cast<py::ssize_t>(d));
  }
  if (t.dtype == tlio::Dtype::F4) {
    if (shape.empty())
      shape.push_back(1);
    else if (shape.back() % 2)  // its pairs straddle rows: no array of bytes per row holds it
      throw py::value_error("tensor \"" + t.name + "\" is F4 with an odd last dimension (" +
                            std::to_string(shape.back()) +
                            "): its values do not pack two to a byte row by "
                            "row (safetensors refuses it too); get_slice reads its bytes");
    else
      shape.back() /= 2;
  }
  return shape;
}

// Row-major strides in bytes; zero-size arrays included.
std::vector<py::ssize_t> strides_for(const std::vector<py::ssize_t>& shape, py::ssize_t item) {
  std::vector<py::ssize_t> s(shape.size());
  py::ssize_t acc = item;
  for (size_t i = shape.size(); i-- > 0;) {
    s[i] = acc;
    acc *= std::max<py::ssize_t>(shape[i], 1);
  }
  return s;
}

// numpy asks for huge pages (MADV_HUGEPAGE) for every array of 4 MiB or more. Faulting them in
// took 5x the system time of 4 KiB pages on the VM of docs/benchmarks.md (2 GiB: up to 6.5 s
// against 1.3 s), so arrays tlio fills get the mapping torch's tensors get: one that asks for
// nothing. Below numpy's threshold numpy's allocator is used.
py::array fresh_array(py::dtype dt, const std::vector<py::ssize_t>& shape) {
  constexpr size_t kOwnMappingFrom = size_t{4} << 20;
  size_t bytes = static_cast<size_t>(dt.itemsize());
  for (py::ssize_t n : shape)
    if (n < 0 || __builtin_mul_overflow(bytes, static_cast<size_t>(n), &bytes))
      throw py::value_error("array size out of range");
  if (bytes < kOwnMappingFrom) return py::array(dt, shape);
  struct Mapping {  // owned by the array's base capsule
    explicit Mapping(size_t size)
        : p(mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)),
          bytes(size) {
      if (p == MAP_FAILED) throw std::bad_alloc();
    }
    Mapping(const Mapping&) = delete;
    Mapping& operator=(const Mapping&) = delete;
    ~Mapping() { munmap(p, bytes); }
    void* const p;
    const size_t bytes;
  };
  auto mapping = std::make_unique<Mapping>(bytes);
  void* const p = mapping->p;
  py::capsule base(mapping.get(), [](void* m) { delete static_cast<Mapping*>(m); });
  mapping.release();  // the capsule owns it now
  return py::array(dt, shape, strides_for(shape, dt.itemsize()), p, base);
}

// A tensor as a numpy array over the File's bytes (zero-copy with the mmap backends): read-only,
// or writable when asked (files opened "private" or "pread", whose bytes are this process's own).
py::array view_array(const std::shared_ptr<tlio::File>& file, const std::string& name,
                     bool writable) {
  const tlio::TensorInfo& t = file->header().at(name);
  tlio::TensorView v = [&] {
    LongCall call;  // a remote file's view is fetched now
    return file->view(name);
  }();
  auto shape = numpy_shape(t);
  py::dtype dt = numpy_dtype(t.dtype);
  auto strides = strides_for(shape, dt.itemsize());
  void* data = writable ? static_cast<void*>(v.writable_bytes().data())
                        : const_cast<std::byte*>(v.bytes().data());
  // The array's base owns a copy of the view (which keeps the mapping alive).
  auto* keep = new tlio::TensorView(v);
  py::capsule base(keep, [](void* p) { delete static_cast<tlio::TensorView*>(p); });
  py::array a(dt, shape, strides, data, base);
  if (!writable) a.attr("setflags")(py::arg("write") = false);
  return a;
}

// A tensor converted to F32/F64/F16 (a new array).
py::array converted_array(const tlio::File& file, const std::string& name, py::dtype want) {
  const tlio::TensorInfo& t = file.header().at(name);
  tlio::Dtype to;
  if (want.kind() != 'f') throw py::value_error("dtype must be float32, float64 or float16");
  if (want.itemsize() == 4)
    to = tlio::Dtype::F32;
  else if (want.itemsize() == 8)
    to = tlio::Dtype::F64;
  else if (want.itemsize() == 2)
    to = tlio::Dtype::F16;
  else
    throw py::value_error("dtype must be float32, float64 or float16");
  std::vector<py::ssize_t> shape;
  for (uint64_t d : t.shape) shape.push_back(static_cast<py::ssize_t>(d));
  py::array out = fresh_array(want, shape);
  tlio::read_as(file, name, to,
                {static_cast<std::byte*>(out.mutable_data()), static_cast<size_t>(out.nbytes())});
  return out;
}

tlio::Dtype dtype_of_array(const py::array& a, const std::string& name) {
  const char kind = a.dtype().kind();
  const auto size = a.dtype().itemsize();
  using D = tlio::Dtype;
  if (kind == 'b' && size == 1) return D::BOOL;
  if (kind == 'u') return size == 1 ? D::U8 : size == 2 ? D::U16 : size == 4 ? D::U32 : D::U64;
  if (kind == 'i') return size == 1 ? D::I8 : size == 2 ? D::I16 : size == 4 ? D::I32 : D::I64;
  if (kind == 'f') return size == 2 ? D::F16 : size == 4 ? D::F32 : D::F64;
  if (kind == 'c' && size == 8) return D::C64;
  throw py::value_error("tensor \"" + name + "\": numpy dtype " + std::string(py::str(a.dtype())) +
                        " has no safetensors dtype");
}

// `value` as a std::string, or a TypeError naming what it is (a tensor name, a metadata key or
// value) and what was given: never pybind11's "Unable to cast" (which names nothing).
std::string expect_str(py::handle value, const std::string& what) {
  if (!py::isinstance<py::str>(value))
    throw py::type_error(what + " must be str, not " +
                         std::string(py::str(py::type::of(value).attr("__name__"))) + " (" +
                         std::string(py::repr(value)) + ")");
  return value.cast<std::string>();
}

// The dtype `given` names for tensor `tensor` ("F32", "bf16", ...): TypeError when it is not a
// str, ValueError when it names no dtype.
tlio::Dtype named_dtype(py::handle given, const std::string& tensor) {
  const std::string text = expect_str(given, "dtype of tensor \"" + tensor + "\"");
  const std::optional<tlio::Dtype> d = tlio::parse_dtype_alias(text);
  if (!d) throw py::value_error("tensor \"" + tensor + "\": unknown dtype \"" + text + "\"");
  return *d;
}

// The {str: str} metadata dict (None: none) into the writer; TypeError for anything else.
void set_metadata(tlio::Writer& w, const py::object& metadata) {
  if (metadata.is_none()) return;
  if (!py::isinstance<py::dict>(metadata))
    throw py::type_error("metadata must be a dict of str to str, not " +
                         std::string(py::str(py::type::of(metadata).attr("__name__"))));
  for (auto kv : metadata.cast<py::dict>()) {
    std::string key = expect_str(kv.first, "metadata key");
    w.set_metadata(key, expect_str(kv.second, "metadata value of \"" + key + "\""));
  }
}

// Writes a {name: array} dict (C-contiguous copies where needed) with a Writer.
void write_dict(tlio::Writer& w, const py::dict& tensors, const py::object& metadata,
                const py::dict& dtypes) {
  set_metadata(w, metadata);
  std::vector<std::pair<std::string, py::array>> arrays;
  for (auto kv : tensors) {
    std::string name = expect_str(kv.first, "tensor name");
    py::array a = py::array::ensure(kv.second, py::array::c_style | py::array::forcecast);
    if (!a) throw py::value_error("tensor \"" + name + "\" is not an array");
    const tlio::Dtype d = dtypes.contains(name.c_str()) ? named_dtype(dtypes[name.c_str()], name)
                                                        : dtype_of_array(a, name);
    // Big-endian arrays are written as the little-endian bytes of the same values.
    if (a.dtype().attr("byteorder").cast<std::string>() == ">")
      a = a.attr("astype")(a.dtype().attr("newbyteorder")("<"));
    tlio::Shape shape;
    for (py::ssize_t i = 0; i < a.ndim(); ++i) shape.push_back(static_cast<uint64_t>(a.shape(i)));
    w.declare(name, d, shape);
    arrays.emplace_back(std::move(name), std::move(a));
  }
  LongCall call;  // the arrays are held above; no Python below
  for (auto& [name, a] : arrays)
    w.write(name, {static_cast<const std::byte*>(a.data()), static_cast<size_t>(a.nbytes())});
  w.commit();
}

// serialize()/serialize_file(): items are (name, dtype name, shape, data), data a bytes-like
// object or, as the safetensors package's TensorSpec gives it, (address, length) of memory the
// caller keeps alive. Returns the file bytes, or writes `path` when it is not None.
py::object serialize_items(const py::list& items, const py::object& metadata,
                           const py::object& path) {
  tlio::Writer w = path.is_none() ? tlio::Writer::to_memory()
                                  : tlio::Writer::to_file(path.cast<std::filesystem::path>());
  set_metadata(w, metadata);
  struct Bytes {
    std::string name;
    const std::byte* data;
    size_t size;
  };
  std::vector<Bytes> bytes;
  std::vector<py::buffer_info> held;  // buffers stay acquired until the bytes are written
  held.reserve(items.size());
  for (auto item : items) {
    auto t = item.cast<py::tuple>();
    auto name = expect_str(t[0], "tensor name");
    const tlio::Dtype d = named_dtype(t[1], name);
    tlio::Shape shape;
    for (auto dim : t[2].cast<py::sequence>()) shape.push_back(dim.cast<uint64_t>());
    w.declare(name, d, shape);
    if (py::isinstance<py::tuple>(t[3])) {
      auto raw = t[3].cast<py::tuple>();
      bytes.push_back({std::move(name),
                       reinterpret_cast<const std::byte*>(raw[0].cast<uintptr_t>()),
                       raw[1].cast<size_t>()});
    } else {
      held.push_back(t[3].cast<py::buffer>().request());
      const py::buffer_info& b = held.back();
      bytes.push_back({std::move(name), static_cast<const std::byte*>(b.ptr),
                       static_cast<size_t>(b.size * b.itemsize)});
    }
  }
  {
    LongCall call;
    for (const Bytes& b : bytes) w.write(b.name, {b.data, b.size});
    w.commit();
  }
  if (!path.is_none()) return py::none();
  auto out = w.take_bytes();
  return py::bytes(reinterpret_cast<const char*>(out.data()), out.size());
}

// What a checkpoint holds, as plain Python values.
py::dict checkpoint_dict(const tlio::CheckpointContents& c) {
  py::list tensors;
  for (const auto& t : c.tensors) {
    py::dict d;
    d["name"] = t.name;
    d["dtype"] = std::string(tlio::dtype_name(t.dtype));
    d["shape"] = t.shape.to_vector();
    d["contiguous"] = t.contiguous;
    d["alias_of"] = t.alias_of.empty() ? py::object(py::none()) : py::cast(t.alias_of);
    if (t.chunks) d["chunks"] = t.chunks;  // a DCP checkpoint's
    tensors.append(d);
  }
  py::dict d;
  d["format"] = c.format;
  d["tensors"] = tensors;
  d["dropped_values"] = c.dropped_values;
  py::list dropped;
  for (const tlio::DroppedValue& v : c.dropped) dropped.append(py::make_tuple(v.path, v.kind));
  d["dropped"] = dropped;
  d["skipped"] = c.skipped;
  d["chosen_key"] =
      c.chosen_key.empty() ? py::object(py::none()) : py::object(py::str(c.chosen_key));
  return d;
}

// A message as a Python str, bytes that are not UTF-8 (file names) as os.fsdecode keeps them.
py::str lossless_text(std::string_view s) {
  return py::reinterpret_steal<py::str>(
      PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "surrogateescape"));
}

tlio::FolderOptions folder_options(uint64_t max_size, const tlio::FolderJob* job) {
  tlio::FolderOptions o;
  o.max_shard_size = max_size;
  o.job = job;
  return o;
}

JobStep::JobStep(const std::string& id, const std::string& step) {
  if (id.empty()) return;
  job_ = tlio::parse_job_step(id, step);  // a bad id or step: ValueError
  job_.units = &units_;
}

}  // namespace tlio_py

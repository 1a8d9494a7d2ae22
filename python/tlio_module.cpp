// python/tlio_module.cpp: the compiled part of the Python module (imported as tlio._tlio; the
// safetensors-style API is in tlio/__init__.py). Tensors come back as read-only numpy arrays
// viewing the mapped file: each array holds a reference to the file, so the mapping lives as
// long as any array of it.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <chrono>
#include <cstring>
#include <exception>

#include "tlio/tlio.hpp"

namespace py = pybind11;

namespace {

// Ctrl-C during a call that let go of the GIL: the library asks this now and then on the
// calling thread; at most every 50 ms it takes the GIL to let Python run its signal handlers.
// An exception they raise (KeyboardInterrupt) is kept here and raised once the call has
// cleaned up and thrown Error{interrupted}.
struct PendingInterrupt {
  std::chrono::steady_clock::time_point last_asked{};
  PyObject* type = nullptr;
  PyObject* value = nullptr;
  PyObject* traceback = nullptr;
};
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

// A long call: the GIL released and Ctrl-C honoured. Only C++ below (no Python objects).
class LongCall {
 public:
  LongCall() : interrupts_(python_wants_stop, nullptr) {}

 private:
  // Destroyed last, with the GIL held again: a stop the call did not act on (it finished
  // first, or the request was swallowed) is handed back to Python's signal machinery, which
  // raises KeyboardInterrupt at its next check; one the call did act on is left for the
  // exception translator.
  struct UnusedStop {
    ~UnusedStop() {
      if (!t_pending.type || std::uncaught_exceptions() > 0) return;
      Py_XDECREF(t_pending.type);
      Py_XDECREF(t_pending.value);
      Py_XDECREF(t_pending.traceback);
      t_pending.type = t_pending.value = t_pending.traceback = nullptr;
      PyErr_SetInterrupt();
    }
  } unused_stop_;
  py::gil_scoped_release release_;
  tlio::InterruptScope interrupts_;
};

// The numpy dtype a tensor is exposed as (raw bits for types numpy lacks).
py::dtype numpy_dtype(tlio::Dtype d) {
  using D = tlio::Dtype;
  switch (d) {
    case D::BOOL: return py::dtype("bool");
    case D::U8: return py::dtype("uint8");
    case D::I8: return py::dtype("int8");
    case D::U16: return py::dtype("<u2");
    case D::I16: return py::dtype("<i2");
    case D::U32: return py::dtype("<u4");
    case D::I32: return py::dtype("<i4");
    case D::U64: return py::dtype("<u8");
    case D::I64: return py::dtype("<i8");
    case D::F16: return py::dtype("<f2");
    case D::F32: return py::dtype("<f4");
    case D::F64: return py::dtype("<f8");
    case D::C64: return py::dtype("<c8");
    case D::BF16: return py::dtype("<u2");  // raw bits
    default: return py::dtype("uint8");     // F8_* raw bits; F4/F6 packed bytes
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
    if (shape.empty()) shape.push_back(1);
    else shape.back() /= 2;
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
  if (want.itemsize() == 4) to = tlio::Dtype::F32;
  else if (want.itemsize() == 8) to = tlio::Dtype::F64;
  else if (want.itemsize() == 2) to = tlio::Dtype::F16;
  else throw py::value_error("dtype must be float32, float64 or float16");
  std::vector<py::ssize_t> shape;
  for (uint64_t d : t.shape) shape.push_back(static_cast<py::ssize_t>(d));
  py::array out(want, shape);
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
      bytes.push_back({std::move(name), reinterpret_cast<const std::byte*>(raw[0].cast<uintptr_t>()),
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
  d["chosen_key"] = c.chosen_key.empty() ? py::object(py::none()) : py::object(py::str(c.chosen_key));
  return d;
}

struct QuantizedWeights {
  std::shared_ptr<tlio::File> file;
  std::vector<tlio::QuantizedWeight> weights;
};

}  // namespace

// A message as a Python str, bytes that are not UTF-8 (file names) as os.fsdecode keeps them.
py::str lossless_text(std::string_view s) {
  return py::reinterpret_steal<py::str>(PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "surrogateescape"));
}

// The C++ type behind tlio.VerificationError (never thrown: errors of that code are mapped).
struct VerificationFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

PYBIND11_MODULE(_tlio, m) {
  m.doc() = "tlio: strict, fast safetensors (compiled core)";
  m.attr("__version__") = tlio::version();

  // tlio::Error -> Python by kind, never by message text: invalid files SafetensorError (a
  // ValueError), bad arguments ValueError, unknown names KeyError, I/O OSError(errno, ...) which
  // Python turns into FileNotFoundError, PermissionError, IsADirectoryError, ... by errno.
  static py::exception<tlio::Error> safetensor_error(m, "SafetensorError", PyExc_ValueError);
  // A digest or a signature that does not match (tlio.verify adds the list of problems).
  static py::exception<VerificationFailure> verification_error(m, "VerificationError", PyExc_ValueError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const tlio::Error& e) {
      switch (e.code()) {
        case tlio::ErrorCode::io: {
          const py::object os_error = py::reinterpret_borrow<py::object>(PyExc_OSError);
          const py::object exc = e.os_error() ? os_error(e.os_error().value(), e.what())
                                              : os_error(e.what());
          PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc.ptr())), exc.ptr());
          return;
        }
        case tlio::ErrorCode::format: {
          py::object exc = py::handle(safetensor_error.ptr())(e.what());
          exc.attr("rule") = std::string(e.rule_name());
          exc.attr("tensor") = e.tensor().empty() ? py::none() : py::cast(e.tensor());
          exc.attr("offset") = e.offset() ? py::cast(*e.offset()) : py::none();
          PyErr_SetObject(safetensor_error.ptr(), exc.ptr());
          return;
        }
        case tlio::ErrorCode::not_found: PyErr_SetString(PyExc_KeyError, e.what()); return;
        case tlio::ErrorCode::out_of_memory: PyErr_SetString(PyExc_MemoryError, e.what()); return;
        case tlio::ErrorCode::interrupted:
          if (t_pending.type) {  // what Python's handler raised, as it raised it
            PyErr_Restore(t_pending.type, t_pending.value, t_pending.traceback);
            t_pending.type = t_pending.value = t_pending.traceback = nullptr;
          } else {
            PyErr_SetNone(PyExc_KeyboardInterrupt);
          }
          return;
        case tlio::ErrorCode::verification: {
          py::object exc = py::handle(verification_error.ptr())(lossless_text(e.what()));
          py::list problems;
          problems.append(lossless_text(e.what()));
          exc.attr("problems") = problems;
          PyErr_SetObject(verification_error.ptr(), exc.ptr());
          return;
        }
        case tlio::ErrorCode::invalid_argument:
        case tlio::ErrorCode::unsupported: PyErr_SetString(PyExc_ValueError, e.what()); return;
      }
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });

  py::class_<tlio::File, std::shared_ptr<tlio::File>>(m, "File")
      .def(py::init([](const std::filesystem::path& p, const std::string& backend, const std::string& token) {
             tlio::OpenOptions o;
             o.token = token;
             // A RuntimeWarning (from whichever thread reads: the GIL is taken for it).
             o.warning = [](std::string_view message) {
               const py::gil_scoped_acquire gil;
               if (PyErr_WarnEx(PyExc_RuntimeWarning, std::string(message).c_str(), 1) != 0)
                 PyErr_Clear();  // warnings turned into errors cannot surface from here
             };
             if (backend == "pread") o.backend = tlio::Backend::pread;
             else if (backend == "private") o.backend = tlio::Backend::mmap_private;
             else if (backend != "mmap")
               throw py::value_error("backend \"" + backend + "\" is not \"mmap\" or \"pread\"");
             LongCall call;  // a URL is fetched now
             return std::make_shared<tlio::File>(tlio::File::open(p, o));
           }),
           py::arg("path"), py::arg("backend") = "mmap", py::arg("token") = "")
      .def_property_readonly("remote", [](const tlio::File& f) { return f.backend() == tlio::Backend::http; })
      .def_static("from_bytes",
                  [](const py::bytes& b) {
                    // One copy, straight from the bytes object into the File's buffer.
                    char* data = nullptr;
                    Py_ssize_t size = 0;
                    if (PyBytes_AsStringAndSize(b.ptr(), &data, &size) != 0) throw py::error_already_set();
                    std::vector<std::byte> v(static_cast<size_t>(size));
                    if (size != 0) std::memcpy(v.data(), data, v.size());
                    return std::make_shared<tlio::File>(tlio::File::from_bytes(std::move(v), "<bytes>"));
                  })
      .def("keys",
           [](const tlio::File& f) {
             std::vector<std::string> k;
             for (auto n : f.header().sorted_names()) k.emplace_back(n);
             return k;
           })
      .def("offset_keys",
           [](const tlio::File& f) {
             std::vector<std::string> k;
             for (const auto& t : f.tensors()) k.push_back(t.name);
             return k;
           })
      .def("metadata",
           [](const tlio::File& f) -> py::object {
             if (!f.header().has_metadata()) return py::none();
             py::dict d;
             for (const auto& [k, v] : f.metadata()) d[py::str(k)] = py::str(v);
             return d;
           })
      .def("dtype", [](const tlio::File& f, const std::string& n) {
        return std::string(tlio::dtype_name(f.header().at(n).dtype));
      })
      .def("shape", [](const tlio::File& f, const std::string& n) {
        return f.header().at(n).shape.to_vector();
      })
      .def("array",
           [](const std::shared_ptr<tlio::File>& f, const std::string& n, bool writable) {
             return view_array(f, n, writable);
           },
           py::arg("name"), py::arg("writable") = false)
      .def("copy",
           [](const tlio::File& f, const std::string& n) {
             // A writable copy made by tlio's streaming copy (fast for large tensors).
             const tlio::TensorInfo& t = f.header().at(n);
             auto shape = numpy_shape(t);
             py::array out(numpy_dtype(t.dtype), shape);
             const std::span<std::byte> dst(static_cast<std::byte*>(out.mutable_data()), static_cast<size_t>(out.nbytes()));
             {
               LongCall call;
               f.read(n, dst);
             }
             return out;
           })
      .def("read_into",
           [](const tlio::File& f, const std::string& n, py::array out) {
             const tlio::TensorInfo& t = f.header().at(n);
             if (!(out.flags() & py::array::c_style) || !out.writeable())
               throw py::value_error("out must be a writable C-contiguous array");
             if (static_cast<uint64_t>(out.nbytes()) != t.byte_size() ||
                 out.dtype().itemsize() != numpy_dtype(t.dtype).itemsize())
               throw py::value_error("out does not match tensor " + std::string(py::repr(py::str(n))) + " (" +
                                     std::to_string(t.byte_size()) + " bytes of " +
                                     std::string(tlio::dtype_name(t.dtype)) + ")");
             const std::span<std::byte> dst(static_cast<std::byte*>(out.mutable_data()), static_cast<size_t>(out.nbytes()));
             {
               LongCall call;
               f.read(n, dst);
             }
             return out;
           })
      .def("copies",
           [](const tlio::File& f, const std::vector<std::string>& names) {
             // Writable copies of several tensors read at once (from a URL: few requests,
             // several in flight).
             std::vector<py::array> arrays;
             std::vector<tlio::TensorTarget> targets;
             for (const std::string& n : names) {
               const tlio::TensorInfo& t = f.header().at(n);
               py::array out(numpy_dtype(t.dtype), numpy_shape(t));
               targets.push_back({t.name, {static_cast<std::byte*>(out.mutable_data()), static_cast<size_t>(out.nbytes())}});
               arrays.push_back(std::move(out));
             }
             LongCall call;
             f.read_many(targets);
             return arrays;
           })
      .def("read_many",
           [](const tlio::File& f, const std::vector<std::tuple<std::string, uintptr_t, size_t>>& targets) {
             // (name, address, bytes) of memory the caller keeps alive (torch parameters).
             std::vector<tlio::TensorTarget> t;
             t.reserve(targets.size());
             for (const auto& [name, address, size] : targets)
               t.push_back({name, {reinterpret_cast<std::byte*>(address), size}});
             LongCall call;
             f.read_many(t);
           })
      .def("converted", [](const tlio::File& f, const std::string& n, py::dtype d) {
        return converted_array(f, n, d);
      });

  // The quantized weights of one file, found once (detection checks every weight): safe_open
  // makes one on first use, so get_dequantized costs one weight, not one detection per call.
  py::class_<QuantizedWeights>(m, "QuantizedWeights")
      .def(py::init([](std::shared_ptr<tlio::File> f) {
        QuantizedWeights q{f, tlio::find_quantized_weights(*f)};
        return q;
      }))
      .def("list", [](const QuantizedWeights& q) {
        py::list out;
        for (const auto& w : q.weights) {
          py::dict d;
          d["name"] = w.name;
          d["scheme"] = w.scheme.name();
          d["shape"] = w.shape.to_vector();
          d["dtype"] = std::string(tlio::dtype_name(w.dtype));
          d["blocksize"] = w.scheme.block();
          d["nested"] = w.scheme.nested();
          d["stored"] = w.stored;
          out.append(d);
        }
        return out;
      })
      .def("dequantized", [](const QuantizedWeights& q, const std::string& name,
                             const std::string& dtype) {
        auto it = std::find_if(q.weights.begin(), q.weights.end(),
                               [&](const tlio::QuantizedWeight& w) { return w.name == name; });
        if (it == q.weights.end())
          throw tlio::Error(tlio::ErrorCode::not_found, tlio::Rule::none, name, std::nullopt,
                            "no quantized weight named " + std::string(py::repr(py::str(name))),
                            q.file->name());
        const tlio::QuantizedReader r(*q.file, *it);
        tlio::Dtype to = r.weight().dtype;
        if (!dtype.empty()) {
          auto d = tlio::parse_dtype_alias(dtype);
          if (!d) throw py::value_error("unknown dtype '" + dtype + "'");
          to = *d;
        }
        std::vector<py::ssize_t> shape;
        for (uint64_t d : r.weight().shape) shape.push_back(static_cast<py::ssize_t>(d));
        py::array out(numpy_dtype(to), shape);
        r.read(0, r.element_count(), to,
               {static_cast<std::byte*>(out.mutable_data()), static_cast<size_t>(out.nbytes())});
        return out;
      });

  // A read plan (tlio.numpy/tlio.torch load_sharded and load_distributed build on it).
  // Buffers are (address, bytes) of memory the caller keeps alive: numpy arrays or torch tensors.
  py::class_<tlio::ReadPlan>(m, "ReadPlan")
      .def(py::init([](const std::string& source, uint64_t max_inflight_bytes, int64_t max_gap,
                       bool keep_packed, const std::string& token) {
             tlio::ReadPlanOptions o;
             o.max_inflight_bytes = max_inflight_bytes;
             if (max_gap >= 0) o.max_gap = static_cast<uint64_t>(max_gap);
             o.keep_packed = keep_packed;
             o.open.token = token;
             LongCall call;  // a URL's headers are fetched now
             return tlio::ReadPlan::open(source, std::move(o));
           }),
           py::arg("source"), py::arg("max_inflight_bytes") = uint64_t{64} << 20,
           py::arg("max_gap") = -1, py::arg("keep_packed") = false, py::arg("token") = "")
      .def_property_readonly("name", &tlio::ReadPlan::name)
      .def_property_readonly("file_names", &tlio::ReadPlan::file_names)
      .def("tensors",
           [](const tlio::ReadPlan& p) {
             py::list out;
             for (const tlio::PlanTensor& t : p.tensors())
               out.append(py::make_tuple(t.name, t.shape.to_vector(), std::string(tlio::dtype_name(t.dtype)),
                                         t.quantized));
             return out;
           })
      .def("add",
           [](tlio::ReadPlan& p, const std::string& name,
              const std::vector<std::tuple<uint64_t, uint64_t, bool>>& slice, const std::string& dtype) {
             // (start, stop, is_index) per dimension, already normalised by the package.
             std::vector<tlio::SliceIndex> indices;
             for (const auto& [start, stop, index] : slice)
               indices.push_back(index ? tlio::SliceIndex::at(start) : tlio::SliceIndex::range(start, stop));
             std::optional<tlio::Dtype> as;
             if (!dtype.empty()) {
               as = tlio::parse_dtype_alias(dtype);
               if (!as) throw py::value_error("unknown dtype '" + dtype + "'");
             }
             const size_t i = p.add(name, indices, as);
             const tlio::PlanItem& item = p.items()[i];
             return py::make_tuple(i, item.shape, std::string(tlio::dtype_name(item.dtype)), item.byte_size);
           },
           py::arg("name"), py::arg("slice"), py::arg("dtype") = "")
      .def("set_destination",
           [](tlio::ReadPlan& p, size_t item, uintptr_t address, size_t size) {
             p.set_destination(item, {reinterpret_cast<std::byte*>(address), size});
           })
      .def("reads",
           [](const tlio::ReadPlan& p) {
             std::vector<std::tuple<size_t, uint64_t, uint64_t>> out;
             for (const tlio::PlannedRead& r : p.reads()) out.emplace_back(r.file, r.offset, r.length);
             return out;
           })
      .def("wanted",
           [](const tlio::ReadPlan& p) {
             std::vector<std::tuple<size_t, uint64_t, uint64_t>> out;
             for (const tlio::PlannedRead& r : p.wanted()) out.emplace_back(r.file, r.offset, r.length);
             return out;
           })
      .def("wanted_bytes", &tlio::ReadPlan::wanted_bytes)
      .def("execute",
           [](tlio::ReadPlan& p) {
             LongCall call;
             p.execute();
           })
      .def("deliver",
           [](tlio::ReadPlan& p, size_t file, uint64_t offset, uintptr_t address, size_t size) {
             LongCall call;
             p.deliver(file, offset, {reinterpret_cast<const std::byte*>(address), size});
           })
      .def("finish",
           [](tlio::ReadPlan& p) {
             LongCall call;
             p.finish();
           })
      .def("read_data", [](const tlio::ReadPlan& p, size_t file, uint64_t offset, uintptr_t address,
                           size_t size) {
        LongCall call;
        p.read_data(file, offset, {reinterpret_cast<std::byte*>(address), size});
      });

  m.def("save_file", [](const py::dict& tensors, const std::filesystem::path& path,
                        const py::object& metadata, const py::dict& dtypes) {
    tlio::Writer w = tlio::Writer::to_file(path);
    write_dict(w, tensors, metadata, dtypes);
  }, py::arg("tensors"), py::arg("path"), py::arg("metadata") = py::none(), py::arg("dtypes") = py::dict());
  m.def("save", [](const py::dict& tensors, const py::object& metadata, const py::dict& dtypes) {
    tlio::Writer w = tlio::Writer::to_memory();
    write_dict(w, tensors, metadata, dtypes);
    auto bytes = w.take_bytes();
    return py::bytes(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  }, py::arg("tensors"), py::arg("metadata") = py::none(), py::arg("dtypes") = py::dict());
  m.def("serialize_items", &serialize_items, py::arg("items"), py::arg("metadata"),
        py::arg("path"));
  m.def("dtype_name", [](const std::string& name) {
    const std::optional<tlio::Dtype> d = tlio::parse_dtype_alias(name);
    if (!d) throw py::value_error("unknown dtype \"" + name + "\"");
    return std::string(tlio::dtype_name(*d));
  });
  m.def("parse_size", [](const std::string& text) { return tlio::parse_size(text); });
  m.def("read_checkpoint", [](const std::filesystem::path& src, const std::string& key) {
    tlio::ImportOptions o;
    o.key = key;
    tlio::CheckpointContents c;
    {
      LongCall call;
      c = tlio::read_checkpoint(src, o);
    }
    return checkpoint_dict(c);
  }, py::arg("src"), py::arg("key") = "");
  m.def("import_checkpoint", [](const std::filesystem::path& src, const std::filesystem::path& dst,
                                const std::string& key, bool skip_unsupported, uint64_t max_size,
                                bool allow_empty, bool import_all) {
    tlio::ImportOptions o;
    o.key = key;
    o.skip_unsupported = skip_unsupported;
    o.max_shard_size = max_size;
    o.allow_empty = allow_empty;
    o.import_all = import_all;
    tlio::ImportReport r;
    {
      LongCall call;  // a whole file: let other threads run
      r = tlio::import_checkpoint(src, dst, o);
    }
    py::dict d = checkpoint_dict(r.contents);
    d["tensors_written"] = r.tensors_written;
    d["bytes_written"] = r.bytes_written;
    return d;
  }, py::arg("src"), py::arg("dst"), py::arg("key") = "", py::arg("skip_unsupported") = false,
     py::arg("max_size") = 0, py::arg("allow_empty") = false, py::arg("import_all") = false);
  m.def("hash_file", [](const std::string& location, const std::string& token) {
    tlio::HashOptions o;
    o.open.token = token;
    LongCall call;  // a whole file: let other threads run
    return tlio::hash_file(location, o).sha256;
  }, py::arg("location"), py::arg("token") = "");
  m.def("file_sha256", [](const tlio::File& f, const std::string& expected) {
    LongCall call;
    return expected.empty() ? tlio::hash_file(f).sha256 : tlio::check_sha256(f, expected).sha256;
  }, py::arg("file"), py::arg("expected") = "");
  m.def("sign_folder", [](const std::string& folder, const std::string& key, const std::string& signature,
                          const std::vector<std::string>& ignore_paths) {
    tlio::SignOptions o;
    o.signature = signature;
    o.ignore_paths = ignore_paths;
    LongCall call;
    return tlio::sign_folder(folder, key, o);
  }, py::arg("folder"), py::arg("key"), py::arg("signature") = "", py::arg("ignore_paths") = std::vector<std::string>{});
  m.def("check_signature", [](const std::string& folder, const std::string& key, const std::string& signature,
                              const std::vector<std::string>& ignore_paths) {
    tlio::VerifyOptions o;
    o.signature = signature;
    o.ignore_paths = ignore_paths;
    tlio::SignatureCheck c;
    {
      LongCall call;
      c = tlio::check_signature(folder, key, o);
    }
    py::dict d;
    py::list problems;  // file names need not be UTF-8
    for (const std::string& p : c.problems) problems.append(lossless_text(p));
    d["problems"] = problems;
    d["files"] = c.files;
    d["key_hint"] = c.key_hint;
    return d;
  }, py::arg("folder"), py::arg("key"), py::arg("signature") = "", py::arg("ignore_paths") = std::vector<std::string>{});
  m.def("convert_file", [](const std::filesystem::path& in, const std::filesystem::path& out,
                           const std::string& dtype, const std::string& include,
                           const std::string& exclude) {
    auto d = tlio::parse_dtype_alias(dtype);
    if (!d) throw py::value_error("unknown dtype '" + dtype + "'");
    tlio::ConvertFileOptions o;
    o.dtype = *d;
    o.include = include;
    o.exclude = exclude;
    tlio::ConvertFileReport r;
    {
      LongCall call;
      r = tlio::convert_file(tlio::File::open(in), out, o);
    }
    return py::make_tuple(r.converted, r.kept);
  }, py::arg("src"), py::arg("dst"), py::arg("dtype"), py::arg("include") = "", py::arg("exclude") = "");
  m.def("compare_files", [](const tlio::File& a, const tlio::File& b, double atol, double rtol) {
    tlio::CompareOptions o;
    o.atol = atol;
    o.rtol = rtol;
    tlio::CompareReport r;
    {
      LongCall call;
      r = tlio::compare_files(a, b, o);
    }
    py::list tensors;
    for (const tlio::TensorComparison& c : r.tensors) {
      py::dict d;
      d["name"] = c.name;
      d["a_type"] = c.a_type;
      d["b_type"] = c.b_type;
      d["shape"] = py::tuple(py::cast(std::vector<uint64_t>(c.shape.begin(), c.shape.end())));
      d["elements"] = c.elements;
      d["compared"] = c.compared;
      d["note"] = c.note;
      d["max_abs"] = c.max_abs;
      d["max_rel"] = c.max_rel;
      d["rmse"] = c.rmse;
      d["cosine"] = c.cosine;
      d["outside"] = c.outside;
      d["equal"] = c.equal;
      tensors.append(d);
    }
    py::dict d;
    d["equal"] = r.equal;
    d["only_in_a"] = r.only_in_a;
    d["only_in_b"] = r.only_in_b;
    d["tensors"] = tensors;
    return d;
  });
  m.def("edit_file", [](const std::filesystem::path& src, const std::filesystem::path& dst,
                        const std::map<std::string, std::string>& metadata,
                        const std::vector<std::string>& del, const std::vector<std::string>& keep,
                        const std::vector<std::string>& drop,
                        const std::vector<std::pair<std::string, std::string>>& rename) {
    tlio::EditOptions o;
    o.set_metadata = metadata;
    o.delete_metadata = del;
    o.tensors.keep = keep;
    o.tensors.drop = drop;
    o.tensors.rename = rename;
    tlio::EditReport r;
    {
      LongCall call;
      r = tlio::edit_file(src, dst, o);
    }
    py::dict d;
    d["kept"] = r.kept;
    d["dropped"] = r.dropped;
    d["renamed"] = r.renamed;
    d["in_place"] = r.in_place;
    d["data_bytes"] = r.data_bytes;
    py::dict meta;
    for (const auto& [k, v] : r.metadata) meta[py::str(k)] = py::str(v);
    d["metadata"] = meta;
    return d;
  });
  m.def("quantize_file", [](const std::filesystem::path& in, const std::filesystem::path& out,
                            const std::string& scheme, const std::string& include,
                            const std::string& exclude, std::optional<uint64_t> blocksize,
                            std::optional<bool> nested, std::optional<std::string> storage,
                            bool allow_1d) {
    tlio::QuantizeOptions o;
    o.scheme = tlio::QuantScheme::parse(scheme);
    // Only the options given: one the scheme does not have is a ValueError (as in the CLI).
    if (blocksize) o.scheme.set_option("blocksize", std::to_string(*blocksize));
    if (nested) o.scheme.set_option("nested", *nested ? "true" : "false");
    if (storage) o.scheme.set_option("storage", *storage);
    o.include = include;
    o.exclude = exclude;
    o.allow_1d = allow_1d;
    tlio::QuantizeReport r;
    {
      LongCall call;  // a whole file: let other threads run
      r = tlio::quantize_file(tlio::File::open(in), out, o);
    }
    py::list items;
    for (const auto& i : r.items) {
      py::dict d;
      d["name"] = i.name;
      d["quantized"] = i.quantized;
      d["note"] = i.note;
      d["rmse"] = i.rmse;
      d["max_abs_error"] = i.max_abs_error;
      items.append(d);
    }
    return items;
  }, py::arg("src"), py::arg("dst"), py::arg("scheme"), py::arg("include") = "", py::arg("exclude") = "",
     py::arg("blocksize") = py::none(), py::arg("nested") = py::none(), py::arg("storage") = py::none(),
     py::arg("allow_1d") = false);
  m.def("dequantize_file", [](const std::filesystem::path& in, const std::filesystem::path& out,
                              const std::optional<std::string>& dtype) {
    std::optional<tlio::Dtype> d;
    if (dtype) {
      d = tlio::parse_dtype_alias(*dtype);
      if (!d) throw py::value_error("unknown dtype '" + *dtype + "'");
    }
    LongCall call;
    return tlio::dequantize_file(tlio::File::open(in), out, d).restored;
  }, py::arg("src"), py::arg("dst"), py::arg("dtype") = py::none());
}

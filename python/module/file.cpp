// python/module/file.cpp: tlio.File (tlio/file.hpp): opening, tensors as numpy arrays, slices,
// metadata.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <tuple>

#include "module/support.hpp"

namespace tlio_py {

namespace {

// What tlio.File(path, backend, token) opens with: warnings become RuntimeWarnings.
tlio::OpenOptions open_options(const std::string& backend, const std::string& token) {
  tlio::OpenOptions o;
  o.token = token;
  // A RuntimeWarning (from whichever thread reads: the GIL is taken for it).
  o.warning = [](std::string_view message) {
    const py::gil_scoped_acquire gil;
    if (PyErr_WarnEx(PyExc_RuntimeWarning, std::string(message).c_str(), 1) != 0)
      PyErr_Clear();  // warnings turned into errors cannot surface from here
  };
  if (backend == "pread")
    o.backend = tlio::Backend::pread;
  else if (backend == "direct")
    o.backend = tlio::Backend::direct;
  else if (backend == "private")
    o.backend = tlio::Backend::mmap_private;
  else if (backend != "mmap")
    throw py::value_error("backend \"" + backend + "\" is not \"mmap\", \"pread\" or \"direct\"");
  return o;
}

std::shared_ptr<tlio::File> open_file(const std::filesystem::path& p, const std::string& backend,
                                      const std::string& token) {
  const tlio::OpenOptions o = open_options(backend, token);
  LongCall call;  // a URL is fetched now
  return std::make_shared<tlio::File>(tlio::File::open(p, o));
}

py::array copy_tensor(const tlio::File& f, const std::string& n) {
  // A writable copy made by tlio's streaming copy (fast for large tensors).
  const tlio::TensorInfo& t = f.header().at(n);
  auto shape = numpy_shape(t);
  py::array out = fresh_array(numpy_dtype(t.dtype), shape);
  const std::span<std::byte> dst(static_cast<std::byte*>(out.mutable_data()),
                                 static_cast<size_t>(out.nbytes()));
  {
    LongCall call;
    f.read(n, dst);
  }
  return out;
}

py::array read_into(const tlio::File& f, const std::string& n, py::array out) {
  const tlio::TensorInfo& t = f.header().at(n);
  if (!(out.flags() & py::array::c_style) || !out.writeable())
    throw py::value_error("out must be a writable C-contiguous array");
  if (static_cast<uint64_t>(out.nbytes()) != t.byte_size() ||
      out.dtype().itemsize() != numpy_dtype(t.dtype).itemsize())
    throw py::value_error("out does not match tensor " + std::string(py::repr(py::str(n))) + " (" +
                          std::to_string(t.byte_size()) + " bytes of " +
                          std::string(tlio::dtype_name(t.dtype)) + ")");
  const std::span<std::byte> dst(static_cast<std::byte*>(out.mutable_data()),
                                 static_cast<size_t>(out.nbytes()));
  {
    LongCall call;
    f.read(n, dst);
  }
  return out;
}

// For a direct file: one block for the tensors, placed so that each tensor's address is
// congruent with its file offset modulo a page, so that O_DIRECT reads land in the tensors
// themselves instead of bounce buffers. The tensors are views of it (it lives while one does).
std::vector<py::array> congruent_arrays(const tlio::File& f,
                                        const std::vector<std::string>& names) {
  constexpr uint64_t kPage = 4096;
  uint64_t first = UINT64_MAX, last = 0;
  for (const std::string& n : names) {
    const tlio::TensorInfo& t = f.header().at(n);
    first = std::min(first, t.begin);
    last = std::max(last, t.end);
  }
  if (names.empty()) return {};
  const uint64_t data_start = 8 + f.header_size();
  py::array block =
      fresh_array(py::dtype::of<uint8_t>(), {static_cast<py::ssize_t>(last - first + kPage)});
  auto* const data = static_cast<uint8_t*>(block.mutable_data());
  const auto base = reinterpret_cast<uintptr_t>(data);
  const uint64_t shift = (data_start + first - base) % kPage;  // base + shift ≡ data_start + first
  std::vector<py::array> arrays;
  for (const std::string& n : names) {
    const tlio::TensorInfo& t = f.header().at(n);
    arrays.emplace_back(numpy_dtype(t.dtype), numpy_shape(t), std::vector<py::ssize_t>{},
                        data + shift + (t.begin - first), block);
  }
  return arrays;
}

std::vector<py::array> copy_tensors(const tlio::File& f, const std::vector<std::string>& names) {
  // Writable copies of several tensors read at once (from a URL: few requests,
  // several in flight; direct: 16 reads in flight, straight into them).
  std::vector<py::array> arrays;
  if (f.backend() == tlio::Backend::direct) arrays = congruent_arrays(f, names);
  std::vector<tlio::TensorTarget> targets;
  for (size_t i = 0; i < names.size(); ++i) {
    const tlio::TensorInfo& t = f.header().at(names[i]);
    if (arrays.size() == i) arrays.push_back(fresh_array(numpy_dtype(t.dtype), numpy_shape(t)));
    py::array& out = arrays[i];
    targets.push_back(
        {t.name, {static_cast<std::byte*>(out.mutable_data()), static_cast<size_t>(out.nbytes())}});
  }
  LongCall call;
  f.read_many(targets);
  return arrays;
}

py::array read_slice(const tlio::File& f, const std::string& n,
                     const std::vector<std::tuple<bool, uint64_t, uint64_t>>& index) {
  // (is a single position, start, stop) per leading dimension: only those bytes read.
  const tlio::TensorInfo& t = f.header().at(n);
  std::vector<tlio::SliceIndex> indices;
  for (const auto& [single, start, stop] : index)
    indices.push_back(single ? tlio::SliceIndex::at(start) : tlio::SliceIndex::range(start, stop));
  std::vector<uint64_t> shape;
  std::vector<std::byte> bytes;
  {
    LongCall call;
    bytes = f.read_slice(n, indices, &shape);
  }
  py::array out =
      fresh_array(numpy_dtype(t.dtype), std::vector<py::ssize_t>(shape.begin(), shape.end()));
  if (static_cast<size_t>(out.nbytes()) != bytes.size())
    throw py::value_error("slice of " + std::string(py::repr(py::str(n))) +
                          " has a packed sub-byte type");
  std::memcpy(out.mutable_data(), bytes.data(), bytes.size());
  return out;
}

// The shards of the model folder at `path`, opened and checked against their index (Model::open).
// A model folder's weight files and its quantization_config (JSON text, "" without one).
std::pair<std::vector<std::shared_ptr<tlio::File>>, std::string> open_model_files(
    const std::filesystem::path& path, const std::string& backend, const std::string& token) {
  const tlio::OpenOptions o = open_options(backend, token);
  LongCall call;  // a URL's files are fetched now
  const tlio::Model model = tlio::Model::open(path, o);
  std::vector<std::shared_ptr<tlio::File>> shards;
  for (const tlio::File& f : model.files())
    shards.push_back(std::make_shared<tlio::File>(f.share()));
  return {std::move(shards), model.quantization_config()};
}

}  // namespace

void bind_file(py::module_& m) {
  py::class_<tlio::File, std::shared_ptr<tlio::File>>(m, "File")
      .def(py::init(&open_file), py::arg("path"), py::arg("backend") = "mmap",
           py::arg("token") = "")
      .def_property_readonly("remote",
                             [](const tlio::File& f) { return f.backend() == tlio::Backend::http; })
      .def_property_readonly(
          "direct", [](const tlio::File& f) { return f.backend() == tlio::Backend::direct; })
      .def_property_readonly("name", [](const tlio::File& f) { return f.name(); })
      .def_static(
          "from_bytes",
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
      .def("dtype",
           [](const tlio::File& f, const std::string& n) {
             return std::string(tlio::dtype_name(f.header().at(n).dtype));
           })
      .def("shape", [](const tlio::File& f,
                       const std::string& n) { return f.header().at(n).shape.to_vector(); })
      .def(
          "array",
          [](const std::shared_ptr<tlio::File>& f, const std::string& n, bool writable) {
            if (f->views_in_memory()) return view_array(f, n, writable);
            // A view would copy (pread, direct, a URL): the copy is made into memory that asks
            // for no huge pages (fresh_array) instead of File::view's malloc'd buffer.
            py::array a = copy_tensor(*f, n);
            if (!writable) a.attr("setflags")(py::arg("write") = false);
            return a;
          },
          py::arg("name"), py::arg("writable") = false)
      .def("copy", &copy_tensor)
      .def("read_into", &read_into)
      .def("copies", &copy_tensors)
      .def("read_many",
           [](const tlio::File& f,
              const std::vector<std::tuple<std::string, uintptr_t, size_t>>& targets) {
             // (name, address, bytes) of memory the caller keeps alive (torch parameters).
             std::vector<tlio::TensorTarget> t;
             t.reserve(targets.size());
             for (const auto& [name, address, size] : targets)
               t.push_back({name, {reinterpret_cast<std::byte*>(address), size}});
             LongCall call;
             f.read_many(t);
           })
      .def("in_memory", [](const tlio::File& f) { return !f.mapped_data().empty(); })
      .def("read_slice", &read_slice)
      .def("converted", [](const tlio::File& f, const std::string& n, py::dtype d) {
        return converted_array(f, n, d);
      });
  m.def(
      "fresh_bytes", [](py::ssize_t n) { return fresh_array(py::dtype::of<uint8_t>(), {n}); },
      py::arg("size"),
      "An uninitialised uint8 array for tlio to fill (support.hpp's fresh_array).");
  m.def("open_model_files", &open_model_files, py::arg("path"), py::arg("backend") = "mmap",
        py::arg("token") = "");
  // What a location holds ("safetensors", "model folder", "gguf"): the one sniff,
  // tlio::weights_kind.
  m.def(
      "weights_kind",
      [](const std::string& location, const std::string& token) {
        tlio::OpenOptions o;
        o.token = token;
        LongCall call;  // a URL may take a request
        return std::string(tlio::weights_kind_name(tlio::weights_kind(location, o)));
      },
      py::arg("location"), py::arg("token") = "");
}

}  // namespace tlio_py

// python/module/writer.cpp: writing files from Python (tlio/writer.hpp) and dtype and size names.
#include "module/support.hpp"

namespace tlio_py {

void bind_writer(py::module_& m) {
  m.def(
      "save_file",
      [](const py::dict& tensors, const std::filesystem::path& path, const py::object& metadata,
         const py::dict& dtypes) {
        tlio::Writer w = tlio::Writer::to_file(path);
        write_dict(w, tensors, metadata, dtypes);
      },
      py::arg("tensors"), py::arg("path"), py::arg("metadata") = py::none(),
      py::arg("dtypes") = py::dict());
  m.def(
      "save",
      [](const py::dict& tensors, const py::object& metadata, const py::dict& dtypes) {
        tlio::Writer w = tlio::Writer::to_memory();
        write_dict(w, tensors, metadata, dtypes);
        auto bytes = w.take_bytes();
        return py::bytes(reinterpret_cast<const char*>(bytes.data()), bytes.size());
      },
      py::arg("tensors"), py::arg("metadata") = py::none(), py::arg("dtypes") = py::dict());
  m.def("serialize_items", &serialize_items, py::arg("items"), py::arg("metadata"),
        py::arg("path"));
  m.def("dtype_name", [](const std::string& name) {
    const std::optional<tlio::Dtype> d = tlio::parse_dtype_alias(name);
    if (!d) throw py::value_error("unknown dtype \"" + name + "\"");
    return std::string(tlio::dtype_name(*d));
  });
  m.def("parse_size", [](const std::string& text) { return tlio::parse_size(text); });
}

}  // namespace tlio_py

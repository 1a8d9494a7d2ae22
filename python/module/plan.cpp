// python/module/plan.cpp: tlio.ReadPlan (tlio/read_plan.hpp).
#include "module/support.hpp"

namespace tlio_py {

void bind_plan(py::module_& m) {
  // A read plan (tlio.numpy/tlio.torch load_sharded and load_distributed build on it).
  // Buffers are (address, bytes) of memory the caller keeps alive: numpy arrays or torch tensors.
  py::class_<tlio::ReadPlan>(m, "ReadPlan")
      .def(py::init([](const std::string& source, uint64_t max_inflight_bytes, int64_t max_gap,
                       bool keep_packed, const std::string& token, bool direct) {
             tlio::ReadPlanOptions o;
             o.max_inflight_bytes = max_inflight_bytes;
             if (max_gap >= 0) o.max_gap = static_cast<uint64_t>(max_gap);
             o.keep_packed = keep_packed;
             o.open.token = token;
             if (direct) o.open.backend = tlio::Backend::direct;
             LongCall call;  // a URL's headers are fetched now
             return tlio::ReadPlan::open(source, std::move(o));
           }),
           py::arg("source"), py::arg("max_inflight_bytes") = uint64_t{64} << 20,
           py::arg("max_gap") = -1, py::arg("keep_packed") = false, py::arg("token") = "",
           py::arg("direct") = false)
      .def_property_readonly("name", &tlio::ReadPlan::name)
      .def_property_readonly("file_names", &tlio::ReadPlan::file_names)
      .def("tensors",
           [](const tlio::ReadPlan& p) {
             py::list out;
             for (const tlio::PlanTensor& t : p.tensors())
               out.append(py::make_tuple(t.name, t.shape.to_vector(),
                                         std::string(tlio::dtype_name(t.dtype)), t.quantized));
             return out;
           })
      .def(
          "add",
          [](tlio::ReadPlan& p, const std::string& name,
             const std::vector<std::tuple<uint64_t, uint64_t, bool>>& slice,
             const std::string& dtype) {
            // (start, stop, is_index) per dimension, already normalised by the package.
            std::vector<tlio::SliceIndex> indices;
            for (const auto& [start, stop, index] : slice)
              indices.push_back(index ? tlio::SliceIndex::at(start)
                                      : tlio::SliceIndex::range(start, stop));
            std::optional<tlio::Dtype> as;
            if (!dtype.empty()) {
              as = tlio::parse_dtype_alias(dtype);
              if (!as) throw py::value_error("unknown dtype '" + dtype + "'");
            }
            const size_t i = p.add(name, indices, as);
            const tlio::PlanItem& item = p.items()[i];
            py::object stored = py::none();  // (file, offset) of an item stored as one range
            if (item.stored) stored = py::make_tuple(item.stored->file, item.stored->offset);
            return py::make_tuple(i, item.shape, std::string(tlio::dtype_name(item.dtype)),
                                  item.byte_size, stored);
          },
          py::arg("name"), py::arg("slice"), py::arg("dtype") = "")
      .def("set_destination",
           [](tlio::ReadPlan& p, size_t item, uintptr_t address, size_t size) {
             p.set_destination(item, {reinterpret_cast<std::byte*>(address), size});
           })
      .def("reads",
           [](const tlio::ReadPlan& p) {
             std::vector<std::tuple<size_t, uint64_t, uint64_t>> out;
             for (const tlio::PlannedRead& r : p.reads())
               out.emplace_back(r.file, r.offset, r.length);
             return out;
           })
      .def("wanted",
           [](const tlio::ReadPlan& p) {
             std::vector<std::tuple<size_t, uint64_t, uint64_t>> out;
             for (const tlio::PlannedRead& r : p.wanted())
               out.emplace_back(r.file, r.offset, r.length);
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
}

}  // namespace tlio_py

// python/module/quant.cpp: quantized weights, whole-file quantize and dequantize (tlio/quant.hpp).
#include "module/support.hpp"

namespace tlio_py {

void bind_quant(py::module_& m) {
  // The quantized weights of one file or of a folder's shards, found once (detection checks
  // every weight): safe_open makes one on first use, so get_dequantized costs one weight, not
  // one detection per call.
  py::class_<QuantizedWeights>(m, "QuantizedWeights")
      .def(py::init([](const std::vector<std::shared_ptr<tlio::File>>& files,
                       const std::string& name, const std::string& quantization_config) {
             QuantizedWeights q;
             for (const auto& f : files) q.files.push_back(f->share());
             q.name = name;
             q.weights = tlio::find_quantized_weights(q.files, quantization_config);
             return q;
           }),
           py::arg("files"), py::arg("name"), py::arg("quantization_config") = "")
      .def("list",
           [](const QuantizedWeights& q) {
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
                            q.name);
        const tlio::QuantizedReader r(q.files, *it);
        tlio::Dtype to = r.weight().dtype;
        if (!dtype.empty()) {
          auto d = tlio::parse_dtype_alias(dtype);
          if (!d) throw py::value_error("unknown dtype '" + dtype + "'");
          to = *d;
        }
        std::vector<py::ssize_t> shape;
        for (uint64_t d : r.weight().shape) shape.push_back(static_cast<py::ssize_t>(d));
        py::array out = fresh_array(numpy_dtype(to), shape);
        r.read(0, r.element_count(), to,
               {static_cast<std::byte*>(out.mutable_data()), static_cast<size_t>(out.nbytes())});
        return out;
      });

  m.def(
      "quantize_file",
      [](const std::filesystem::path& in, const std::filesystem::path& out,
         const std::string& scheme, const std::string& include, const std::string& exclude,
         std::optional<uint64_t> blocksize, std::optional<bool> nested,
         std::optional<std::string> storage, bool allow_1d, uint64_t max_size,
         const std::string& job_id, const std::string& job_step) -> py::object {
        const JobStep job(job_id, job_step);
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
          r = tlio::quantize_weights(in.string(), out.string(), o,
                                     folder_options(max_size, job.get()));
        }
        if (job.is_plan()) return py::int_(job.units());
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
      },
      py::arg("src"), py::arg("dst"), py::arg("scheme"), py::arg("include") = "",
      py::arg("exclude") = "", py::arg("blocksize") = py::none(), py::arg("nested") = py::none(),
      py::arg("storage") = py::none(), py::arg("allow_1d") = false, py::arg("max_size") = 0,
      py::arg("job_id") = "", py::arg("job_step") = "");
  m.def(
      "dequantize_file",
      [](const std::filesystem::path& in, const std::filesystem::path& out,
         const std::optional<std::string>& dtype, uint64_t max_size, const std::string& job_id,
         const std::string& job_step) -> py::object {
        const JobStep job(job_id, job_step);
        std::optional<tlio::Dtype> d;
        if (dtype) {
          d = tlio::parse_dtype_alias(*dtype);
          if (!d) throw py::value_error("unknown dtype '" + *dtype + "'");
        }
        size_t restored = 0;
        {
          LongCall call;
          restored = tlio::dequantize_weights(in.string(), out.string(), d, {},
                                              folder_options(max_size, job.get()))
                         .restored;
        }
        return py::int_(job.is_plan() ? job.units() : restored);
      },
      py::arg("src"), py::arg("dst"), py::arg("dtype") = py::none(), py::arg("max_size") = 0,
      py::arg("job_id") = "", py::arg("job_step") = "");
}

}  // namespace tlio_py

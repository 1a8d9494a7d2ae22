// python/module/gguf.cpp: GGUF files (tlio/gguf.hpp): their tensors decoded into new numpy arrays,
// their metadata, and import_gguf. tlio/_gguf.py puts them behind safe_open.
#include <cstring>

#include "module/support.hpp"

namespace tlio_py {

namespace {

const tlio::GgufTensorInfo& tensor_of(const tlio::GgufFile& f, const std::string& name) {
  if (const tlio::GgufTensorInfo* t = f.tensor(name)) return *t;
  throw tlio::Error(tlio::ErrorCode::not_found, tlio::Rule::none, name, std::nullopt,
                    "no tensor named " + std::string(py::repr(py::str(name))), f.name());
}

// The dtype a tensor is read as by default: its own for plain types, F32 for block types.
tlio::Dtype natural_dtype(const tlio::GgufTensorInfo& t) {
  return tlio::ggml_plain_dtype(t.type).value_or(tlio::Dtype::F32);
}

// Element i of GGUF numbers `bytes` of `type` as a Python int, float or bool.
py::object number_object(tlio::GgufValueType type, const std::vector<std::byte>& bytes,
                         uint64_t i) {
  using T = tlio::GgufValueType;
  const auto load = [&](auto v) {
    std::memcpy(&v, bytes.data() + i * sizeof(v), sizeof(v));
    return v;
  };
  switch (type) {
    case T::UINT8:
      return py::int_(load(uint8_t{}));
    case T::INT8:
      return py::int_(load(int8_t{}));
    case T::UINT16:
      return py::int_(load(uint16_t{}));
    case T::INT16:
      return py::int_(load(int16_t{}));
    case T::UINT32:
      return py::int_(load(uint32_t{}));
    case T::INT32:
      return py::int_(load(int32_t{}));
    case T::UINT64:
      return py::int_(load(uint64_t{}));
    case T::INT64:
      return py::int_(load(int64_t{}));
    case T::FLOAT32:
      return py::float_(load(float{}));
    case T::FLOAT64:
      return py::float_(load(double{}));
    default:
      return py::bool_(load(uint8_t{}) != 0);  // BOOL
  }
}

// A GGUF metadata value as Python sees it: int, float, bool, str, or a list of those.
py::object value_object(const tlio::GgufValue& v) {
  using T = tlio::GgufValueType;
  if (v.type == T::STRING) return lossless_text(v.strings.front());
  if (v.type != T::ARRAY) return number_object(v.type, v.bytes, 0);
  py::list out;
  if (v.element_type == T::STRING)
    for (const std::string& s : v.strings) out.append(lossless_text(s));
  else
    for (uint64_t i = 0; i < v.count; ++i) out.append(number_object(v.element_type, v.bytes, i));
  return out;
}

}  // namespace

void bind_gguf(py::module_& m) {
  py::class_<tlio::GgufFile>(m, "GgufFile")
      .def(py::init([](const std::string& location, const std::string& token) {
             tlio::OpenOptions o;
             o.token = token;
             LongCall call;
             return tlio::GgufFile::open(location, o);
           }),
           py::arg("location"), py::arg("token") = "")
      .def_property_readonly("name", &tlio::GgufFile::name)
      .def("offset_keys",
           [](const tlio::GgufFile& f) {
             std::vector<std::string> names;
             for (const auto& t : f.tensors()) names.push_back(t.name);
             return names;
           })
      .def("dtype",
           [](const tlio::GgufFile& f, const std::string& name) {
             return std::string(tlio::dtype_name(natural_dtype(tensor_of(f, name))));
           })
      .def("ggml_type",
           [](const tlio::GgufFile& f, const std::string& name) {
             return std::string(tlio::ggml_type(tensor_of(f, name).type)->name);
           })
      .def("shape", [](const tlio::GgufFile& f,
                       const std::string& name) { return tensor_of(f, name).shape(); })
      .def(
          "values",
          [](const tlio::GgufFile& f, const std::string& name, const std::string& dtype) {
            const tlio::GgufTensorInfo& t = tensor_of(f, name);
            const tlio::Dtype to =
                dtype.empty() ? natural_dtype(t) : named_dtype(py::str(dtype), name);
            std::vector<py::ssize_t> shape;
            for (uint64_t d : t.shape()) shape.push_back(static_cast<py::ssize_t>(d));
            const py::dtype np_type = numpy_dtype(to);
            py::array out = fresh_array(np_type, shape);
            const auto bytes = static_cast<size_t>(out.nbytes());
            auto* data = static_cast<std::byte*>(out.mutable_data());
            {
              LongCall call;
              f.read_values(t, 0, t.element_count(), to, std::span(data, bytes));
            }
            return out;
          },
          py::arg("name"), py::arg("dtype") = "")
      .def(
          "read_slice",
          [](const tlio::GgufFile& f, const std::string& name,
             const std::vector<std::tuple<bool, uint64_t, uint64_t>>& index) {
            // (is a single position, start, stop) per leading dimension: only their blocks read.
            const tlio::GgufTensorInfo& t = tensor_of(f, name);
            std::vector<tlio::SliceIndex> indices;
            for (const auto& [single, start, stop] : index)
              indices.push_back(single ? tlio::SliceIndex::at(start)
                                       : tlio::SliceIndex::range(start, stop));
            const tlio::Dtype to = natural_dtype(t);
            const std::vector<uint64_t> shape = f.plan_slice(t, indices).shape;
            const py::dtype np_type = numpy_dtype(to);
            const std::vector<py::ssize_t> dims(shape.begin(), shape.end());
            py::array out = fresh_array(np_type, dims);
            auto* data = static_cast<std::byte*>(out.mutable_data());
            {
              LongCall call;
              f.read_slice(t, indices, to, std::span(data, static_cast<size_t>(out.nbytes())));
            }
            return out;
          },
          py::arg("name"), py::arg("index"))
      .def("metadata", [](const tlio::GgufFile& f) { return tlio::gguf_scalar_metadata(f); })
      .def("fields", [](const tlio::GgufFile& f) {
        py::dict out;
        for (const tlio::GgufKeyValue& kv : f.metadata())
          out[lossless_text(kv.key)] = value_object(kv.value);
        return out;
      });
  // To a safetensors file, or (model=True) to a Hugging Face folder.
  m.def(
      "import_gguf",
      [](const std::string& src, const std::string& dst, const std::string& dtype,
         const std::string& token, bool model) {
        tlio::OpenOptions open;
        open.token = token;
        tlio::GgufImportOptions o;
        if (!dtype.empty()) o.dtype = named_dtype(py::str(dtype), "");
        tlio::GgufImportReport r;
        {
          LongCall call;
          const tlio::GgufFile f = tlio::GgufFile::open(src, open);
          r = model ? tlio::import_gguf_model(f, dst, o)
                    : tlio::import_gguf(f, std::filesystem::path(dst), o);
        }
        py::dict d;
        if (model) {
          d["files"] = r.files;
          d["tokenizer_note"] = r.tokenizer_note;
        }
        d["tensors"] = r.tensors;
        d["decoded"] = r.decoded;
        d["converted"] = r.converted;
        d["kept"] = r.kept;
        d["metadata_kept"] = r.metadata_kept;
        d["metadata_skipped"] = r.metadata_skipped;
        d["data_bytes_in"] = r.data_bytes_in;
        d["data_bytes_out"] = r.data_bytes_out;
        return d;
      },
      py::arg("src"), py::arg("dst"), py::arg("dtype") = "", py::arg("token") = "",
      py::arg("model") = false);
  m.def(
      "export_gguf",
      [](const std::string& src, const std::string& dst, const std::string& type,
         const std::string& token, uint64_t split_max_size, bool allow_requantize, bool pure) {
        tlio::GgufExportOptions o;
        o.open.token = token;
        o.type = type;
        o.split_max_size = split_max_size;
        o.allow_requantize = allow_requantize;
        o.pure = pure;
        tlio::GgufExportReport r;
        {
          LongCall call;
          r = tlio::export_gguf(src, dst, o);
        }
        py::dict d;
        d["architecture"] = r.architecture;
        d["tensors"] = r.tensors;
        py::dict types;
        for (const auto& [name, n] : r.type_counts) types[py::str(name)] = n;
        d["types"] = types;
        d["fallbacks"] = r.fallbacks;
        d["data_bytes_in"] = r.bytes_in;
        d["bytes_out"] = r.bytes_out;
        d["files"] = r.files;
        return d;
      },
      py::arg("src"), py::arg("dst"), py::arg("type") = "F16", py::arg("token") = "",
      py::arg("split_max_size") = 0, py::arg("allow_requantize") = false, py::arg("pure") = false);
  // tlio/transcode.hpp: a GGUF's weights carried into MLX's layout.
  m.def(
      "transcode",
      [](const std::string& src, const std::string& dst, const std::string& to, bool lossy,
         const std::string& dtype, const std::string& token) {
        tlio::TranscodeOptions o;
        const std::optional<tlio::TranscodeTarget> target = tlio::transcode_target_named(to);
        if (!target) throw py::value_error("transcode: no layout named '" + to + "' (mlx, gguf)");
        o.to = *target;
        o.lossy = lossy;
        if (!dtype.empty()) o.dtype = named_dtype(py::str(dtype), "");
        o.open.token = token;
        tlio::TranscodeReport r;
        {
          LongCall call;
          r = tlio::transcode(src, dst, o);
        }
        py::list weights;
        for (const auto& i : r.items) {
          py::dict w;
          w["name"] = i.name;
          w["source"] = i.source;
          w["target"] = i.target;
          w["scale_dtype"] = std::string(tlio::dtype_name(i.scale_dtype));
          w["exact"] = i.exact;
          w["zero_signs"] = i.zero_signs;
          w["rmse"] = i.rmse;
          w["max_abs_error"] = i.max_abs_error;
          weights.append(w);
        }
        py::dict d;
        d["weights"] = weights;
        d["plain"] = r.plain;
        d["bytes_in"] = r.bytes_in;
        d["bytes_out"] = r.bytes_out;
        d["files"] = r.files;
        return d;
      },
      py::arg("src"), py::arg("dst"), py::arg("to"), py::arg("lossy"), py::arg("dtype"),
      py::arg("token"));
}

}  // namespace tlio_py

// python/module/rewrites.cpp: whole files converted, compared and edited (tlio/convert_file.hpp,
// compare.hpp, edit.hpp).
#include "module/support.hpp"

namespace tlio_py {

namespace {

// A comparison as the dict compare_files returns.
py::dict comparison_dict(const tlio::CompareReport& r) {
  py::list tensors;
  for (const tlio::TensorComparison& c : r.tensors) {
    py::dict d;
    d["name"] = c.name;
    if (!c.b_name.empty()) d["b_name"] = c.b_name;
    d["a_dtype"] = c.a_dtype;
    d["b_dtype"] = c.b_dtype;
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
}

}  // namespace

void bind_rewrites(py::module_& m) {
  m.def(
      "convert_file",
      [](const std::filesystem::path& in, const std::filesystem::path& out,
         const std::string& dtype, const std::string& include, const std::string& exclude,
         uint64_t max_size, bool cast, const std::string& job_id,
         const std::string& job_step) -> py::object {
        const JobStep job(job_id, job_step);
        auto d = tlio::parse_dtype_alias(dtype);
        if (!d) throw py::value_error("unknown dtype '" + dtype + "'");
        tlio::ConvertFileOptions o;
        o.dtype = *d;
        o.include = include;
        o.exclude = exclude;
        o.cast = cast;
        tlio::ConvertFileReport r;
        {
          LongCall call;
          r = tlio::convert_weights(in.string(), out.string(), o,
                                    folder_options(max_size, job.get()));
        }
        if (job.is_plan()) return py::int_(job.units());
        py::dict lost;  // tensor -> (overflowed, flushed)
        for (const tlio::LostValues& l : r.lost)
          lost[py::str(l.tensor)] = py::make_tuple(l.overflowed, l.flushed);
        return py::make_tuple(r.converted, r.kept, lost);
      },
      py::arg("src"), py::arg("dst"), py::arg("dtype"), py::arg("include") = "",
      py::arg("exclude") = "", py::arg("max_size") = 0, py::arg("cast") = false,
      py::arg("job_id") = "", py::arg("job_step") = "");
  // Any two inputs by location (files, folders, GGUF files), paired as tlio::compare_weights does.
  m.def("compare_locations", [](const std::string& a, const std::string& b, double atol,
                                double rtol, const std::string& filter, const std::string& token) {
    tlio::CompareOptions o;
    o.atol = atol;
    o.rtol = rtol;
    o.filter = filter;
    tlio::OpenOptions how;
    how.token = token;
    tlio::CompareReport r;
    {
      LongCall call;
      r = tlio::compare_weights(*tlio::Weights::open(a, how), *tlio::Weights::open(b, how), o);
    }
    return comparison_dict(r);
  });
  m.def("edit_file",
        [](const std::filesystem::path& src, const std::filesystem::path& dst,
           const std::map<std::string, std::string>& metadata, const std::vector<std::string>& del,
           const std::vector<std::string>& keep, const std::vector<std::string>& drop,
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
            r = tlio::edit_weights(src.string(), dst.string(), o);
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
}

}  // namespace tlio_py

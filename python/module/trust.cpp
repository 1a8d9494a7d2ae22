// python/module/trust.cpp: checkpoints, hashes and signatures (tlio/checkpoint.hpp, trust.hpp).
#include "module/support.hpp"

namespace tlio_py {

void bind_trust(py::module_& m) {
  m.def(
      "read_checkpoint",
      [](const std::filesystem::path& src, const std::string& key) {
        tlio::ImportOptions o;
        o.key = key;
        tlio::CheckpointContents c;
        {
          LongCall call;
          c = tlio::read_checkpoint(src, o);
        }
        return checkpoint_dict(c);
      },
      py::arg("src"), py::arg("key") = "");
  m.def(
      "import_checkpoint",
      [](const std::filesystem::path& src, const std::filesystem::path& dst, const std::string& key,
         bool skip_unsupported, uint64_t max_size, bool allow_empty, bool import_all,
         const std::string& dtype, const std::string& job_id,
         const std::string& job_step) -> py::object {
        const JobStep job(job_id, job_step);
        tlio::ImportOptions o;
        o.job = job.get();
        if (!dtype.empty()) {
          o.dtype = tlio::parse_dtype_alias(dtype);
          if (!o.dtype) throw py::value_error("unknown dtype '" + dtype + "'");
        }
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
        if (job.is_plan()) return py::int_(job.units());
        py::dict d = checkpoint_dict(r.contents);
        d["tensors_written"] = r.tensors_written;
        d["tensors_converted"] = r.tensors_converted;
        d["bytes_written"] = r.bytes_written;
        return d;
      },
      py::arg("src"), py::arg("dst"), py::arg("key") = "", py::arg("skip_unsupported") = false,
      py::arg("max_size") = 0, py::arg("allow_empty") = false, py::arg("import_all") = false,
      py::arg("dtype") = "", py::arg("job_id") = "", py::arg("job_step") = "");
  m.def(
      "hash_file",
      [](const std::string& location, const std::string& token) {
        tlio::HashOptions o;
        o.open.token = token;
        LongCall call;  // a whole file: let other threads run
        return tlio::hash_file(location, o).sha256;
      },
      py::arg("location"), py::arg("token") = "");
  m.def(
      "file_sha256",
      [](const tlio::File& f, const std::string& expected) {
        LongCall call;
        return expected.empty() ? tlio::hash_file(f).sha256
                                : tlio::check_sha256(f, expected).sha256;
      },
      py::arg("file"), py::arg("expected") = "");
  m.def(
      "sign_folder",
      [](const std::string& folder, const std::string& key, const std::string& signature,
         const std::vector<std::string>& ignore_paths) {
        tlio::SignOptions o;
        o.signature = signature;
        o.ignore_paths = ignore_paths;
        LongCall call;
        return tlio::sign_folder(folder, key, o);
      },
      py::arg("folder"), py::arg("key"), py::arg("signature") = "",
      py::arg("ignore_paths") = std::vector<std::string>{});
  m.def(
      "check_signature",
      [](const std::string& folder, const std::string& key, const std::string& signature,
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
      },
      py::arg("folder"), py::arg("key"), py::arg("signature") = "",
      py::arg("ignore_paths") = std::vector<std::string>{});
}

}  // namespace tlio_py

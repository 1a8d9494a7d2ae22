// python/module/support.hpp: what the binding files (python/module/*.cpp, one per public header
// or group of headers they serve) share: long calls without the GIL, numpy views and dtypes,
// argument checks, writes of dicts and items. Tensors come back as numpy arrays viewing the mapped
// file: each array holds a reference to the file, so the mapping lives as long as any array of it.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <chrono>
#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tlio/tlio.hpp"

namespace py = pybind11;

namespace tlio_py {

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
extern thread_local PendingInterrupt t_pending;

bool python_wants_stop(void*);

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

struct QuantizedWeights {
  std::vector<tlio::File>
      files;         // a file, or a model folder's shards (handles shared with Python's)
  std::string name;  // the file or folder, for messages
  std::vector<tlio::QuantizedWeight> weights;
};

// The C++ type behind tlio.VerificationError (never thrown: errors of that code are mapped).
struct VerificationFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The numpy dtype a tensor is exposed as (raw bits for types numpy lacks).
py::dtype numpy_dtype(tlio::Dtype d);
/// The array shape: the header's, except packed sub-byte types, which are their bytes.
std::vector<py::ssize_t> numpy_shape(const tlio::TensorInfo& t);
/// Row-major strides in bytes; zero-size arrays included.
std::vector<py::ssize_t> strides_for(const std::vector<py::ssize_t>& shape, py::ssize_t item);
/// A new array for tlio to fill: uninitialised, C-contiguous; from 4 MiB on an anonymous mapping
/// of its own (huge pages as the system's policy says), below that numpy's.
py::array fresh_array(py::dtype dt, const std::vector<py::ssize_t>& shape);
/// A tensor as a numpy array over the File's bytes (zero-copy with the mmap backends).
py::array view_array(const std::shared_ptr<tlio::File>& file, const std::string& name,
                     bool writable);
/// A tensor converted to F32/F64/F16 (a new array).
py::array converted_array(const tlio::File& file, const std::string& name, py::dtype want);
/// The dtype an array is written as; ValueError for arrays tlio cannot store.
tlio::Dtype dtype_of_array(const py::array& a, const std::string& name);
/// `value` as a str; TypeError naming `what` otherwise.
std::string expect_str(py::handle value, const std::string& what);
/// A dtype given by name ("BF16"); ValueError for an unknown one.
tlio::Dtype named_dtype(py::handle given, const std::string& tensor);
/// The {str: str} metadata dict (None: none) into the writer; TypeError for anything else.
void set_metadata(tlio::Writer& w, const py::object& metadata);
/// Writes a {name: array} dict (C-contiguous copies where needed) with a Writer.
void write_dict(tlio::Writer& w, const py::dict& tensors, const py::object& metadata,
                const py::dict& dtypes);
/// serialize()/serialize_file(): (name, dtype name, shape, data) items; the file bytes, or None
/// when written to `path`.
py::object serialize_items(const py::list& items, const py::object& metadata,
                           const py::object& path);
/// What a checkpoint holds, as plain Python values.
py::dict checkpoint_dict(const tlio::CheckpointContents& c);
/// A folder rewrite re-sharded by `max_size` (0: the source's shards); a `max_size` for one
/// file is a ValueError (tlio.shard-like splitting is for folders).
tlio::FolderOptions folder_options(uint64_t max_size, const tlio::FolderJob* job = nullptr);

/// One step of a job of units (tlio/folder_job.hpp) from Python's (id, step): no job for an
/// empty id; step "plan", "commit", "abort" or a unit's number (ValueError otherwise).
class JobStep {
 public:
  JobStep(const std::string& id, const std::string& step);
  JobStep(const JobStep&) = delete;
  const tlio::FolderJob* get() const { return job_.id.empty() ? nullptr : &job_; }
  /// A plan step: the bindings return the number of units instead of a report.
  bool is_plan() const { return get() && job_.step == tlio::FolderJob::Step::plan; }
  uint64_t units() const { return units_; }

 private:
  tlio::FolderJob job_;
  uint64_t units_ = 0;
};
/// A message as a Python str, bytes that are not UTF-8 (file names) as os.fsdecode keeps them.
py::str lossless_text(std::string_view s);

void bind_errors(py::module_& m);
void bind_file(py::module_& m);
void bind_quant(py::module_& m);
void bind_rewrites(py::module_& m);
void bind_plan(py::module_& m);
void bind_writer(py::module_& m);
void bind_trust(py::module_& m);
void bind_gguf(py::module_& m);
void bind_report(py::module_& m);

}  // namespace tlio_py

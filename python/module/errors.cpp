// python/module/errors.cpp: tlio::Error to Python exceptions, by kind, never by message text.
#include "module/support.hpp"

namespace tlio_py {

void bind_errors(py::module_& m) {
  // tlio::Error -> Python by kind, never by message text: invalid files SafetensorError (a
  // ValueError), bad arguments ValueError, unknown names KeyError, I/O OSError(errno, ...) which
  // Python turns into FileNotFoundError, PermissionError, IsADirectoryError, ... by errno.
  static py::exception<tlio::Error> safetensor_error(m, "SafetensorError", PyExc_ValueError);
  // A digest or a signature that does not match (tlio.verify adds the list of problems).
  static py::exception<VerificationFailure> verification_error(m, "VerificationError",
                                                               PyExc_ValueError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const tlio::Error& e) {
      switch (e.code()) {
        case tlio::ErrorCode::io: {
          const py::object os_error = py::reinterpret_borrow<py::object>(PyExc_OSError);
          const py::object exc =
              e.os_error() ? os_error(e.os_error().value(), e.what()) : os_error(e.what());
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
        case tlio::ErrorCode::not_found:
          PyErr_SetString(PyExc_KeyError, e.what());
          return;
        case tlio::ErrorCode::out_of_memory:
          PyErr_SetString(PyExc_MemoryError, e.what());
          return;
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
        case tlio::ErrorCode::unsupported:
          PyErr_SetString(PyExc_ValueError, e.what());
          return;
      }
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });
}

}  // namespace tlio_py

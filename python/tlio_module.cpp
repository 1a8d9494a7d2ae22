// python/tlio_module.cpp: the compiled part of the Python module (imported as tlio._tlio; the
// safetensors-style API is in tlio/__init__.py). Each public header's bindings are in
// python/module/, over what they share (module/support.hpp).
#include "module/support.hpp"

PYBIND11_MODULE(_tlio, m) {
  m.doc() = "tlio: strict, fast safetensors (compiled core)";
  m.attr("__version__") = tlio::version();

  tlio_py::bind_errors(m);
  tlio_py::bind_file(m);
  tlio_py::bind_quant(m);
  tlio_py::bind_rewrites(m);
  tlio_py::bind_plan(m);
  tlio_py::bind_writer(m);
  tlio_py::bind_trust(m);
  tlio_py::bind_gguf(m);
  tlio_py::bind_report(m);
}

// python/module/report.cpp: a model's report (tlio/report.hpp): its figures as JSON text, its
// page written to a location.
#include "tlio/report.hpp"

#include "module/support.hpp"

namespace tlio_py {

void bind_report(py::module_& m) {
  m.def(
      "report",
      [](const std::string& model, const std::string& against, const std::string& filter,
         unsigned bins, const std::string& html, const std::string& token) {
        tlio::ReportOptions o;
        o.reference = against;
        o.filter = filter;
        o.bins = bins;
        o.open.token = token;
        std::string json;
        {
          LongCall call;
          const tlio::ModelReport r = tlio::make_report(model, o);
          if (!html.empty()) tlio::write_report_html(r, html);
          json = tlio::report_json(r);
        }
        return json;
      },
      py::arg("model"), py::arg("against") = "", py::arg("filter") = "", py::arg("bins") = 64,
      py::arg("html") = "", py::arg("token") = "");
}

}  // namespace tlio_py

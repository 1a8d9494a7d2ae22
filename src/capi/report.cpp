// capi/report.cpp: reports (tlio/report.hpp) through the C API.
#include "tlio/report.hpp"

#include "capi/handles.hpp"

struct tl_report {
  tlio::ModelReport report;
  std::string json;  // made once, as tl_report_json hands it out
};

using namespace tlio::capi;

void tl_report_options_init(tl_report_options* options) {
  if (!options) return;
  *options = {};
  options->struct_size = sizeof(tl_report_options);
  options->bins = 64;
}

int tl_report_make(const char* location, const tl_report_options* options,
                   const tl_open_options* open, tl_report** out) {
  TL_REQUIRE(location && out, "tl_report_make: NULL argument");
  *out = nullptr;
  TL_REQUIRE(
      !options || options->struct_size == sizeof(tl_report_options),
      "tl_report_make: struct_size is not that of a tl_report_options (use tl_report_options_init)");
  tlio::ReportOptions o;
  if (open)
    if (int rc = open_options(open, "tl_report_make", o.open); rc != TL_OK) return rc;
  if (options) {
    if (options->against) o.reference = options->against;
    if (options->filter) o.filter = options->filter;
    o.bins = options->bins;
    if (options->progress) {
      const tl_progress_fn fn = options->progress;
      void* user = options->progress_user;
      o.progress = [fn, user](uint64_t done, uint64_t total) { fn(done, total, user); };
    }
  }
  return guard([&] {
    auto r = std::make_unique<tl_report>();
    r->report = tlio::make_report(location, o);
    r->json = tlio::report_json(r->report);
    *out = r.release();
  });
}

const char* tl_report_json(const tl_report* report) {
  return report ? report->json.c_str() : nullptr;
}

int tl_report_write_html(const tl_report* report, const char* out) {
  TL_REQUIRE(report && out, "tl_report_write_html: NULL argument");
  return guard([&] { tlio::write_report_html(report->report, out); });
}

void tl_report_free(tl_report* report) { delete report; }

// cli/cmd_report.cpp: `tlio report MODEL [--against SOURCE] -o report.html [--json]`: a model's
// figures per tensor (and its error against a reference) as one self-contained HTML page
// (tlio/report.hpp), or as JSON.
#include <fmt/core.h>

#include <memory>
#include <string>

#include "arg_checks.hpp"
#include "cli_util.hpp"
#include "commands.hpp"
#include "tlio/location.hpp"
#include "tlio/report.hpp"

namespace tlio::cli {

void add_report(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "report", "An HTML report of a model's values, and of its error against a source");
  cmd->footer(
      "Reads every tensor as `stats` does (quantized weights and GGUF tensors dequantized, on every\n"
      "core, in bounded memory) and writes one HTML page that opens offline: a summary (parameters,\n"
      "types, size, metadata), the outliers of each layer (max |x| / std) as a chart, and a table of\n"
      "every tensor, sortable by any column, with its histogram (log counts) and NaN/inf/zero counts.\n"
      "With --against, each tensor is compared with the source's (RMSE, max abs error, cosine,\n"
      "SQNR in dB, charted by layer so that the worst layers stand out); a GGUF file pairs with a\n"
      "Hugging Face folder through the names `tlio convert` exports (Q and K rows put back).\n"
      "--json prints the same figures as one JSON document.\n\n"
      "Examples:\n  tlio report model/ -o model.html\n"
      "  tlio report model-q4_k_m.gguf --against model/ -o q4_k_m.html\n"
      "  tlio report model-nf4.safetensors --against model.safetensors --json");
  struct Args {
    std::string model, against, out, filter;
    unsigned bins = 64;
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("MODEL", a->model, "File, model folder or GGUF file, or its URL")->required();
  cmd->add_option("--against", a->against,
                  "The source to compare with (file, folder or GGUF, or its URL)")
      ->type_name("SOURCE");
  cmd->add_option("-o,--output", a->out,
                  "Write the HTML page here (a path, -, or s3://, gs:// location)")
      ->type_name("PATH");
  add_remote_options(cmd);
  cmd->add_option("--filter", a->filter, "Only names matching REGEX (a search)")
      ->check(regex_check());
  cmd->add_option("--bins", a->bins, "Histogram bins (default 64)")->check(CLI::Range(1u, 4096u));
  cmd->add_flag(
      "--json", a->json,
      "The figures as one JSON document on stdout: {\"model\", \"format\", \"reference\", "
      "\"parameters\", \"stored_size\", \"files\", \"types\", \"metadata\", \"only_in_model\", "
      "\"only_in_reference\", \"tensors\": [{\"name\", \"type\", \"shape\", \"layer\", \"min\", "
      "\"max\", \"mean\", \"std\", \"max_over_std\", \"histogram\", \"error\": {\"rmse\", "
      "\"max_abs\", \"cosine\", \"sqnr_db\", ...}}]}");
  cmd->callback([a, &exit_code] {
    exit_code = guarded_output(a->json, [&] {
      if (a->out.empty() && !a->json)
        throw UsageError("give -o PATH for the HTML page, or --json for the figures");
      check_stdout_output(a->out, a->json);
      tlio::ReportOptions options;
      options.reference = a->against;
      options.filter = a->filter;
      options.bins = a->bins;
      options.open = open_options();
      ProgressBar bar("report");
      options.progress = [&bar](uint64_t done, uint64_t total) { bar.update(done, total); };
      const tlio::ModelReport r = tlio::make_report(a->model, options);
      bar.finish();
      if (!a->out.empty()) tlio::write_report_html(r, a->out);
      if (a->json)
        fmt::print("{}\n", tlio::report_json(r));
      else if (a->out != "-")
        fmt::print("{}: {} tensors, {} parameters{}\n", display_location(a->out), r.tensors.size(),
                   r.parameters,
                   r.reference.empty() ? "" : fmt::format(", against {}", r.reference));
      return kExitOk;
    });
  });
}

}  // namespace tlio::cli

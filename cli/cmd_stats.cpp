// cli/cmd_stats.cpp: `tlio stats FILE [NAME...] [--filter RE] [--json]`: per-tensor figures and
// a histogram (tlio::tensor_figures: chunk by chunk straight from the file's bytes, quantized
// weights dequantized a chunk at a time, over every core).
#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <regex>

#include "arg_checks.hpp"
#include "cli_util.hpp"
#include "commands.hpp"
#include "tlio/error.hpp"
#include "tlio/report.hpp"
#include "tlio/weights.hpp"

namespace tlio::cli {
namespace {

constexpr unsigned kBins = 16;

std::string histogram(const std::vector<uint64_t>& bins) {
  static const char* kBars[] = {" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  const uint64_t top = bins.empty() ? 0 : *std::max_element(bins.begin(), bins.end());
  if (top == 0) return "";
  std::string out;
  for (uint64_t b : bins) out += kBars[b == 0 ? 0 : 1 + (b * 7 + top - 1) / top];
  return out;
}

}  // namespace

void add_stats(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("stats", "Per-tensor min, max, mean, std, NaN/inf/zero counts");
  cmd->footer(
      "Quantized weights and GGUF tensors are shown dequantized. The histogram spans [min, max] in 16 bins.\n"
      "The values are read in chunks on every core (a progress bar on a terminal for\n"
      "big inputs); the figures do not depend on the number of cores. A NAME may be a\n"
      "glob pattern ('*.norm.weight', quoted from the shell); --filter REGEX keeps the\n"
      "names it finds.\n\n"
      "Example: tlio stats model.safetensors model.norm.weight\n"
      "         tlio stats model/ --filter 'layers\\.0\\.'");
  struct Args {
    std::string file, filter;
    std::vector<std::string> names;
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("FILE", a->file,
                  "File or model folder, or its URL (http(s)://, s3://, gs://, hf://)")
      ->required();
  add_remote_options(cmd);
  cmd->add_option("NAME", a->names, "Tensors or glob patterns (default: all)");
  cmd->add_option("--filter", a->filter, "Only names matching REGEX (a search)")
      ->check(regex_check());
  cmd->add_flag(
      "--json", a->json,
      "One JSON document on stdout: {\"path\", \"tensors\": [{\"name\", \"dtype\", \"shape\", "
      "\"numeric\", \"count\", \"nan\", \"inf\", \"zero\", \"min\", \"max\", \"mean\", \"std\", "
      "\"histogram\" (16 counts over [min, max])}]}");
  cmd->callback([a, &exit_code] {
    exit_code = guarded_output(a->json, [&] {
      const auto number = [](double v) {
        return std::isfinite(v) ? fmt::format("{}", v) : std::string("null");
      };
      const std::unique_ptr<const Weights> opened = Weights::open(a->file, open_options());
      const Weights& w = *opened;
      const std::vector<std::string> all =
          w.value_names();  // quantized weights by their logical names
      std::vector<std::string> names =
          a->names.empty() ? all : expand_globs(a->names, all, w.name());
      if (!a->filter.empty()) {
        const std::regex filter(a->filter, std::regex::ECMAScript);
        std::erase_if(names, [&](const std::string& n) { return !std::regex_search(n, filter); });
      }
      ProgressBar bar("stats");
      tlio::FigureOptions options;
      options.bins = kBins;
      options.progress = [&bar](uint64_t done, uint64_t total) { bar.update(done, total); };
      const std::vector<tlio::TensorFigures> figures = tlio::tensor_figures(w, names, options);
      bar.finish();
      std::vector<std::string> docs;
      for (const tlio::TensorFigures& f : figures) {
        if (!f.numeric) {
          if (a->json)
            docs.push_back(
                fmt::format("{{\"name\":{},\"dtype\":{},\"shape\":[{}],\"numeric\":false}}",
                            json_string(f.name), json_string(f.type), fmt::join(f.shape, ",")));
          else
            fmt::print("{}: {} [{}]: no numeric statistics\n", display_name(f.name), f.type,
                       fmt::join(f.shape, ", "));
          continue;
        }
        const tlio::ValueStats& s = f.stats;
        const double sd = s.std_dev();
        if (a->json) {
          const bool any = s.count > 0;
          docs.push_back(fmt::format(
              "{{\"name\":{},\"dtype\":{},\"shape\":[{}],\"numeric\":true,\"count\":{},\"nan\":{},"
              "\"inf\":{},\"zero\":{},\"min\":{},\"max\":{},\"mean\":{},\"std\":{},\"histogram\":[{}]}}",
              json_string(f.name), json_string(f.type), fmt::join(f.shape, ","), s.count, s.nan,
              s.inf, s.zero, any ? number(s.min) : "null", any ? number(s.max) : "null",
              s.finite() ? number(s.mean) : "null", s.finite() ? number(sd) : "null",
              fmt::join(f.histogram, ",")));
          continue;
        }
        fmt::print("{}: {} [{}]\n", display_name(f.name), f.type, fmt::join(f.shape, ", "));
        if (s.count == 0) {
          fmt::print("  (empty)\n");
          continue;
        }
        fmt::print("  min {:.6g}  max {:.6g}  mean {:.6g}  std {:.6g}\n", s.min, s.max, s.mean, sd);
        fmt::print("  count {}  nan {}  inf {}  zero {}\n", s.count, s.nan, s.inf, s.zero);
        const std::string h = histogram(f.histogram);
        if (!h.empty()) fmt::print("  {:.3g} |{}| {:.3g}\n", s.min, h, s.max);
      }
      if (a->json)
        fmt::print("{{\"path\":{},\"tensors\":[{}]}}\n", json_string(w.name()),
                   fmt::join(docs, ","));
      return kExitOk;
    });
  });
}

}  // namespace tlio::cli

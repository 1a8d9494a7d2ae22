// cli/cmd_diff.cpp: `tlio diff A B [--atol X] [--rtol Y] [--json] [--all]`: the values of two
// inputs compared name by name (tlio::compare_weights), across dtypes, against quantized weights,
// and across formats (a GGUF file against its Hugging Face folder).
#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "arg_checks.hpp"
#include "cli_util.hpp"
#include "commands.hpp"
#include "tlio/compare.hpp"
#include "tlio/error.hpp"
#include "tlio/file.hpp"
#include "tlio/weights.hpp"

namespace tlio::cli {

namespace {

// A figure as the table shows it: "inf" for the worst (a NaN or infinity on one side only), "-"
// for none (no finite pair to take an RMSE over).
std::string figure(double v) {
  if (std::isnan(v)) return "-";
  return std::isfinite(v) ? fmt::format("{:.4g}", v) : "inf";
}

void print_json(const std::string& a, const std::string& b, const tlio::CompareOptions& o,
                const tlio::CompareReport& r) {
  std::vector<std::string> oa, ob, ts;
  for (const auto& n : r.only_in_a) oa.push_back(json_string(n));
  for (const auto& n : r.only_in_b) ob.push_back(json_string(n));
  for (const tlio::TensorComparison& c : r.tensors)
    ts.push_back(fmt::format(
        "{{\"name\":{},{}\"a_dtype\":{},\"b_dtype\":{},\"shape\":[{}],\"elements\":{},\"compared\":{},"
        "\"note\":{},\"max_abs\":{},\"max_rel\":{},\"rmse\":{},\"cosine\":{},\"outside\":{},"
        "\"equal\":{}}}",
        json_string(c.name),
        c.b_name.empty() ? "" : fmt::format("\"b_name\":{},", json_string(c.b_name)),
        json_string(c.a_dtype), json_string(c.b_dtype), fmt::join(c.shape, ","), c.elements,
        c.compared, json_string(c.note), json_number(c.max_abs), json_number(c.max_rel),
        json_number(c.rmse), json_number(c.cosine), c.outside, c.equal));
  fmt::print(
      "{{\"paths\":[{},{}],\"atol\":{},\"rtol\":{},\"equal\":{},\"only_in_a\":[{}],"
      "\"only_in_b\":[{}],\"tensors\":[{}]}}\n",
      json_string(a), json_string(b), json_number(o.atol), json_number(o.rtol), r.equal,
      fmt::join(oa, ","), fmt::join(ob, ","), fmt::join(ts, ","));
}

void print_table(const std::string& a, const std::string& b, const tlio::CompareOptions& o,
                 const tlio::CompareReport& r, bool all) {
  for (const auto& n : r.only_in_a) fmt::print("only in {}: {}\n", a, display_name(n));
  for (const auto& n : r.only_in_b) fmt::print("only in {}: {}\n", b, display_name(n));
  // Identical tensors (every value the same) are counted, not listed, unless --all.
  std::vector<const tlio::TensorComparison*> shown;
  size_t identical = 0, outside = 0, not_compared = 0;
  for (const tlio::TensorComparison& c : r.tensors) {
    const bool same = c.compared && c.equal && c.max_abs == 0;
    identical += same;
    outside += c.compared && !c.equal;
    not_compared += !c.compared;
    if (all || !same) shown.push_back(&c);
  }
  if (!shown.empty()) {
    std::vector<std::vector<std::string>> rows{
        {"name", "A", "B", "max abs", "max rel", "rmse", "cosine", "verdict"}};
    for (const tlio::TensorComparison* c : shown) {
      // Across formats: A's name, then B's for it.
      const std::string name =
          display_name(c->name) + (c->b_name.empty() ? "" : " = " + display_name(c->b_name));
      if (!c->compared) {
        rows.push_back({name, c->a_dtype, c->b_dtype, "", "", "", "", "not compared: " + c->note});
        continue;
      }
      rows.push_back({name, c->a_dtype, c->b_dtype, figure(c->max_abs), figure(c->max_rel),
                      figure(c->rmse), fmt::format("{:.6f}", c->cosine),
                      c->equal          ? "within tolerance"
                      : c->note.empty() ? fmt::format("{} of {} outside", c->outside, c->elements)
                                        : c->note});
    }
    std::vector<size_t> width(rows[0].size(), 0);
    for (const auto& row : rows)
      for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], display_width(row[i]));
    for (const auto& row : rows) {
      std::string line;
      for (size_t i = 0; i < row.size(); ++i) {
        const bool number = i >= 3 && i <= 6;
        line += (i ? "  " : "") + (i + 1 == row.size() ? row[i] : pad(row[i], width[i], number));
      }
      fmt::print("{}\n", line);
    }
  }
  const size_t common = r.tensors.size();
  std::string summary = fmt::format("{}: {} common tensor{}", r.equal ? "equal" : "different",
                                    common, common == 1 ? "" : "s");
  if (identical) summary += fmt::format(", {} identical", identical);
  if (outside)
    summary += fmt::format(", {} outside tolerance (atol {}, rtol {})", outside, o.atol, o.rtol);
  else if (common > identical + not_compared)
    summary += fmt::format(", the rest within tolerance (atol {}, rtol {})", o.atol, o.rtol);
  if (not_compared) summary += fmt::format(", {} not compared", not_compared);
  if (!r.only_in_a.empty()) summary += fmt::format(", {} only in {}", r.only_in_a.size(), a);
  if (!r.only_in_b.empty()) summary += fmt::format(", {} only in {}", r.only_in_b.size(), b);
  fmt::print("{}\n", summary);
}

}  // namespace

void add_diff(CLI::App& app, int& exit_code) {
  auto* cmd =
      app.add_subcommand("diff", "Compare the values of two files, across dtypes and quantization");
  cmd->footer(
      "Compares every name the two files share, after converting both to F64: different dtypes\n"
      "(F32 against BF16), and quantized weights (int4, nf4, fp4, int8) against plain ones or\n"
      "each other, dequantized, under their logical names. Per tensor: the largest absolute and\n"
      "relative difference, the RMSE, the cosine similarity, and how many values are outside\n"
      "|a - b| <= atol + rtol * |b| (B is the reference; NaN equals NaN). Names only in one file\n"
      "are listed; identical tensors are counted (--all lists them). A or B may be a model folder\n"
      "(its shards are one namespace): a folder against its merged file, or another folder.\n"
      "A or B may be a GGUF file (tensors decoded as ggml decodes them): against a Hugging Face\n"
      "folder its tensors pair with the folder's by the names the GGUF export gives them, Q/K\n"
      "rows put back in place (shown as \"A's name = B's name\").\n"
      "Exit 0 when the files are equal within tolerance, 1 otherwise.\n\n"
      "Examples:\n  tlio diff model.safetensors model-bf16.safetensors\n"
      "  tlio diff model.safetensors model-nf4.safetensors --json\n"
      "  tlio diff a.safetensors b.safetensors --atol 1e-3 --rtol 1e-2\n"
      "  tlio diff model-q8_0.gguf model_dir/");
  struct Args {
    std::string a, b;
    bool json = false, all = false;
    double atol = 0, rtol = 0;
    std::string filter;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("A", a->a, "First file or model folder, or its URL")->required();
  cmd->add_option(
         "B", a->b,
         "Second file or model folder, or its URL (the reference for relative differences)")
      ->required();
  add_remote_options(cmd);
  cmd->add_flag("--json", a->json, "One JSON document on stdout");
  cmd->add_flag("--all", a->all, "List identical tensors too");
  cmd->add_option("--filter", a->filter, "Compare only names matching REGEX (a search)")
      ->check(regex_check());
  cmd->add_option("--atol", a->atol, "Absolute tolerance (default 0)")->check(non_negative_check());
  cmd->add_option("--rtol", a->rtol, "Relative tolerance (default 0)")->check(non_negative_check());
  cmd->callback([a, &exit_code] {
    exit_code = guarded_output(a->json, [&] {
      const std::unique_ptr<const Weights> fa = Weights::open(a->a, open_options()),
                                           fb = Weights::open(a->b, open_options());
      tlio::CompareOptions o;
      o.atol = a->atol;
      o.rtol = a->rtol;
      o.filter = a->filter;
      ProgressBar bar("comparing", uint64_t{256} << 20);
      o.progress = [&bar](uint64_t done, uint64_t total) { bar.update(done, total); };
      const tlio::CompareReport r = tlio::compare_weights(*fa, *fb, o);
      bar.finish();
      if (a->json)
        print_json(fa->name(), fb->name(), o, r);
      else
        print_table(fa->name(), fb->name(), o, r, a->all);
      return r.equal ? kExitOk : kExitFailure;
    });
  });
}

}  // namespace tlio::cli

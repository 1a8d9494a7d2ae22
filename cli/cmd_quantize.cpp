// cli/cmd_quantize.cpp: `tlio quantize` and `tlio dequantize`.
#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "arg_checks.hpp"
#include "cli_util.hpp"
#include "commands.hpp"
#include "tlio/bnb.hpp"
#include "tlio/error.hpp"
#include "tlio/file.hpp"
#include "tlio/folder_rewrite.hpp"
#include "tlio/quant.hpp"
#include "tlio/rewrite.hpp"
#include "tlio/weights.hpp"

namespace tlio::cli {

namespace {

// "a, b or c".
std::string or_list(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i)
    out += (i == 0 ? "" : i + 1 == items.size() ? " or " : ", ") + items[i];
  return out;
}

// The scheme names for --scheme's help: "int4-g<group>-sym (e.g. int4-g32-sym), nf4, fp4 or int8".
std::string scheme_choices() {
  std::vector<std::string> names;
  for (const tlio::SchemeInfo& s : tlio::quant_schemes())
    if (!s.read_only)
      names.push_back(s.syntax.find('<') == std::string_view::npos  // a pattern gets an example
                          ? std::string(s.syntax)
                          : fmt::format("{} (e.g. {})", s.syntax, s.example));
  return or_list(names);
}

// The names --scheme takes as they are (nf4, fp4, int8) and the example of each pattern
// (int4-g32-sym), for completion and "did you mean".
std::vector<std::string> scheme_names() {
  std::vector<std::string> names;
  for (const tlio::SchemeInfo& s : tlio::quant_schemes()) {
    if (s.read_only) continue;
    if (s.syntax.find('<') != std::string_view::npos) {
      names.emplace_back(s.example);
      continue;
    }
    for (size_t at = 0; at < s.syntax.size();) {
      const size_t end = std::min(s.syntax.find(", ", at), s.syntax.size());
      names.emplace_back(s.syntax.substr(at, end - at));
      at = end + 2;
    }
  }
  return names;
}

// Words separated by single spaces ("32 64 128"), as a list.
std::vector<std::string> words_of(std::string_view text) {
  std::vector<std::string> words;
  for (size_t at = 0; at < text.size();) {
    const size_t end = std::min(text.find(' ', at), text.size());
    words.emplace_back(text.substr(at, end - at));
    at = end + 1;
  }
  return words;
}

// The registry's description of every scheme, as the footer's table.
std::string scheme_table() {
  size_t width = 0;
  std::vector<std::string_view> read_only;
  for (const tlio::SchemeInfo& s : tlio::quant_schemes())
    if (!s.read_only) width = std::max(width, s.syntax.size());
  std::string out = "Schemes:\n";
  for (const tlio::SchemeInfo& s : tlio::quant_schemes()) {
    if (s.read_only) {
      read_only.push_back(s.example);
      continue;
    }
    std::string_view layout = s.layout;
    bool first = true;
    while (!layout.empty()) {
      const size_t nl = layout.find('\n');
      out += fmt::format("  {:<{}}  {}\n", first ? s.syntax : "", width, layout.substr(0, nl));
      layout = nl == std::string_view::npos ? std::string_view{} : layout.substr(nl + 1);
      first = false;
    }
  }
  out += fmt::format(
      "Read, not written (dequantize, cat, stats, diff, inspect): {} and the like "
      "(docs/quantization.md)\n",
      fmt::join(read_only, ", "));
  return out;
}

// One command-line option per scheme option (several schemes may share one).
struct SchemeFlag {
  std::string name;
  tlio::OptionKind kind;
  std::string_view help;
  std::vector<std::string> owners;  // the schemes that have it: "nf4/fp4"
  CLI::Option* cli = nullptr;
  std::string value;
  std::vector<std::string> words;  // what completion offers (SchemeOptionInfo::values)
};

// The text report: a line per selected tensor (unless quiet), what was kept and why, the sizes.
void print_quantize_report(const tlio::QuantizeReport& r, const std::string& in,
                           const std::string& out, const std::string& scheme, bool quiet) {
  size_t done = 0;
  for (const auto& item : r.items) {
    if (quiet) {
      done += item.quantized;
      continue;
    }
    if (!item.quantized) {
      fmt::print(report_stream(out), "  skipped {}: {}\n", display_name(item.name), item.note);
      continue;
    }
    ++done;
    fmt::print(report_stream(out), "  {}: rmse {:.3e}, max abs error {:.3e}, {} -> {}\n",
               display_name(item.name), item.rmse, item.max_abs_error,
               human_size(item.bytes_before), human_size(item.bytes_after));
  }
  // What was kept as it is, and why: a count and the first few names a reason.
  for (const tlio::QuantizeReport::Kept& k : r.kept) {
    if (quiet) break;
    std::vector<std::string> names;
    for (size_t i = 0; i < k.names.size() && i < 3; ++i) names.push_back(display_name(k.names[i]));
    if (k.names.size() > 3) names.push_back(fmt::format("... ({} more)", k.names.size() - 3));
    fmt::print(report_stream(out), "  kept {} {} {}{}: {}\n", k.names.size(),
               k.reason == "already quantized" ? (k.names.size() == 1 ? "weight" : "weights")
                                               : (k.names.size() == 1 ? "tensor" : "tensors"),
               k.reason,
               k.reason.starts_with("1-D") ? "; --include with --allow-1d quantizes them" : "",
               fmt::join(names, ", "));
  }
  // A change in size, either way (a tiny or 1-D tensor can grow: its scales cost more).
  const double before = static_cast<double>(r.data_bytes_before);
  const double change =
      before > 0 ? 100.0 * (before - static_cast<double>(r.data_bytes_after)) / before : 0.0;
  fmt::print(report_stream(out),
             "{} -> {}: {} tensor{} quantized ({}); data {} -> {} ({:.1f}% {})\n", in, out, done,
             done == 1 ? "" : "s", scheme, human_size(r.data_bytes_before),
             human_size(r.data_bytes_after), std::fabs(change), change >= 0 ? "saved" : "larger");
}

}  // namespace

void add_quantize(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "quantize",
      "Quantize weight matrices (tinyllm int4, bitsandbytes NF4/FP4, LLM.int8, FP8 blocks or rows, "
      "MLX)");
  cmd->footer(
      scheme_table() +
      "By default the weights of linear layers are quantized, whatever their names (2-D *.weight:\n"
      "q_proj, c_attn, query_key_value, w1, fc1, 0.weight); embeddings, norms, lm_head and\n"
      "1-D tensors are kept (mlx-affine takes embeddings and lm_head too, as mlx-lm does; a\n"
      "matrix whose rows its group does not divide stays plain). --include REGEX replaces that\n"
      "selection, --exclude REGEX removes from it (searches); 1-D tensors (biases, norms) are\n"
      "quantized only when --include names them and --allow-1d is given. Prints the\n"
      "quantization error per tensor, what was kept and why, and the size saved. A selection\n"
      "that quantizes nothing is an error (exit 1). An option the scheme does not have is a\n"
      "usage error.\n\n"
      "Examples:\n"
      "  tlio quantize model.safetensors model-int4.safetensors --scheme int4-g32-sym\n"
      "  tlio quantize model.safetensors model-nf4.safetensors --scheme nf4 --nested\n"
      "  tlio quantize model/ model-mlx-4bit/ --scheme mlx-affine --bits 4 --group-size 64");
  struct Args {
    std::string in, out, scheme, include, exclude, max_size;
    bool allow_1d = false, json = false, quiet = false;
    JobOptions job;
    std::vector<SchemeFlag> options;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("IN", a->in,
                  "Input file or model folder, or its URL (http(s)://, s3://, gs://, hf://)")
      ->required();
  add_remote_options(cmd);
  cmd->add_option("OUT", a->out, "Output file, or folder for a folder (or s3://, gs:// location)")
      ->required();
  offer_values(cmd->add_option("--scheme", a->scheme, scheme_choices()), scheme_names())
      ->required()
      ->check([](const std::string& v) -> std::string {
        try {
          tlio::QuantScheme::parse(v);
          return {};
        } catch (const tlio::Error& e) {
          if (std::string_view(e.what()).starts_with("tlio reads"))
            return e.what();  // read, not written
        }
        std::vector<std::string> syntaxes;
        for (const tlio::SchemeInfo& s : tlio::quant_schemes())
          if (!s.read_only) syntaxes.emplace_back(s.syntax);
        const std::string near = tlio::closest_name(v, scheme_names());
        return fmt::format("unknown scheme '{}'{} ({})", v,
                           near.empty() ? "" : "; did you mean '" + near + "'?",
                           fmt::join(syntaxes, ", "));
      });
  // The registry's options, each once, its help prefixed by the schemes that have it.
  for (const tlio::SchemeInfo& s : tlio::quant_schemes())
    for (const tlio::SchemeOptionInfo& o : s.options) {
      auto f = std::find_if(a->options.begin(), a->options.end(),
                            [&](const SchemeFlag& x) { return x.name == o.name; });
      if (f == a->options.end())
        f = a->options.insert(
            f, {std::string(o.name), o.kind, o.help, {}, nullptr, {}, words_of(o.values)});
      std::string names(s.syntax);
      for (size_t at; (at = names.find(", ")) != std::string::npos;) names.replace(at, 2, "/");
      f->owners.push_back(names);
    }
  for (SchemeFlag& f : a->options) {  // (the vector is complete: references stay valid)
    const std::string text = fmt::format("{}: {}", fmt::join(f.owners, "/"), f.help);
    if (f.kind == tlio::OptionKind::flag)
      f.cli = cmd->add_flag_callback(
          "--" + f.name, [&f] { f.value = "true"; }, text);
    else
      f.cli = offer_values(cmd->add_option("--" + f.name, f.value, text), f.words)
                  ->type_name(f.kind == tlio::OptionKind::number ? "UINT" : "TEXT");
  }
  cmd->add_option("--include", a->include, "Quantize the tensors matching REGEX instead")
      ->check(regex_check());
  cmd->add_option("--exclude", a->exclude, "Do not quantize tensors matching REGEX")
      ->check(regex_check());
  cmd->add_flag("--allow-1d", a->allow_1d,
                "Quantize 1-D tensors (biases, norms) that --include names too")
      ->needs(cmd->get_option("--include"));
  cmd->add_flag("-q,--quiet", a->quiet, "Print the summary line only (no line per tensor)");
  add_max_size_option(cmd, a->max_size);
  add_job_options(cmd, a->job);
  cmd->add_flag(
      "--json", a->json,
      "One JSON document on stdout: {\"input\", \"output\", \"scheme\", \"items\", \"kept\", "
      "\"data_bytes_before\", \"data_bytes_after\"}");
  cmd->callback([a, &exit_code] {
    // The scheme and its options first: an option it does not have is a usage error.
    tlio::QuantizeOptions o;
    try {
      o.scheme = tlio::QuantScheme::parse(a->scheme);
      for (const SchemeFlag& f : a->options)
        if (f.cli->count()) o.scheme.set_option(f.name, f.value);
    } catch (const tlio::Error& e) {
      print_usage_error(e.what());
      exit_code = kExitUsage;
      return;
    }
    exit_code = guarded_output(a->json, [&] {
      check_stdout_output(a->out, a->json);
      ProgressBar bar("quantizing");
      o.include = a->include;
      o.exclude = a->exclude;
      o.allow_1d = a->allow_1d;
      o.progress = [&bar](uint64_t done, uint64_t total) { bar.update(done, total); };
      tlio::FolderFiles files;
      const JobStep job(a->job);
      const tlio::QuantizeReport r =
          tlio::quantize_weights(a->in, a->out, o, folder_options(a->max_size, &files, job.get()));
      bar.finish();
      if (job.print(a->out, a->json)) return kExitOk;
      if (a->json) {
        std::vector<std::string> items, kept;
        for (const auto& i : r.items)
          items.push_back(fmt::format(
              "{{\"name\":{},\"quantized\":{},\"note\":{},\"rmse\":{},\"max_abs_error\":{},"
              "\"bytes_before\":{},\"bytes_after\":{}}}",
              json_string(i.name), i.quantized, json_string(i.note), json_number(i.rmse),
              json_number(i.max_abs_error), i.bytes_before, i.bytes_after));
        for (const auto& k : r.kept) {
          std::vector<std::string> names;
          for (const auto& n : k.names) names.push_back(json_string(n));
          kept.push_back(fmt::format("{{\"reason\":{},\"names\":[{}]}}", json_string(k.reason),
                                     fmt::join(names, ",")));
        }
        fmt::print(
            "{{\"input\":{},\"output\":{},\"scheme\":{},\"items\":[{}],\"kept\":[{}],"
            "\"data_bytes_before\":{},\"data_bytes_after\":{}{}}}\n",
            json_string(display_location(a->in)), json_string(display_location(a->out)),
            json_string(o.scheme.name()), fmt::join(items, ","), fmt::join(kept, ","),
            r.data_bytes_before, r.data_bytes_after, json_files_member(files));
        return kExitOk;
      }
      print_quantize_report(r, display_location(a->in), display_location(a->out), a->scheme,
                            a->quiet);
      return kExitOk;
    });
  });
}

void add_dequantize(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("dequantize", "Restore quantized weights to plain tensors");
  cmd->footer(
      "Every quantized weight becomes a plain tensor again, in its logical shape:\n"
      "  int4: <name>.qweight + <name>.scales -> <name> (scheme from the metadata or shapes)\n"
      "  nf4/fp4: recognised by <name>.quant_state.bitsandbytes__<type>; restored in the\n"
      "    original dtype and shape its quant_state records unless --dtype is given\n"
      "  int8: <p>.weight + <p>.SCB [+ <p>.weight_format] -> <p>.weight\n"
      "Without --dtype, int4 and int8 weights are written as F32. The quant metadata key is\n"
      "dropped.\n\n"
      "Example: tlio dequantize model-int4.safetensors model.safetensors --dtype BF16");
  struct Args {
    std::string in, out, dtype, max_size;
    bool json = false;
    JobOptions job;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("IN", a->in,
                  "Input file or model folder, or its URL (http(s)://, s3://, gs://, hf://)")
      ->required();
  add_remote_options(cmd);
  cmd->add_option("OUT", a->out, "Output file, or folder for a folder (or s3://, gs:// location)")
      ->required();
  offer_values(cmd->add_option("--dtype", a->dtype, "F32, F16 or BF16 (default: see below)"),
               kDequantizeDtypeNames)
      ->check([](const std::string& v) -> std::string {
        auto d = tlio::parse_dtype_alias(v);
        return d && (*d == tlio::Dtype::F32 || *d == tlio::Dtype::F16 || *d == tlio::Dtype::BF16)
                   ? std::string{}
                   : "--dtype must be F32, F16 or BF16, not '" + v + "'";
      });
  add_max_size_option(cmd, a->max_size);
  add_job_options(cmd, a->job);
  cmd->add_flag("--json", a->json,
                "One JSON document on stdout: {\"input\", \"output\", \"restored\", \"schemes\"}");
  cmd->callback([a, &exit_code] {
    exit_code = guarded_output(a->json, [&] {
      check_stdout_output(a->out, a->json);
      ProgressBar bar("dequantizing");
      std::optional<tlio::Dtype> dtype;
      if (!a->dtype.empty()) dtype = tlio::parse_dtype_alias(a->dtype);
      const tlio::ProgressCallback progress = [&bar](uint64_t done, uint64_t total) {
        bar.update(done, total);
      };
      tlio::FolderFiles files;
      const JobStep job(a->job);
      const tlio::DequantizeReport r = tlio::dequantize_weights(
          a->in, a->out, dtype, progress, folder_options(a->max_size, &files, job.get()));
      bar.finish();
      if (job.print(a->out, a->json)) return kExitOk;
      if (a->json) {
        fmt::print("{{\"input\":{},\"output\":{},\"restored\":{},\"schemes\":{}{}}}\n",
                   json_string(display_location(a->in)), json_string(display_location(a->out)),
                   r.restored, json_string(r.scheme), json_files_member(files));
        return kExitOk;
      }
      fmt::print(report_stream(a->out), "{} -> {}: {} weight{} restored{}\n",
                 display_location(a->in), display_location(a->out), r.restored,
                 r.restored == 1 ? "" : "s",
                 r.scheme.empty() ? std::string(" (no quantized weights)") : " from " + r.scheme);
      return kExitOk;
    });
  });
}

}  // namespace tlio::cli

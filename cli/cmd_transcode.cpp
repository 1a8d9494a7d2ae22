// cli/cmd_transcode.cpp: `tlio transcode SRC OUT --to mlx|gguf [--lossy] [--dtype D] [-v]
// [--json]`: quantized weights carried into another ecosystem's layout, each proven equal on the
// way.
#include <fmt/core.h>
#include <fmt/format.h>

#include <map>

#include "arg_checks.hpp"
#include "cli_util.hpp"
#include "commands.hpp"
#include "tlio/transcode.hpp"

namespace tlio::cli {

namespace {

std::string item_json(const TranscodeReport::Item& i) {
  return fmt::format(
      "{{\"name\":{},\"source\":{},\"target\":{},\"scale_dtype\":\"{}\",\"exact\":{},"
      "\"zero_signs\":{},\"rmse\":{},\"max_abs_error\":{}}}",
      json_string(i.name), json_string(i.source), json_string(i.target),
      tlio::dtype_name(i.scale_dtype), i.exact, i.zero_signs, json_number(i.rmse),
      json_number(i.max_abs_error));
}

// "Q4_K 120 -> mlx-affine-4bit-g32, Q6_K 24 -> ...": the weights grouped by what became of them.
std::string summary(const TranscodeReport& r, bool exact) {
  std::map<std::pair<std::string, std::string>, size_t> counts;
  for (const auto& i : r.items)
    if (i.exact == exact) ++counts[{i.source, i.target}];
  std::vector<std::string> parts;
  for (const auto& [what, n] : counts)
    parts.push_back(fmt::format("{} {} -> {}", n, what.first, what.second));
  return fmt::format("{}", fmt::join(parts, ", "));
}

}  // namespace

void add_transcode(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "transcode", "Carry quantized weights into another ecosystem's layout, proven exact");
  cmd->footer(
      "--to mlx: SRC a GGUF file (a model import knows), OUT a folder. Each weight whose values\n"
      "are code * scale + bias in groups of 32 or 64 (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_0, Q4_K,\n"
      "Q5_K) becomes MLX affine of its width with F32 scales and biases, the dtype in which MLX\n"
      "computes what ggml does; MXFP4 and NVFP4 become MLX's mxfp4 and nvfp4, codes and scale\n"
      "bytes as they are. Or SRC a model folder: compressed-tensors' MXFP4 and NVFP4 (a global\n"
      "scale of 1) and FP8 whose scales are powers of two (as mxfp8) move byte for byte.\n"
      "--to gguf: SRC a model folder (an export takes), OUT a .gguf file. MLX's and\n"
      "compressed-tensors' MXFP4 and NVFP4 weights become ggml's MXFP4 and NVFP4 blocks; plain\n"
      "weights are written in --dtype as `tlio convert` writes them.\n"
      "--to compressed-tensors: SRC an MLX folder, OUT a folder: mxfp4 and nvfp4 Linear weights\n"
      "move byte for byte into compressed-tensors' layout (an embedding as BF16, its values).\n"
      "Each piece is decoded by the target's rules and compared with the source's values before\n"
      "it is written: equal bit for bit, but a -0 may become +0 (counted as zero_signs). A weight\n"
      "no rule carries (Q6_K, Q3_K, Q2_K: groups of 16; codebooks; MLX's affine into ggml) is\n"
      "refused by name unless --lossy, which requantizes it and reports its error.\n\n"
      "Examples:\n  tlio transcode model-Q4_0.gguf model-mlx/ --to mlx\n"
      "  tlio transcode model-Q4_K_M.gguf model-mlx/ --to mlx --lossy --json\n"
      "  tlio transcode mlx-mxfp4/ model-mxfp4.gguf --to gguf");
  struct Args {
    std::string src, dst, to = "mlx", dtype;
    bool lossy = false, json = false, verbose = false;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("SRC", a->src, "GGUF file or model folder (--to mlx); model folder (otherwise)")
      ->required();
  cmd->add_option("OUT", a->dst, "Output .gguf file (--to gguf); folder (otherwise)")->required();
  add_remote_options(cmd, false);
  offer_values(cmd->add_option("--to", a->to,
                               "The layout written: mlx (default), gguf or compressed-tensors"),
               {"mlx", "gguf", "compressed-tensors"})
      ->check(CLI::IsMember({"mlx", "gguf", "compressed-tensors"}));
  cmd->add_flag("--lossy", a->lossy,
                "Requantize the weights that cannot be carried exactly (their error reported)");
  offer_values(cmd->add_option("--dtype", a->dtype,
                               "Tensors written as floats, and requantized scales: F32, F16 or "
                               "BF16 (default BF16)"),
               {"F32", "F16", "BF16"})
      ->check(CLI::IsMember({"F32", "F16", "BF16", "f32", "f16", "bf16"}));
  cmd->add_flag("-v,--verbose", a->verbose, "List every weight: its source type and its form");
  cmd->add_flag("--json", a->json,
                "One JSON document on stdout: {\"input\", \"output\", \"to\", \"lossy\", "
                "\"weights\": [{\"name\", \"source\", \"target\", \"scale_dtype\", \"exact\", "
                "\"zero_signs\", \"rmse\", \"max_abs_error\"}], \"plain\", \"bytes_in\", "
                "\"bytes_out\", \"files\"}");
  cmd->callback([a, &exit_code] {
    exit_code = guarded_output(a->json, [&] {
      tlio::TranscodeOptions options;
      options.to = *tlio::transcode_target_named(a->to);
      options.lossy = a->lossy;
      if (!a->dtype.empty()) options.dtype = tlio::parse_dtype_alias(a->dtype).value();
      ProgressBar bar("transcoding");
      options.progress = [&bar](uint64_t done, uint64_t total) { bar.update(done, total); };
      const tlio::TranscodeReport r = tlio::transcode(a->src, a->dst, options);
      bar.finish();
      if (a->json) {
        std::vector<std::string> items, files;
        for (const auto& i : r.items) items.push_back(item_json(i));
        for (const auto& f : r.files) files.push_back(json_string(f));
        fmt::print(
            "{{\"input\":{},\"output\":{},\"to\":\"{}\",\"lossy\":{},\"weights\":[{}],"
            "\"plain\":{},\"bytes_in\":{},\"bytes_out\":{},\"files\":[{}]}}\n",
            json_string(display_location(a->src)), json_string(display_location(a->dst)),
            tlio::transcode_target_name(options.to), a->lossy, fmt::join(items, ","), r.plain,
            r.bytes_in, r.bytes_out, fmt::join(files, ","));
        return kExitOk;
      }
      if (a->verbose)
        for (const auto& i : r.items)
          fmt::print(stderr, "{}: {} -> {} ({} scales){}\n", i.name, i.source, i.target,
                     tlio::dtype_name(i.scale_dtype),
                     i.exact ? (i.zero_signs ? fmt::format(", exact; {} -0 as +0", i.zero_signs)
                                             : std::string(", exact"))
                             : fmt::format(", requantized: rmse {:.3g}, max {:.3g}", i.rmse,
                                           i.max_abs_error));
      size_t exact = 0;
      uint64_t zero_signs = 0;
      for (const auto& i : r.items) {
        exact += i.exact;
        zero_signs += i.zero_signs;
      }
      fmt::print(
          "{} -> {}: {} weight{} carried exactly ({}){}{}, {} tensor{} as floats; {} -> {}\n",
          display_location(a->src), display_location(a->dst), exact, exact == 1 ? "" : "s",
          summary(r, true), zero_signs ? fmt::format(" ({} -0 written as +0)", zero_signs) : "",
          exact < r.items.size()
              ? fmt::format(", {} requantized ({})", r.items.size() - exact, summary(r, false))
              : "",
          r.plain, r.plain == 1 ? "" : "s", human_size(r.bytes_in), human_size(r.bytes_out));
      return kExitOk;
    });
  });
}

}  // namespace tlio::cli

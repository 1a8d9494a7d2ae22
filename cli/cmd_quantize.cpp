// cli/cmd_quantize.cpp: `tlio quantize` and `tlio dequantize`.
#include <fmt/core.h>

#include "cli_util.hpp"
#include "commands.hpp"
#include "tlio/file.hpp"
#include "tlio/quant.hpp"

namespace tlio::cli {

void add_quantize(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("quantize", "Quantize weight matrices (tinyllm int4)");
  cmd->footer(
      "By default the 2-D *_proj.weight matrices are quantized (each <name> becomes\n"
      "<name>.qweight + <name>.scales); embeddings, norms, lm_head and 1-D tensors are kept.\n"
      "--include REGEX replaces that selection, --exclude REGEX removes from it (searches).\n"
      "Prints the quantization error per tensor and the size saved.\n\n"
      "Example: tlio quantize model.safetensors model-int4.safetensors --scheme int4-g32-sym");
  struct Args {
    std::string in, out, scheme, include, exclude;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("IN", a->in, "Input file")->required();
  cmd->add_option("OUT", a->out, "Output file")->required();
  cmd->add_option("--scheme", a->scheme, "int4-g<group>-sym, e.g. int4-g32-sym")
      ->required()
      ->check([](const std::string& v) -> std::string {
        return tlio::parse_int4_scheme(v) ? std::string{}
                                          : "unknown scheme '" + v + "' (int4-g<group>-sym)";
      });
  cmd->add_option("--include", a->include, "Quantize the tensors matching REGEX instead");
  cmd->add_option("--exclude", a->exclude, "Do not quantize tensors matching REGEX");
  cmd->callback([a, &exit_code] {
    exit_code = guarded([&] {
      tlio::File src = tlio::File::open(a->in);
      ProgressBar bar("quantizing");
      tlio::QuantizeOptions o{a->scheme, a->include, a->exclude,
                              [&bar](uint64_t done, uint64_t total) { bar.update(done, total); }};
      tlio::QuantizeReport r = tlio::quantize_file(src, a->out, o);
      bar.finish();
      size_t done = 0;
      for (const auto& item : r.items) {
        if (!item.quantized) {
          fmt::print("  skipped {}: {}\n", display_name(item.name), item.note);
          continue;
        }
        ++done;
        fmt::print("  {}: rmse {:.3e}, max abs error {:.3e}, {} -> {}\n", display_name(item.name),
                   item.rmse, item.max_abs_error, human_size(item.bytes_before),
                   human_size(item.bytes_after));
      }
      const double saved = r.data_bytes_before
                               ? 100.0 * double(r.data_bytes_before - r.data_bytes_after) /
                                     double(r.data_bytes_before)
                               : 0.0;
      fmt::print("{} -> {}: {} tensors quantized ({}); data {} -> {} ({:.1f}% saved)\n", a->in,
                 a->out, done, a->scheme, human_size(r.data_bytes_before),
                 human_size(r.data_bytes_after), saved);
      return kExitOk;
    });
  });
}

void add_dequantize(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("dequantize", "Restore quantized weights to plain tensors");
  cmd->footer("Each <name>.qweight + <name>.scales pair becomes <name> again; the scheme comes from\n"
              "the metadata (or the shapes). The quant metadata key is dropped.\n\n"
              "Example: tlio dequantize model-int4.safetensors model.safetensors --dtype BF16");
  struct Args {
    std::string in, out, dtype = "F32";
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("IN", a->in, "Input file")->required();
  cmd->add_option("OUT", a->out, "Output file")->required();
  cmd->add_option("--dtype", a->dtype, "F32 (default), F16 or BF16")
      ->check([](const std::string& v) -> std::string {
        auto d = tlio::parse_dtype_alias(v);
        return d && (*d == tlio::Dtype::F32 || *d == tlio::Dtype::F16 || *d == tlio::Dtype::BF16)
                   ? std::string{}
                   : "--dtype must be F32, F16 or BF16, not '" + v + "'";
      });
  cmd->callback([a, &exit_code] {
    exit_code = guarded([&] {
      tlio::File src = tlio::File::open(a->in);
      ProgressBar bar("dequantizing");
      tlio::DequantizeReport r = tlio::dequantize_file(
          src, a->out, *tlio::parse_dtype_alias(a->dtype),
          [&bar](uint64_t done, uint64_t total) { bar.update(done, total); });
      bar.finish();
      fmt::print("{} -> {}: {} weights restored{}\n", a->in, a->out, r.restored,
                 r.scheme.empty() ? std::string(" (no quantized weights)") : " from " + r.scheme);
      return kExitOk;
    });
  });
}

}  // namespace tlio::cli

// cli/cmd_quantize.cpp: `tlio quantize` and `tlio dequantize`.
#include <fmt/core.h>

#include "cli_util.hpp"
#include "commands.hpp"
#include "tlio/bnb.hpp"
#include "tlio/error.hpp"
#include "tlio/file.hpp"
#include "tlio/quant.hpp"

namespace tlio::cli {

void add_quantize(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("quantize", "Quantize weight matrices (tinyllm int4, bitsandbytes NF4/FP4, LLM.int8)");
  cmd->footer(
      "Schemes:\n"
      "  int4-g<G>-sym  tinyllm: <name> becomes <name>.qweight + <name>.scales\n"
      "  nf4, fp4       bitsandbytes 4-bit, the layout transformers saves for Linear4bit:\n"
      "                 <name> (packed) + .absmax, .quant_map, .quant_state.bitsandbytes__<type>\n"
      "                 (+ .nested_absmax, .nested_quant_map with --nested)\n"
      "  int8           LLM.int8 (Linear8bitLt): <p>.weight I8 + <p>.SCB + <p>.weight_format\n"
      "By default the 2-D *_proj.weight matrices are quantized; embeddings, norms, lm_head and\n"
      "1-D tensors are kept. --include REGEX replaces that selection, --exclude REGEX removes\n"
      "from it (searches). Prints the quantization error per tensor and the size saved.\n\n"
      "Examples:\n"
      "  tlio quantize model.safetensors model-int4.safetensors --scheme int4-g32-sym\n"
      "  tlio quantize model.safetensors model-nf4.safetensors --scheme nf4 --nested");
  struct Args {
    std::string in, out, scheme, include, exclude, storage = "U8";
    uint64_t blocksize = 64;
    bool nested = false;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("IN", a->in, "Input file")->required();
  cmd->add_option("OUT", a->out, "Output file")->required();
  cmd->add_option("--scheme", a->scheme, "int4-g<group>-sym (e.g. int4-g32-sym), nf4, fp4 or int8")
      ->required()
      ->check([](const std::string& v) -> std::string {
        return tlio::is_quant_scheme(v) ? std::string{}
                                        : "unknown scheme '" + v + "' (int4-g<group>-sym, nf4, fp4, int8)";
      });
  auto* blocksize = cmd->add_option("--blocksize", a->blocksize, "nf4/fp4: values per absmax, 32..4096 (default 64)")
      ->check([](const std::string& v) -> std::string {
        try {
          return tlio::is_bnb_4bit_blocksize(std::stoull(v)) ? std::string{}
                                                             : "--blocksize must be 32, 64, ..., 4096";
        } catch (...) {
          return "--blocksize must be 32, 64, ..., 4096";
        }
      });
  auto* nested = cmd->add_flag("--nested", a->nested, "nf4/fp4: quantize the absmax too (double quantization)");
  auto* storage = cmd->add_option("--storage", a->storage, "nf4/fp4: dtype the packed bytes are stored as (default U8)")
      ->check([](const std::string& v) -> std::string {
        auto d = tlio::parse_dtype_alias(v);
        return d ? std::string{} : "unknown dtype '" + v + "'";
      });
  cmd->add_option("--include", a->include, "Quantize the tensors matching REGEX instead");
  cmd->add_option("--exclude", a->exclude, "Do not quantize tensors matching REGEX");
  cmd->callback([a, blocksize, nested, storage, &exit_code] {
    exit_code = guarded([&] {
      tlio::File src = tlio::File::open(a->in);
      ProgressBar bar("quantizing");
      const bool bnb4 = a->scheme == "nf4" || a->scheme == "fp4";
      if (!bnb4 && (blocksize->count() || nested->count() || storage->count()))
        throw tlio::Error(tlio::ErrorCode::invalid_argument, Rule::none, {}, std::nullopt,
                          "--blocksize, --nested and --storage apply to nf4 and fp4 only");
      tlio::QuantizeOptions o;
      o.scheme = a->scheme;
      o.include = a->include;
      o.exclude = a->exclude;
      o.progress = [&bar](uint64_t done, uint64_t total) { bar.update(done, total); };
      o.blocksize = a->blocksize;
      o.nested = a->nested;
      o.storage = *tlio::parse_dtype_alias(a->storage);
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
  cmd->footer("Every quantized weight becomes a plain tensor again, in its logical shape:\n"
              "  int4: <name>.qweight + <name>.scales -> <name> (scheme from the metadata or shapes)\n"
              "  nf4/fp4: recognised by <name>.quant_state.bitsandbytes__<type>; restored in the\n"
              "    original dtype and shape its quant_state records unless --dtype is given\n"
              "  int8: <p>.weight + <p>.SCB [+ <p>.weight_format] -> <p>.weight\n"
              "Without --dtype, int4 and int8 weights are written as F32. The quant metadata key is\n"
              "dropped.\n\n"
              "Example: tlio dequantize model-int4.safetensors model.safetensors --dtype BF16");
  struct Args {
    std::string in, out, dtype;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("IN", a->in, "Input file")->required();
  cmd->add_option("OUT", a->out, "Output file")->required();
  cmd->add_option("--dtype", a->dtype, "F32, F16 or BF16 (default: see below)")
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
      std::optional<tlio::Dtype> dtype;
      if (!a->dtype.empty()) dtype = tlio::parse_dtype_alias(a->dtype);
      tlio::DequantizeReport r = tlio::dequantize_file(
          src, a->out, dtype,
          [&bar](uint64_t done, uint64_t total) { bar.update(done, total); });
      bar.finish();
      fmt::print("{} -> {}: {} weights restored{}\n", a->in, a->out, r.restored,
                 r.scheme.empty() ? std::string(" (no quantized weights)") : " from " + r.scheme);
      return kExitOk;
    });
  });
}

}  // namespace tlio::cli

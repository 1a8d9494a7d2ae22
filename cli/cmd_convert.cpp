// cli/cmd_convert.cpp: `tlio convert IN OUT [--dtype D] [--include REGEX] [--exclude REGEX]`.
#include <fmt/core.h>

#include "cli_util.hpp"
#include "commands.hpp"
#include "tlio/convert_file.hpp"
#include "tlio/file.hpp"
#include "tlio/writer.hpp"

namespace tlio::cli {

void add_convert(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "convert", "Rewrite a file canonically, optionally converting floating tensors");
  cmd->footer(
      "Without --dtype the tensors are copied as they are. With --dtype, floating tensors are\n"
      "converted (rounding to nearest even); integer and BOOL tensors and the companions of\n"
      "quantized weights are copied. --include/--exclude select by regex search on names.\n"
      "OUT may be IN itself: the new file replaces it atomically.\n\n"
      "Examples:\n  tlio convert old.safetensors canonical.safetensors\n"
      "  tlio convert model.safetensors model-bf16.safetensors --dtype bf16 --exclude norm");
  struct Args {
    std::string in, out, dtype, include, exclude;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("IN", a->in, "Input file or http(s):// URL")->required();
  add_token_option(cmd);
  cmd->add_option("OUT", a->out, "Output file")->required();
  cmd->add_option("--dtype", a->dtype,
                  "Target floating dtype: F32, F16, BF16, F64, F8_E4M3, F8_E5M2, ... "
                  "(also bf16, float16, float8_e4m3fn, ...)")
      ->check([](const std::string& v) -> std::string {
        auto d = tlio::parse_dtype_alias(v);
        if (!d) return "unknown dtype '" + v + "'";
        if (!tlio::is_floating(*d) || !tlio::can_convert(tlio::Dtype::F32, *d))
          return "not a floating dtype tlio converts to: '" + v + "'";
        return {};
      });
  auto* include = cmd->add_option("--include", a->include, "Convert only tensors matching REGEX");
  auto* exclude = cmd->add_option("--exclude", a->exclude, "Do not convert tensors matching REGEX");
  include->needs(cmd->get_option("--dtype"));
  exclude->needs(cmd->get_option("--dtype"));
  cmd->callback([a, &exit_code] {
    exit_code = guarded([&] {
      tlio::File src = tlio::File::open(a->in, open_options());
      if (a->dtype.empty()) {
        tlio::rewrite_canonical(src, a->out);
        fmt::print("{} -> {}: {} tensors, {}\n", a->in, a->out, src.tensors().size(),
                   human_size(src.header().data_size()));
        return kExitOk;
      }
      tlio::ConvertFileOptions options;
      options.dtype = *tlio::parse_dtype_alias(a->dtype);
      options.include = a->include;
      options.exclude = a->exclude;
      ProgressBar bar("converting");
      options.progress = [&bar](uint64_t done, uint64_t total) { bar.update(done, total); };
      tlio::ConvertFileReport r = tlio::convert_file(src, a->out, options);
      bar.finish();
      fmt::print("{} -> {}: {} tensors converted to {}, {} kept; {} -> {}\n", a->in, a->out,
                 r.converted, tlio::dtype_name(options.dtype), r.kept,
                 human_size(r.data_bytes_in), human_size(r.data_bytes_out));
      return kExitOk;
    });
  });
}

}  // namespace tlio::cli

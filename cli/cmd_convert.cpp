// cli/cmd_convert.cpp: `tlio convert IN OUT`: rewrite a valid file canonically.
#include <fmt/core.h>

#include "cli_util.hpp"
#include "commands.hpp"
#include "tlio/file.hpp"
#include "tlio/writer.hpp"

namespace tlio::cli {

void add_convert(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("convert", "Rewrite a file canonically (streaming, atomic)");
  cmd->footer(
      "OUT may be IN itself: the new file replaces it atomically.\n\n"
      "Example: tlio convert old.safetensors canonical.safetensors");
  auto in = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  cmd->add_option("IN", *in, "Input file")->required();
  cmd->add_option("OUT", *out, "Output file")->required();
  cmd->callback([in, out, &exit_code] {
    exit_code = guarded([&] {
      tlio::File src = tlio::File::open(*in);
      tlio::rewrite_canonical(src, *out);
      fmt::print("{} -> {}: {} tensors, {}\n", *in, *out, src.tensors().size(),
                 human_size(src.header().data_size()));
      return kExitOk;
    });
  });
}

}  // namespace tlio::cli

// cli/cmd_validate.cpp: `tlio validate FILE...`.
#include <fmt/core.h>

#include "cli_util.hpp"
#include "commands.hpp"
#include "tlio/file.hpp"
#include "tlio/model.hpp"
#include "tlio/quant.hpp"

namespace tlio::cli {

void add_validate(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("validate", "Check files against every rule of the format and of quantized weights");
  cmd->footer(
      "A directory is checked as a model: config.json, tokenizer rule, shard index, and the\n"
              "tensors its architecture needs.\n"
              "Prints 'FILE: OK' per valid file; one line per invalid or unreadable file on "
      "stderr naming the rule.\nExit 0 when all are valid, 1 otherwise.\n\n"
      "Example: tlio validate model.safetensors");
  auto files = std::make_shared<std::vector<std::string>>();
  cmd->add_option("FILE", *files, "Files or model directories (or http(s):// URLs) to check")->required();
  add_token_option(cmd);
  cmd->callback([files, &exit_code] {
    int rc = kExitOk;
    for (const auto& path : *files) {
      int one = guarded([&] {
        std::string name;  // as messages show it: a URL without its credentials
        if (tlio::is_model_directory(path, open_options())) {
          const tlio::Model m = tlio::Model::open(path, open_options());
          m.check();  // files, index, tokenizer, architecture
          name = m.name();
        } else {
          tlio::File f = tlio::File::open(path, open_options());
          tlio::find_quantized_weights(f);  // consistency of quantized weights
          name = f.name();
        }
        fmt::print("{}: OK\n", name);
        return kExitOk;
      });
      if (one != kExitOk) rc = kExitFailure;
    }
    std::fflush(stdout);
    exit_code = rc;
  });
}

}  // namespace tlio::cli

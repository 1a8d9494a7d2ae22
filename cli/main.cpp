// cli/main.cpp: the tlio command line. A client of the public API only (include/tlio).
#include <CLI/CLI.hpp>

#include "cli_util.hpp"
#include "commands.hpp"
#include "signals.hpp"
#include "tlio/version.hpp"

int main(int argc, char** argv) {
  using namespace tlio::cli;
  install_signal_handlers();
  CLI::App app{"tlio: strict, fast safetensors tool", "tlio"};
  app.set_version_flag("--version", std::string("tlio ") + tlio::version());
  app.require_subcommand(1);
  app.fallthrough(false);
  int exit_code = kExitOk;
  add_validate(app, exit_code);
  add_inspect(app, exit_code);
  add_convert(app, exit_code);
  add_metadata(app, exit_code);
  add_quantize(app, exit_code);
  add_dequantize(app, exit_code);
  add_shard(app, exit_code);
  add_merge(app, exit_code);
  add_bigram(app, exit_code);
  add_cat(app, exit_code);
  add_stats(app, exit_code);
  add_diff(app, exit_code);
  add_import(app, exit_code);
  auto is_subcommand = [&app](const std::string& word) {
    for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
      if (sub->get_name() == word) return true;
    return false;
  };
  if (argc >= 2 && argv[1][0] != '-' && !is_subcommand(argv[1])) {
    print_error(std::string("unknown subcommand '") + argv[1] + "' (see tlio --help)");
    return kExitUsage;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitUsage;
  }
  return exit_code;
}

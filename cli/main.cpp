// cli/main.cpp: the tlio command line. A client of the public API only (include/tlio).
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "cli_util.hpp"
#include "commands.hpp"
#include "signals.hpp"
#include "tlio/interrupt.hpp"
#include "tlio/version.hpp"
#include "tlio/weights.hpp"

namespace {

using tlio::cli::Command;

// Every command, in the order `tlio help` lists them (one a line: past 20, clang-format packs
// them into columns).
// clang-format off
constexpr Command kCommands[] = {
    {"validate", tlio::cli::add_validate},
    {"inspect", tlio::cli::add_inspect},
    {"convert", tlio::cli::add_convert},
    {"metadata", tlio::cli::add_metadata},
    {"quantize", tlio::cli::add_quantize},
    {"dequantize", tlio::cli::add_dequantize},
    {"shard", tlio::cli::add_shard},
    {"merge", tlio::cli::add_merge},
    {"bigram", tlio::cli::add_bigram},
    {"cat", tlio::cli::add_cat},
    {"stats", tlio::cli::add_stats},
    {"slice", tlio::cli::add_slice},
    {"diff", tlio::cli::add_diff},
    {"report", tlio::cli::add_report},
    {"import", tlio::cli::add_import},
    {"transcode", tlio::cli::add_transcode},
    {"hash", tlio::cli::add_hash},
    {"verify", tlio::cli::add_verify},
    {"sign", tlio::cli::add_sign},
    {"completion", tlio::cli::add_completion},
};
// clang-format on

// The commands this run needs. Building one (its options, validators and help text) takes tens
// of microseconds, and building all of them was most of a short run's own time
// (docs/benchmarks.md, "Process start-up"), so a run that names its command builds that one and
// `tlio --version` none. The listings, the help, the hint for a mistyped name and the completion
// scripts see every command.
std::span<const Command> commands_needed(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--version") == 0) return {};
  if (argc >= 2 && std::strcmp(argv[1], "completion") != 0)
    for (const Command& c : kCommands)
      if (std::strcmp(argv[1], c.name) == 0) return {&c, 1};
  return kCommands;
}

// The commands with their one-line descriptions.
std::string command_list(CLI::App& app) {
  std::string out =
      "tlio: strict, fast safetensors tool\n\nUsage: tlio COMMAND [OPTIONS] ...\n\nCommands:\n";
  size_t width = 0;
  for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
    width = std::max(width, sub->get_name().size());
  for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
    out += "  " + sub->get_name() + std::string(width + 2 - sub->get_name().size(), ' ') +
           sub->get_description() + "\n";
  out +=
      "\ntlio help COMMAND (or tlio COMMAND --help) shows a command's options; tlio --version;\n"
      "tlio help --man prints the manual page; tlio completion bash|zsh|fish a completion script.\n";
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tlio::cli;
  install_signal_handlers();
  CLI::App app{"tlio: strict, fast safetensors tool", "tlio"};
  app.set_version_flag("-V,--version", std::string("tlio ") + tlio::version());
  app.require_subcommand(1);
  // Every usage error as the others: "tlio: ...", then where the command's help is.
  app.failure_message([](const CLI::App* top, const CLI::Error& e) {
    std::string command;
    for (const CLI::App* a = top; a;) {
      const std::vector<CLI::App*> parsed = a->get_subcommands();
      a = parsed.empty() ? nullptr : parsed.front();
      if (a) command += " " + a->get_name();
    }
    return fmt::format("tlio: {}\n{}\n", e.what(),
                       command.empty() ? "tlio help lists the commands"
                                       : fmt::format("tlio{} --help shows its options", command));
  });
  app.fallthrough(false);
  int exit_code = kExitOk;
  for (const Command& c : commands_needed(argc, argv)) c.add(app, exit_code);
  const std::vector<CLI::App*> commands = app.get_subcommands([](CLI::App*) { return true; });
  for (CLI::App* sub : commands)
    sub->preparse_callback([name = sub->get_name()](size_t) { set_running_command(name); });
  const auto find_command = [&](const std::string& word) -> CLI::App* {
    for (CLI::App* sub : commands)
      if (sub->get_name() == word) return sub;
    return nullptr;
  };
  std::vector<std::string> command_names;
  for (const CLI::App* sub : commands) command_names.push_back(sub->get_name());
  const auto unknown_command = [&](const std::string& word) {
    const std::string near = tlio::closest_name(word, command_names);
    print_error("unknown command '" + word + "'" +
                (near.empty() ? "" : "; did you mean '" + near + "'?") + " (tlio help lists them)");
    return kExitUsage;
  };
  // `tlio help`: the commands, a line each; `tlio help COMMAND`: its help. `tlio` alone is a
  // usage error: the list goes to stderr.
  if (argc == 1) {
    std::fprintf(stderr, "%s", command_list(app).c_str());
    return kExitUsage;
  }
  if (argc == 2 && std::string(argv[1]) == "help") {
    std::printf("%s", command_list(app).c_str());
    return kExitOk;
  }
  if (argc == 3 && std::string(argv[1]) == "help" && std::string(argv[2]) == "--man") {
    std::printf("%s", man_page(app).c_str());
    return kExitOk;
  }
  if (argc >= 2 && std::string(argv[1]) == "help") {
    CLI::App* sub = find_command(argv[2]);
    if (!sub) return unknown_command(argv[2]);
    std::printf("%s", sub->help().c_str());
    return kExitOk;
  }
  if (argv[1][0] != '-' && !find_command(argv[1])) return unknown_command(argv[1]);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ExtrasError& e) {
    // An option the command does not have: name the nearest one it does.
    std::string hint;
    for (CLI::App* sub : commands) {
      if (!sub->parsed()) continue;
      std::vector<std::string> options;
      for (const CLI::Option* o : sub->get_options())
        for (const std::string& n : o->get_lnames()) options.push_back("--" + n);
      for (int i = 2; i < argc && hint.empty(); ++i) {
        const std::string word = argv[i];
        if (word.rfind("--", 0) != 0 || std::find(options.begin(), options.end(),
                                                  word.substr(0, word.find('='))) != options.end())
          continue;
        const std::string near = tlio::closest_name(word.substr(0, word.find('=')), options);
        if (!near.empty()) hint = "did you mean '" + near + "'?";
      }
    }
    const int rc = app.exit(e);
    if (!hint.empty()) print_error(hint);
    return rc == 0 ? kExitOk : kExitUsage;
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitUsage;
  }
  if (const int sig = stopped_by_signal()) {
    tlio::remove_temporary_files();
    print_error("interrupted during an upload: the unfinished upload was aborted");
    return 128 + sig;
  }
  return exit_code;
}

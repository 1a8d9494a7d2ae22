// cli/commands.hpp: each subcommand registers its options and its action on the app.
// An action stores its exit code in `exit_code`.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace tlio::cli {

/// A command's name and what registers it (main.cpp lists them all).
struct Command {
  const char* name;
  void (*add)(CLI::App& app, int& exit_code);
};

void add_validate(CLI::App& app, int& exit_code);
void add_inspect(CLI::App& app, int& exit_code);
void add_convert(CLI::App& app, int& exit_code);
void add_metadata(CLI::App& app, int& exit_code);
void add_quantize(CLI::App& app, int& exit_code);
void add_dequantize(CLI::App& app, int& exit_code);
void add_shard(CLI::App& app, int& exit_code);
void add_merge(CLI::App& app, int& exit_code);
void add_bigram(CLI::App& app, int& exit_code);
void add_cat(CLI::App& app, int& exit_code);
void add_stats(CLI::App& app, int& exit_code);
void add_slice(CLI::App& app, int& exit_code);
void add_diff(CLI::App& app, int& exit_code);
void add_report(CLI::App& app, int& exit_code);
void add_import(CLI::App& app, int& exit_code);
void add_transcode(CLI::App& app, int& exit_code);
void add_hash(CLI::App& app, int& exit_code);
void add_verify(CLI::App& app, int& exit_code);
void add_sign(CLI::App& app, int& exit_code);
void add_completion(CLI::App& app, int& exit_code);

/// The manual page (roff) for every command, from the app's definitions: `tlio help --man`.
std::string man_page(CLI::App& app);

}  // namespace tlio::cli

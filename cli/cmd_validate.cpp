// cli/cmd_validate.cpp: `tlio validate FILE|DIR...`.
#include <fmt/core.h>

#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "cli_util.hpp"
#include "commands.hpp"
#include "tlio/checkpoint.hpp"
#include "tlio/file.hpp"
#include "tlio/model.hpp"
#include "tlio/quant.hpp"

namespace tlio::cli {

namespace {

// A local folder: every model directory, shard index and safetensors file in it, each on its
// own line.
int validate_folder(const std::string& dir) {
  std::vector<tlio::FolderItem> items;
  if (int rc = guarded([&] {
        items = tlio::folder_contents(dir);
        if (items.empty())
          throw tlio::Error(tlio::ErrorCode::not_found, tlio::Rule::none, {}, std::nullopt,
                            "no safetensors file, shard index or model directory in it", dir);
        return kExitOk;
      });
      rc != kExitOk)
    return rc;
  int rc = kExitOk;
  for (const tlio::FolderItem& item : items) {
    const std::string shown = item.path.empty() ? dir : join_path(dir, item.path);
    const int one = guarded([&] {
      tlio::check_folder_item(dir, item);
      fmt::print("{}: OK{}\n", shown,
                 item.kind == tlio::FolderItem::Kind::model   ? " (model directory)"
                 : item.kind == tlio::FolderItem::Kind::index ? " (index and its shards)"
                                                              : "");
      return kExitOk;
    });
    if (one != kExitOk) rc = kExitFailure;
  }
  return rc;
}

}  // namespace

void add_validate(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("validate", "Check files against every rule of the format and of quantized weights");
  cmd->footer(
      "A local folder is checked whole, recursively: each model directory (a transformers\n"
      "config.json beside its weights: config keys, tokenizer rule, shard index and the tensors\n"
      "its architecture needs), each shard index with its shards, each other .safetensors file.\n"
      "So a PEFT adapter, a diffusers pipeline or a folder made by `tlio shard` validates too;\n"
      "a config.json of another kind (_class_name, peft_type) is not a model's.\n"
              "Prints 'FILE: OK' per valid file; one line per invalid or unreadable file on "
      "stderr naming the rule.\nExit 0 when all are valid, 1 otherwise.\n\n"
      "Example: tlio validate model.safetensors");
  auto files = std::make_shared<std::vector<std::string>>();
  cmd->add_option("FILE", *files, "Files or model directories (or http(s):// URLs) to check")->required();
  add_token_option(cmd);
  cmd->callback([files, &exit_code] {
    int rc = kExitOk;
    for (const auto& path : *files) {
      std::error_code ec;
      // (A folder whose weights are a PyTorch checkpoint is opened as a model, which says to
      // convert it with `tlio import`.)
      if (std::filesystem::is_directory(path, ec) && !tlio::checkpoint_in_directory(path)) {
        if (validate_folder(path) != kExitOk) rc = kExitFailure;
        continue;
      }
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

// cli/cmd_validate.cpp: `tlio validate FILE|DIR...`.
#include <fmt/core.h>
#include <fmt/format.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "cli_util.hpp"
#include "commands.hpp"
#include "gguf_listing.hpp"
#include "tlio/checkpoint.hpp"
#include "tlio/file.hpp"
#include "tlio/model.hpp"
#include "tlio/quant.hpp"
#include "tlio/weights_kind.hpp"

namespace tlio::cli {

namespace {

// What validate found for one file, model directory or index, as a line or a JSON object.
struct Verdict {
  std::string shown, kind;
  bool json = false;
  std::vector<std::string>* json_items = nullptr;
  std::string note = {};  // set by the body: a form tlio recognises but does not decode

  // `body` checks and returns the name as messages show it (a URL without its credentials).
  int check(const std::function<std::string()>& body) {
    if (!json) {
      return guarded([&] {
        const std::string name = body();
        fmt::print("{}: OK{}{}\n", name,
                   kind == "model"   ? " (model directory)"
                   : kind == "index" ? " (index and its shards)"
                   : kind == "gguf"  ? " (GGUF)"
                   : kind == "dcp"   ? " (distributed checkpoint, every chunk)"
                                     : "",
                   note.empty() ? "" : "; " + note);
        return kExitOk;
      });
    }
    std::string error, name = shown;
    const int rc = guarded_json(
        [&] {
          name = body();
          return kExitOk;
        },
        error);
    json_items->push_back(fmt::format("{{\"path\":{},\"kind\":\"{}\",\"ok\":{},\"error\":{}{}}}",
                                      json_string(name), kind, rc == kExitOk, error,
                                      note.empty() ? "" : ",\"note\":" + json_string(note)));
    return rc;
  }
};

// A local folder: every model directory, shard index and safetensors file in it, each on its
// own line.
int validate_folder(const std::string& dir, bool json, std::vector<std::string>& json_items) {
  std::vector<tlio::FolderItem> items;
  // Only a folder that cannot be listed (or holds nothing) is reported as the folder itself.
  const auto list = [&] {
    items = tlio::folder_contents(dir);
    if (items.empty())
      throw tlio::Error(tlio::ErrorCode::not_found, tlio::Rule::none, {}, std::nullopt,
                        "no safetensors file, shard index or model directory in it", dir);
  };
  if (json) {
    std::string error;
    if (guarded_json(
            [&] {
              list();
              return kExitOk;
            },
            error) != kExitOk) {
      json_items.push_back(
          fmt::format("{{\"path\":{},\"kind\":\"folder\",\"ok\":false,\"error\":{}}}",
                      json_string(dir), error));
      return kExitFailure;
    }
  } else if (guarded([&] {
               list();
               return kExitOk;
             }) != kExitOk) {
    return kExitFailure;
  }
  int rc = kExitOk;
  for (const tlio::FolderItem& item : items) {
    const std::string shown = item.path.empty() ? dir : join_path(dir, item.path);
    const char* kind = item.kind == tlio::FolderItem::Kind::model   ? "model"
                       : item.kind == tlio::FolderItem::Kind::index ? "index"
                                                                    : "file";
    Verdict v{shown, kind, json, &json_items};
    const auto check = [&] {
      v.note = tlio::check_folder_item(dir, item);
      return shown;
    };
    if (v.check(check) != kExitOk) rc = kExitFailure;
  }
  return rc;
}

}  // namespace

void add_validate(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "validate", "Check files against every rule of the format and of quantized weights");
  cmd->footer(
      "A local folder is checked whole, recursively: each model directory (a transformers\n"
      "config.json beside its weights: config keys, tokenizer rule, shard index and the tensors\n"
      "its architecture needs), each shard index with its shards, each other .safetensors file.\n"
      "So a PEFT adapter, a diffusers pipeline or a folder made by `tlio shard` validates too;\n"
      "a config.json of another kind (_class_name, peft_type) is not a model's.\n"
      "Prints 'FILE: OK' per valid file; one line per invalid or unreadable file on "
      "stderr naming the rule.\nExit 0 when all are valid, 1 otherwise.\n\n"
      "Example: tlio validate model.safetensors");
  struct Args {
    std::vector<std::string> files;
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option(
         "FILE", a->files,
         "Files, model directories or folders (or URLs: http(s)://, s3://, gs://, hf://) to check")
      ->required();
  add_remote_options(cmd);
  cmd->add_flag(
      "--json", a->json,
      "One JSON document on stdout: {\"ok\", \"results\": [{\"path\", \"kind\", \"ok\", \"error\"}]}");
  cmd->callback([a, &exit_code] {
    int rc = kExitOk;
    std::vector<std::string> items;
    for (const auto& path : a->files) {
      std::error_code ec;
      // (A folder whose weights are a PyTorch checkpoint is opened as a model, which says to
      // convert it with `tlio import`.)
      if (tlio::is_dcp_checkpoint(path)) {  // metadata, every chunk's archive, the tiling
        Verdict v{display_location(path), "dcp", a->json, &items};
        if (v.check([&] {
              tlio::ImportOptions everything;
              everything.import_all = everything.skip_unsupported = true;
              const tlio::CheckpointContents c = tlio::read_checkpoint(path, everything);
              if (!c.skipped.empty())
                v.note = fmt::format("{} tensor{} of a dtype tlio does not write", c.skipped.size(),
                                     c.skipped.size() == 1 ? "" : "s");
              return display_location(path);
            }) != kExitOk)
          rc = kExitFailure;
        continue;
      }
      if (std::filesystem::is_directory(path, ec) && !tlio::checkpoint_in_directory(path)) {
        if (validate_folder(path, a->json, items) != kExitOk) rc = kExitFailure;
        continue;
      }
      Verdict v{display_location(path), "file", a->json, &items};
      const tlio::WeightsKind kind = [&] {
        try {
          return tlio::weights_kind(path, open_options());
        } catch (const std::exception&) {
          return tlio::WeightsKind::safetensors;  // a server out of reach: the open below says why
        }
      }();
      if (kind == tlio::WeightsKind::model_folder) v.kind = "model";
      if (kind == tlio::WeightsKind::gguf) v.kind = "gguf";
      const int one = v.check([&] {
        if (kind == tlio::WeightsKind::gguf) {  // every rule ggml's reader enforces
          const tlio::GgufFile g = tlio::GgufFile::open(path, open_options());
          return g.name();
        }
        if (kind == tlio::WeightsKind::model_folder) {
          const tlio::Model m = tlio::Model::open(path, open_options());
          m.check();  // files, index, tokenizer, architecture
          v.note = m.undecoded();
          return m.name();
        }
        tlio::File f = tlio::File::open(path, open_options());
        try {
          tlio::find_quantized_weights(f);  // consistency of quantized weights
        } catch (const tlio::Error& e) {    // a well-formed file of a form tlio does not decode
          if (e.code() != tlio::ErrorCode::unsupported || e.rule() != tlio::Rule::quant) throw;
          v.note = e.detail();
        }
        return f.name();
      });
      if (one != kExitOk) rc = kExitFailure;
    }
    if (a->json)
      fmt::print("{{\"ok\":{},\"results\":[{}]}}\n", rc == kExitOk, fmt::join(items, ","));
    std::fflush(stdout);
    exit_code = rc;
  });
}

}  // namespace tlio::cli

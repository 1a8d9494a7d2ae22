// cli/cmd_metadata.cpp: `tlio metadata FILE [--set KEY=VALUE ...] [--delete KEY ...] [-o OUT]
// [--json]`: prints a file's metadata, or edits it (tlio::edit_file: in place when the header
// keeps its length, else one atomic rewrite whose tensor bytes are copied in the kernel; a model
// folder's shards each edited, tlio::edit_folder, published as a set).
#include <fmt/core.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "cli_util.hpp"
#include "commands.hpp"
#include "tlio/edit.hpp"
#include "tlio/file.hpp"
#include "tlio/rewrite.hpp"
#include "tlio/weights.hpp"

namespace tlio::cli {

namespace {

std::string metadata_json(const tlio::Metadata& meta) {
  std::string out = "{";
  for (const auto& [k, v] : meta)
    out += (out.size() > 1 ? "," : "") + json_string(k) + ":" + json_string(v);
  return out + "}";
}

void print_metadata(const tlio::Metadata& meta, const std::string& name) {
  if (meta.empty()) {
    fmt::print("{}: no metadata\n", name);
    return;
  }
  size_t width = 0;
  for (const auto& entry : meta) width = std::max(width, display_width(display_name(entry.first)));
  for (const auto& [k, v] : meta)
    fmt::print("{}  {}\n", pad(display_name(k), width), display_name(v));
}

}  // namespace

void add_metadata(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("metadata", "Print or edit a file's metadata (__metadata__)");
  cmd->footer(
      "Without --set or --delete, prints the metadata: a key and its value a line, in key\n"
      "order. With them, edits FILE in place, or writes OUT with -o. In place, a header that\n"
      "keeps its length is written over the old one (one write, synced); otherwise the file is\n"
      "rewritten atomically, its tensor bytes copied in the kernel.\n\n"
      "Examples:\n  tlio metadata model.safetensors\n"
      "  tlio metadata model.safetensors --set format=pt --delete training_step\n"
      "  tlio metadata model.safetensors --set license=mit -o licensed.safetensors");
  struct Args {
    std::string file, out;
    std::vector<std::string> set, del;
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("FILE", a->file, "File or URL (edits need a local FILE or -o)")->required();
  add_remote_options(cmd);
  cmd->add_option("--set", a->set, "Add or replace KEY=VALUE (repeatable; split at the first =)")
      ->check([](const std::string& v) -> std::string {
        return v.find('=') == std::string::npos ? "expected KEY=VALUE, got '" + v + "'" : "";
      });
  cmd->add_option("--delete", a->del, "Remove KEY (repeatable; it must exist)");
  cmd->add_option("-o,--output", a->out, "Write the edited file here instead of editing FILE")
      ->type_name("PATH");
  cmd->add_flag("--json", a->json, "One JSON document on stdout");
  cmd->callback([a, &exit_code] {
    exit_code = guarded_output(a->json, [&] {
      if (a->set.empty() && a->del.empty()) {
        if (!a->out.empty()) {
          throw UsageError("-o needs --set or --delete (nothing to edit)");
        }
        const std::unique_ptr<const Weights> w = Weights::open(a->file, open_options());
        if (a->json)
          fmt::print("{{\"path\":{},\"metadata\":{}}}\n", json_string(w->name()),
                     metadata_json(w->metadata()));
        else
          print_metadata(w->metadata(), w->name());
        return kExitOk;
      }
      check_stdout_output(a->out, a->json);
      tlio::EditOptions options;
      options.open = open_options();
      for (const std::string& kv : a->set) {
        const size_t eq = kv.find('=');
        options.set_metadata[kv.substr(0, eq)] = kv.substr(eq + 1);
      }
      options.delete_metadata = a->del;
      const std::string written = a->out.empty() ? a->file : a->out;  // local: no URL here
      tlio::FolderFiles files;  // a folder's: every shard's metadata, the folder rewritten as a set
      const tlio::EditReport r =
          tlio::edit_weights(a->file, a->out, options, folder_options("", &files));
      if (!files.empty()) {
        if (a->json)
          fmt::print("{{\"input\":{},\"output\":{},\"in_place\":false,\"metadata\":{}{}}}\n",
                     json_string(display_location(a->file)), json_string(written),
                     metadata_json(r.metadata), json_files_member(files));
        else {
          const auto shards = std::count_if(files.begin(), files.end(), [](const std::string& f) {
            return f.ends_with(".safetensors");
          });
          fmt::print(
              report_stream(written),
              "{}: metadata written in {} shard{} ({} key{} in the first), {} tensors copied\n",
              written, shards, shards == 1 ? "" : "s", r.metadata.size(),
              r.metadata.size() == 1 ? "" : "s", r.kept);
        }
        return kExitOk;
      }
      if (a->json) {
        fmt::print("{{\"input\":{},\"output\":{},\"in_place\":{},\"metadata\":{}}}\n",
                   json_string(display_location(a->file)), json_string(written), r.in_place,
                   metadata_json(r.metadata));
      } else {
        fmt::print(report_stream(a->out), "{}: metadata {} ({} key{}){}\n", written,
                   r.in_place ? "rewritten in place" : "written", r.metadata.size(),
                   r.metadata.size() == 1 ? "" : "s",
                   r.in_place ? "" : fmt::format(", {} tensors copied", r.kept));
      }
      return kExitOk;
    });
  });
}

}  // namespace tlio::cli

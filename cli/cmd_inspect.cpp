// cli/cmd_inspect.cpp: `tlio inspect FILE|DIR [--json]`.
#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <system_error>
#include <vector>

#include "arg_checks.hpp"
#include "cli_util.hpp"
#include "commands.hpp"
#include "gguf_listing.hpp"
#include "inspect_listing.hpp"
#include "tlio/checkpoint.hpp"
#include "tlio/file.hpp"
#include "tlio/model.hpp"
#include "tlio/quant.hpp"
#include "tlio/weights_kind.hpp"

namespace tlio::cli {
namespace {

void print_metadata_json(std::string& out, const tlio::File& f) {
  out += "\"metadata\":";
  if (!f.header().has_metadata()) {
    out += "null";
    return;
  }
  out += "{";
  bool first = true;
  for (const auto& [k, v] : f.metadata()) {
    if (!first) out += ",";
    first = false;
    out += json_string(k) + ":" + json_string(v);
  }
  out += "}";
}

// A PyTorch checkpoint: its tensors as `tlio import` would write them, nothing converted.
// `json_out`: where its JSON document goes (printed when null).
void print_checkpoint(const std::string& path, bool json, std::string* json_out = nullptr) {
  const tlio::CheckpointContents c = tlio::read_checkpoint(path);
  if (json) {
    std::string out = fmt::format("{{\"checkpoint\":{},\"format\":\"{}\",\"tensors\":[",
                                  json_string(display_location(path)), c.format);
    for (size_t i = 0; i < c.tensors.size(); ++i) {
      const auto& t = c.tensors[i];
      out += fmt::format("{}{{\"name\":{},\"dtype\":\"{}\",\"shape\":[{}],\"contiguous\":{}{}{}}}",
                         i ? "," : "", json_string(t.name), tlio::dtype_name(t.dtype),
                         fmt::join(t.shape, ","), t.contiguous,
                         t.alias_of.empty() ? "" : ",\"alias_of\":" + json_string(t.alias_of),
                         t.chunks ? fmt::format(",\"chunks\":{}", t.chunks) : "");
    }
    out += fmt::format("],\"dropped_values\":{}}}", c.dropped_values);
    if (json_out)
      *json_out += out;
    else
      fmt::print("{}\n", out);
    return;
  }
  if (c.format == "dcp")
    fmt::print(
        "checkpoint: {} (PyTorch distributed checkpoint, DCP; convert it with `tlio import`)\n",
        display_location(path));
  else
    fmt::print("checkpoint: {} (PyTorch, {} format; convert it with `tlio import`)\n",
               display_location(path), c.format);
  if (!c.chosen_key.empty())
    fmt::print("model part: key \"{}\" (also: {}; --all in `tlio import` takes everything)\n",
               c.chosen_key, fmt::join(c.other_keys, ", "));
  std::vector<std::vector<std::string>> rows = {{"name", "dtype", "shape", "note"}};
  for (const auto& t : c.tensors)
    rows.push_back({t.name, std::string(tlio::dtype_name(t.dtype)), shape_text(t.shape),
                    !t.alias_of.empty() ? "alias of " + t.alias_of
                    : t.chunks > 1      ? fmt::format("{} chunks", t.chunks)
                    : t.contiguous      ? ""
                                        : "strided"});
  std::vector<size_t> width(4, 0);
  for (const auto& r : rows)
    for (size_t i = 0; i < 4; ++i) width[i] = std::max(width[i], r[i].size());
  fmt::print("tensors:\n");
  for (const auto& r : rows)
    fmt::print("  {:<{}}  {:<{}}  {:<{}}  {}\n", r[0], width[0], r[1], width[1], r[2], width[2],
               r[3]);
  fmt::print("total:     {} tensors; {} other values; {} skipped\n", c.tensors.size(),
             c.dropped_values, c.skipped.size());
}

std::string json_of(const Listing& l, const InspectOptions& opt) {
  std::string out = "{";
  out +=
      fmt::format("\"path\":{},\"kind\":\"{}\",", json_string(l.name), l.config ? "model" : "file");
  if (l.config) {
    const auto& c = *l.config;
    out += fmt::format("\"config\":{{\"arch\":{},\"vocab_size\":{}", json_string(c.arch),
                       c.vocab_size);
    if (c.course) out += fmt::format(",\"tokenizer\":{}", json_string(c.tokenizer));
    if (c.arch == "llama")
      out += fmt::format(
          ",\"hidden_size\":{},\"intermediate_size\":{},\"num_hidden_layers\":{},"
          "\"num_attention_heads\":{},\"num_key_value_heads\":{},\"head_dim\":{},"
          "\"tie_word_embeddings\":{}",
          c.hidden_size, c.intermediate_size, c.num_hidden_layers, c.num_attention_heads,
          c.num_key_value_heads, c.head_dim, c.tie_word_embeddings ? "true" : "false");
    out += "},\"files\":[";
    for (size_t i = 0; i < l.files.size(); ++i)
      out += fmt::format("{}{{\"name\":{},\"size\":{}}}", i ? "," : "",
                         json_string(l.files[i].first), l.files[i].second);
    out += "],";
  } else {
    out += fmt::format("\"file_size\":{},\"header_size\":{},\"canonical\":{},", l.file_size,
                       l.header_size, *l.canonical ? "true" : "false");
  }
  out += fmt::format("\"data_size\":{},", l.data_size);
  print_metadata_json(out, *l.first);
  out += ",\"tensors\":[";
  std::map<std::string_view, uint64_t> counts;
  size_t written = 0;
  for (size_t i = 0; i < l.tensors.size(); ++i) {
    const auto& t = *l.tensors[i].info;
    ++counts[tlio::dtype_name(t.dtype)];
    if (opt.filter && !std::regex_search(t.name, *opt.filter)) continue;
    out += fmt::format(
        "{}{{\"name\":{},\"dtype\":\"{}\",\"shape\":[{}],\"data_offsets\":[{},{}],"
        "\"bytes\":{}{}}}",
        written++ ? "," : "", json_string(t.name), tlio::dtype_name(t.dtype),
        fmt::join(t.shape, ","), t.begin, t.end, t.byte_size(),
        l.tensors[i].file.empty() ? "" : ",\"file\":" + json_string(l.tensors[i].file));
  }
  out += "],\"quantized\":[";
  for (size_t i = 0; i < l.quantized.size(); ++i) {
    const auto& q = l.quantized[i];
    std::vector<std::string> stored;
    for (const auto& s : q.stored) stored.push_back(json_string(s));
    out += fmt::format(
        "{}{{\"name\":{},\"scheme\":{},\"shape\":[{}],\"dtype\":\"{}\","
        "\"blocksize\":{},\"nested\":{},\"stored\":[{}],\"bytes\":{}}}",
        i ? "," : "", json_string(q.name), json_string(q.scheme.name()), fmt::join(q.shape, ","),
        tlio::dtype_name(q.dtype), q.scheme.block(), q.scheme.nested() ? "true" : "false",
        fmt::join(stored, ","), q.stored_bytes);
  }
  out += "],\"dtype_counts\":{";
  bool first = true;
  for (const auto& [d, n] : counts) {
    out += fmt::format("{}\"{}\":{}", first ? "" : ",", d, n);
    first = false;
  }
  out += fmt::format("}},\"tensor_count\":{},\"total_bytes\":{},\"parameters\":{}}}",
                     l.tensors.size(), l.data_size, parameter_count(l));
  return out;
}

}  // namespace

// A checkpoint is listed as import reads it: --group and --filter, which work on safetensors
// tables, are refused rather than ignored.
void refuse_table_options(const std::string& path, const InspectOptions& opt) {
  if (opt.group || opt.filter)
    throw UsageError(
        fmt::format("{} is a PyTorch checkpoint: {} applies to safetensors files and folders "
                    "(`tlio import` it first)",
                    path, opt.group ? "--group" : "--filter"));
}

// One file or model directory: its table, or its JSON document appended to `json_out` (printed
// when that is null).
int inspect_one(const std::string& path, const InspectOptions& opt, std::string* json_out) {
  const bool json = opt.json;
  Listing l;
  l.name = path;
  std::optional<tlio::File> file;
  std::optional<tlio::Model> model;
  if (const auto checkpoint = tlio::checkpoint_in_directory(path)) {
    refuse_table_options(path, opt);
    print_checkpoint(checkpoint->string(), json, json_out);
    return kExitOk;
  }
  if (tlio::is_dcp_checkpoint(path)) {
    refuse_table_options(path, opt);
    print_checkpoint(path, json, json_out);
    return kExitOk;
  }
  const tlio::WeightsKind kind = tlio::weights_kind(path, open_options());
  if (kind == tlio::WeightsKind::gguf) {
    if (opt.group || opt.filter)
      throw UsageError(fmt::format("{} is a GGUF file: {} applies to safetensors files and folders",
                                   path, opt.group ? "--group" : "--filter"));
    print_gguf(tlio::GgufFile::open(path, open_options()), json, json_out);
    return kExitOk;
  }
  if (kind == tlio::WeightsKind::model_folder) {
    model.emplace(tlio::Model::open(path, open_options()));
    l.name = model->name();  // a URL without its credentials
    l.config = &model->config();
    l.first = &model->files()[0];
    for (size_t i = 0; i < model->files().size(); ++i) {
      const auto& f = model->files()[i];
      l.files.emplace_back(model->file_names()[i], f.file_size());
      l.data_size += f.header().data_size();
      for (const auto& t : f.tensors()) l.tensors.push_back({&t, model->file_names()[i]});
    }
    if (model->undecoded().empty())
      l.quantized = model->quantized();
    else
      print_error("warning: " + model->undecoded() +
                  " (tensors listed as stored)");  // named, not read
  } else if (tlio::looks_like_checkpoint(path)) {
    refuse_table_options(path, opt);
    print_checkpoint(path, json, json_out);
    return kExitOk;
  } else {
    file.emplace(tlio::File::open(path, open_options()));
    l.first = &*file;
    l.name = file->name();  // a URL without its credentials
    l.file_size = file->file_size();
    l.header_size = file->header_size();
    l.data_size = file->header().data_size();
    l.canonical = file->is_canonical();
    for (const auto& t : file->tensors()) l.tensors.push_back({&t, {}});
    try {
      l.quantized = tlio::find_quantized_weights(*file);
    } catch (const tlio::Error& e) {  // valid file, inconsistent quantization: list it plainly
      print_error(std::string("warning: ") + e.what() + " (quantized weights not grouped)");
    }
  }
  if (!json) {
    print_table(l, opt);
  } else if (json_out) {
    *json_out += json_of(l, opt);
  } else {
    fmt::print("{}\n", json_of(l, opt));
  }
  return kExitOk;
}

// A folder that is not one model directory: each model directory, each shard of each index and
// each other safetensors file in it, one after another (JSON: {"folder", "items": [...]}).
int inspect_folder(const std::string& dir, const std::vector<tlio::FolderItem>& items,
                   const InspectOptions& opt, std::string* json_out) {
  const bool json = opt.json;
  if (items.empty())
    throw tlio::Error(tlio::ErrorCode::not_found, tlio::Rule::none, {}, std::nullopt,
                      "no safetensors file, shard index or model directory in it", dir);
  std::string out = fmt::format("{{\"path\":{},\"kind\":\"folder\",\"items\":[", json_string(dir));
  bool first = true;
  int rc = kExitOk;
  for (const tlio::FolderItem& item : items) {
    const std::string shown = item.path.empty() ? dir : join_path(dir, item.path);
    // A model as one listing; an index's shards, each as a file.
    std::vector<std::string> paths{shown};
    if (item.kind == tlio::FolderItem::Kind::index) {
      paths.clear();
      for (const std::string& shard : item.files) paths.push_back(join_path(dir, shard));
    }
    const char* kind = item.kind == tlio::FolderItem::Kind::model   ? "model"
                       : item.kind == tlio::FolderItem::Kind::index ? "index"
                                                                    : "file";
    // An item that cannot be read is reported and the others still listed (exit 1).
    if (json) {
      std::string listings, error = "null";
      bool ok = true;
      for (size_t i = 0; i < paths.size() && ok; ++i) {
        std::string one;
        ok = guarded_json([&] { return inspect_one(paths[i], opt, &one); }, error) == kExitOk;
        listings += (i ? "," : "") + one;
      }
      if (!ok) rc = kExitFailure;
      out +=
          fmt::format("{}{{\"kind\":\"{}\",\"path\":{},\"ok\":{},\"error\":{},\"listings\":[{}]}}",
                      first ? "" : ",", kind, json_string(shown), ok, error, ok ? listings : "");
    } else {
      if (!first) fmt::print("\n");
      if (item.kind == tlio::FolderItem::Kind::index)
        fmt::print("index:     {} ({} shard{})\n", shown, paths.size(),
                   paths.size() == 1 ? "" : "s");
      for (const std::string& p : paths) {
        std::fflush(stdout);
        if (guarded([&] { return inspect_one(p, opt, nullptr); }) != kExitOk) rc = kExitFailure;
      }
    }
    first = false;
  }
  if (json) {
    out += "]}";
    if (json_out)
      *json_out += out;
    else
      fmt::print("{}\n", out);
  }
  return rc;
}

void add_inspect(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("inspect", "Show metadata and the table of tensors");
  cmd->footer(
      "FILE may be a model directory (config.json + weights, sharded or not), or any\n"
      "local folder: then each model directory, shard index and safetensors file in it\n"
      "is listed, recursively (a PEFT adapter, a diffusers pipeline, `tlio shard` output).\n"
      "Quantized weights are shown as one logical tensor with their stored parts.\n\n"
      "Examples:\n  tlio inspect model.safetensors\n  tlio inspect model/ --json");
  struct Args {
    std::vector<std::string> paths;
    bool json = false, group = false;
    std::string filter;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("FILE", a->paths,
                  "Files, model directories or folders (or URLs: http(s)://, s3://, gs://, hf://)")
      ->required();
  add_remote_options(cmd);
  cmd->add_flag("--json", a->json, "One JSON document on stdout (sizes in bytes)");
  cmd->add_flag("--group", a->group,
                "Fold numbered layers: model.layers.{0..31}.mlp.up_proj.weight  32x [..]");
  cmd->add_option("--filter", a->filter, "Only tensors whose name REGEX finds")
      ->check(regex_check());
  cmd->callback([a, &exit_code] {
    InspectOptions opt;
    opt.json = a->json;
    opt.group = a->group;
    if (!a->filter.empty()) {
      opt.filter.emplace(a->filter, std::regex::ECMAScript);  // checked while parsing
      opt.filter_text = a->filter;
    }
    // Several inputs: one after another (JSON: {"inputs": [...]}); the exit code is the worst.
    std::string docs;
    int rc = kExitOk;
    for (size_t i = 0; i < a->paths.size(); ++i) {
      const std::string& path = a->paths[i];
      std::string one;
      std::string* sink = a->json && a->paths.size() > 1 ? &one : nullptr;
      if (!a->json && i > 0) fmt::print("\n");
      std::fflush(stdout);
      const auto body = [&] {
        std::error_code ec;
        if (std::filesystem::is_directory(path, ec) && !tlio::checkpoint_in_directory(path) &&
            !tlio::is_dcp_checkpoint(path)) {
          const std::vector<tlio::FolderItem> items = tlio::folder_contents(path);
          const bool one_model = items.size() == 1 &&
                                 items[0].kind == tlio::FolderItem::Kind::model &&
                                 items[0].path.empty();
          if (!one_model) return inspect_folder(path, items, opt, sink);
        }
        return inspect_one(path, opt, sink);
      };
      int r;
      if (sink) {  // several inputs as JSON: a failure is that input's entry
        std::string error, message;
        r = guarded_json(body, error, &message);
        if (r == kExitUsage)
          print_usage_error(message);
        else if (r != kExitOk)
          print_error(message);
        if (r != kExitOk)
          one = fmt::format("{{\"path\":{},\"error\":{}}}", json_string(display_location(path)),
                            error);
      } else {
        r = guarded_output(a->json, body);
      }
      if (r != kExitOk) rc = r;
      if (sink && !one.empty()) docs += (docs.empty() ? "" : ",") + one;
    }
    if (a->json && a->paths.size() > 1) fmt::print("{{\"inputs\":[{}]}}\n", docs);
    exit_code = rc;
  });
}

}  // namespace tlio::cli

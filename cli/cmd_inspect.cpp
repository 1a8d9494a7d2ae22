// cli/cmd_inspect.cpp: `tlio inspect FILE|DIR [--json]`.
#include <algorithm>
#include <map>
#include <set>

#include <fmt/core.h>

#include <filesystem>
#include <system_error>
#include <fmt/format.h>

#include "cli_util.hpp"
#include "commands.hpp"
#include "tlio/checkpoint.hpp"
#include "tlio/file.hpp"
#include "tlio/model.hpp"
#include "tlio/quant.hpp"

namespace tlio::cli {
namespace {

std::string shape_text(std::span<const uint64_t> shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

// How a quantized weight is described in the dtype column: the scheme and, for bitsandbytes,
// its block, nesting and the dtype dequantize restores.
std::string quant_label(const tlio::QuantizedWeight& q) {
  switch (q.scheme.kind()) {
    case tlio::SchemeKind::bnb_4bit:
      return fmt::format("{} bs{}{} -> {}", q.scheme.name(), q.scheme.block(),
                         q.scheme.nested() ? " nested" : "", tlio::dtype_name(q.dtype));
    case tlio::SchemeKind::llm_int8:
      return "int8 (LLM.int8)";
    case tlio::SchemeKind::int4:
      break;
  }
  return q.scheme.name();
}

// The distinct schemes, in order of appearance.
std::string scheme_list(const std::vector<tlio::QuantizedWeight>& quantized) {
  std::vector<std::string> schemes;
  for (const auto& q : quantized)
    if (std::find(schemes.begin(), schemes.end(), q.scheme.name()) == schemes.end())
      schemes.push_back(q.scheme.name());
  return fmt::format("{}", fmt::join(schemes, ", "));
}

// What inspect shows, for a file or a model directory alike.
struct Listing {
  struct Entry {
    const tlio::TensorInfo* info;
    std::string file;  // empty for a single file
  };
  std::string name;
  const tlio::File* first = nullptr;  // metadata source
  uint64_t file_size = 0, header_size = 0, data_size = 0;
  std::optional<bool> canonical;
  std::vector<std::pair<std::string, uint64_t>> files;  // directories: name, size
  const tlio::ModelConfig* config = nullptr;
  std::vector<Entry> tensors;  // file order (directories: by file, then offset)
  std::vector<tlio::QuantizedWeight> quantized;
};

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
void print_checkpoint(const std::string& path, bool json) {
  const tlio::CheckpointContents c = tlio::read_checkpoint(path);
  if (json) {
    std::string out = fmt::format("{{\"checkpoint\":{},\"format\":\"{}\",\"tensors\":[", json_string(path), c.format);
    for (size_t i = 0; i < c.tensors.size(); ++i) {
      const auto& t = c.tensors[i];
      out += fmt::format("{}{{\"name\":{},\"dtype\":\"{}\",\"shape\":[{}],\"contiguous\":{}{}}}",
                         i ? "," : "", json_string(t.name), tlio::dtype_name(t.dtype),
                         fmt::join(t.shape, ","), t.contiguous,
                         t.alias_of.empty() ? "" : ",\"alias_of\":" + json_string(t.alias_of));
    }
    out += fmt::format("],\"dropped_values\":{}}}", c.dropped_values);
    fmt::print("{}\n", out);
    return;
  }
  fmt::print("checkpoint: {} (PyTorch, {} format; convert it with `tlio import`)\n", path, c.format);
  std::vector<std::vector<std::string>> rows = {{"name", "dtype", "shape", "note"}};
  for (const auto& t : c.tensors)
    rows.push_back({t.name, std::string(tlio::dtype_name(t.dtype)), shape_text(t.shape),
                    !t.alias_of.empty() ? "alias of " + t.alias_of : t.contiguous ? "" : "strided"});
  std::vector<size_t> width(4, 0);
  for (const auto& r : rows)
    for (size_t i = 0; i < 4; ++i) width[i] = std::max(width[i], r[i].size());
  fmt::print("tensors:\n");
  for (const auto& r : rows)
    fmt::print("  {:<{}}  {:<{}}  {:<{}}  {}\n", r[0], width[0], r[1], width[1], r[2], width[2], r[3]);
  fmt::print("total:     {} tensors; {} other values; {} skipped\n", c.tensors.size(), c.dropped_values,
             c.skipped.size());
}

std::string json_of(const Listing& l) {
  std::string out = "{";
  out += fmt::format("\"{}\":{},", l.config ? "dir" : "file", json_string(l.name));
  if (l.config) {
    const auto& c = *l.config;
    out += fmt::format("\"config\":{{\"arch\":{},\"vocab_size\":{}", json_string(c.arch), c.vocab_size);
    if (c.course) out += fmt::format(",\"tokenizer\":{}", json_string(c.tokenizer));
    if (c.arch == "llama")
      out += fmt::format(",\"hidden_size\":{},\"intermediate_size\":{},\"num_hidden_layers\":{},"
                         "\"num_attention_heads\":{},\"num_key_value_heads\":{},\"head_dim\":{},"
                         "\"tie_word_embeddings\":{}",
                         c.hidden_size, c.intermediate_size, c.num_hidden_layers,
                         c.num_attention_heads, c.num_key_value_heads, c.head_dim,
                         c.tie_word_embeddings ? "true" : "false");
    out += "},\"files\":[";
    for (size_t i = 0; i < l.files.size(); ++i)
      out += fmt::format("{}{{\"name\":{},\"size\":{}}}", i ? "," : "", json_string(l.files[i].first),
                         l.files[i].second);
    out += "],";
  } else {
    out += fmt::format("\"file_size\":{},\"header_size\":{},\"canonical\":{},", l.file_size,
                       l.header_size, *l.canonical ? "true" : "false");
  }
  out += fmt::format("\"data_size\":{},", l.data_size);
  print_metadata_json(out, *l.first);
  out += ",\"tensors\":[";
  std::map<std::string_view, uint64_t> counts;
  for (size_t i = 0; i < l.tensors.size(); ++i) {
    const auto& t = *l.tensors[i].info;
    out += fmt::format("{}{{\"name\":{},\"dtype\":\"{}\",\"shape\":[{}],\"data_offsets\":[{},{}],"
                       "\"bytes\":{}{}}}",
                       i ? "," : "", json_string(t.name), tlio::dtype_name(t.dtype),
                       fmt::join(t.shape, ","), t.begin, t.end, t.byte_size(),
                       l.tensors[i].file.empty() ? "" : ",\"file\":" + json_string(l.tensors[i].file));
    ++counts[tlio::dtype_name(t.dtype)];
  }
  out += "],\"quantized\":[";
  for (size_t i = 0; i < l.quantized.size(); ++i) {
    const auto& q = l.quantized[i];
    std::vector<std::string> stored;
    for (const auto& s : q.stored) stored.push_back(json_string(s));
    out += fmt::format("{}{{\"name\":{},\"scheme\":{},\"shape\":[{}],\"dtype\":\"{}\","
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
  out += fmt::format("}},\"tensor_count\":{},\"total_bytes\":{}}}", l.tensors.size(), l.data_size);
  return out;
}

void print_table(const Listing& l) {
  if (l.config) {
    const auto& c = *l.config;
    fmt::print("model:     {} ({}{})\n", l.name, c.arch,
               c.arch == "llama" ? fmt::format(", {} layers", c.num_hidden_layers) : "");
    if (c.arch == "llama")
      fmt::print("config:    vocab {}, hidden {}, intermediate {}, heads {} (kv {}), head_dim {}{}\n",
                 c.vocab_size, c.hidden_size, c.intermediate_size, c.num_attention_heads,
                 c.num_key_value_heads, c.head_dim, c.tie_word_embeddings ? ", tied embeddings" : "");
    else
      fmt::print("config:    vocab {}\n", c.vocab_size);
    if (c.course) fmt::print("tokenizer: {}\n", c.tokenizer);
    fmt::print("files:\n");
    for (const auto& [name, size] : l.files) fmt::print("  {} ({})\n", name, human_size(size));
  } else {
    fmt::print("file:      {}\n", l.name);
    fmt::print("size:      {} (header {}, data {})\n", human_size(l.file_size),
               human_size(l.header_size), human_size(l.data_size));
    fmt::print("canonical: {}\n", *l.canonical ? "yes" : "no");
  }
  const tlio::File& f = *l.first;
  if (f.metadata().empty()) {
    fmt::print("metadata:  {}\n", f.header().has_metadata() ? "(empty)" : "(none)");
  } else {
    fmt::print("metadata:\n");
    for (const auto& [k, v] : f.metadata()) fmt::print("  {}: {}\n", display_name(k), display_name(v));
  }
  // Quantized weights are shown once, as their logical tensor, with their parts under them.
  std::map<std::string, const tlio::QuantizedWeight*> part_of;
  for (const auto& q : l.quantized)
    for (const auto& s : q.stored) part_of[s] = &q;
  struct Row {
    std::string name, dtype, shape, bytes, where;
  };
  std::vector<Row> rows;
  const bool dir = l.config != nullptr;
  rows.push_back({"name", "dtype", "shape", "bytes", dir ? "file" : "offset"});
  std::set<const tlio::QuantizedWeight*> shown;
  std::map<std::string_view, uint64_t> counts;
  for (const auto& e : l.tensors) {
    const auto& t = *e.info;
    ++counts[tlio::dtype_name(t.dtype)];
    auto q = part_of.find(t.name);
    if (q != part_of.end()) {
      if (!shown.insert(q->second).second) continue;
      rows.push_back({display_name(q->second->name), quant_label(*q->second), shape_text(q->second->shape),
                      human_size(q->second->stored_bytes), ""});
      for (const auto& s : q->second->stored)
        for (const auto& e2 : l.tensors)
          if (e2.info->name == s)
            rows.push_back({"  " + display_name(s), std::string(tlio::dtype_name(e2.info->dtype)),
                            shape_text(e2.info->shape), human_size(e2.info->byte_size()),
                            dir ? e2.file : std::to_string(e2.info->begin)});
      continue;
    }
    rows.push_back({display_name(t.name), std::string(tlio::dtype_name(t.dtype)), shape_text(t.shape),
                    human_size(t.byte_size()), dir ? e.file : std::to_string(t.begin)});
  }
  size_t w[4] = {0, 0, 0, 0};
  for (const auto& r : rows) {
    w[0] = std::max(w[0], display_width(r.name));
    w[1] = std::max(w[1], r.dtype.size());
    w[2] = std::max(w[2], r.shape.size());
    w[3] = std::max(w[3], r.bytes.size());
  }
  fmt::print("tensors:\n");
  for (const auto& r : rows)
    fmt::print("  {}  {}  {}  {}  {}\n", pad(r.name, w[0]), pad(r.dtype, w[1]), pad(r.shape, w[2]),
               pad(r.bytes, w[3], true), r.where);
  std::vector<std::string> parts;
  for (const auto& [d, n] : counts) parts.push_back(fmt::format("{} {}", n, d));
  fmt::print("total:     {} tensor{}, {}{}{}", l.tensors.size(), l.tensors.size() == 1 ? "" : "s",
             human_size(l.data_size), parts.empty() ? "" : "; ", fmt::join(parts, ", "));
  if (!l.quantized.empty())
    fmt::print("; {} quantized weight{} ({})", l.quantized.size(), l.quantized.size() == 1 ? "" : "s",
               scheme_list(l.quantized));
  fmt::print("\n");
}

}  // namespace

// One file or model directory: its table, or its JSON document appended to `json_out` (printed
// when that is null).
int inspect_one(const std::string& path, bool json, std::string* json_out) {
  Listing l;
  l.name = path;
  std::optional<tlio::File> file;
  std::optional<tlio::Model> model;
  if (const auto checkpoint = tlio::checkpoint_in_directory(path)) {
    print_checkpoint(checkpoint->string(), json);
    return kExitOk;
  }
  if (tlio::is_model_directory(path, open_options())) {
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
    l.quantized = model->quantized();
  } else if (tlio::looks_like_checkpoint(path)) {
    print_checkpoint(path, json);
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
    print_table(l);
  } else if (json_out) {
    *json_out += json_of(l);
  } else {
    fmt::print("{}\n", json_of(l));
  }
  return kExitOk;
}

// A folder that is not one model directory: each model directory, each shard of each index and
// each other safetensors file in it, one after another (JSON: {"folder", "items": [...]}).
int inspect_folder(const std::string& dir, const std::vector<tlio::FolderItem>& items, bool json) {
  if (items.empty())
    throw tlio::Error(tlio::ErrorCode::not_found, tlio::Rule::none, {}, std::nullopt,
                      "no safetensors file, shard index or model directory in it", dir);
  std::string out = fmt::format("{{\"folder\":{},\"items\":[", json_string(dir));
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
      std::string listings;
      bool ok = true;
      for (size_t i = 0; i < paths.size() && ok; ++i) {
        std::string one;
        ok = guarded([&] { return inspect_one(paths[i], true, &one); }) == kExitOk;
        listings += (i ? "," : "") + one;
      }
      if (!ok) rc = kExitFailure;
      out += fmt::format("{}{{\"kind\":\"{}\",\"path\":{},\"ok\":{},\"listings\":[{}]}}",
                         first ? "" : ",", kind, json_string(shown), ok, ok ? listings : "");
    } else {
      if (!first) fmt::print("\n");
      if (item.kind == tlio::FolderItem::Kind::index)
        fmt::print("index:     {} ({} shard{})\n", shown, paths.size(), paths.size() == 1 ? "" : "s");
      for (const std::string& p : paths) {
        std::fflush(stdout);
        if (guarded([&] { return inspect_one(p, false, nullptr); }) != kExitOk) rc = kExitFailure;
      }
    }
    first = false;
  }
  if (json) fmt::print("{}]}}\n", out);
  return rc;
}

void add_inspect(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("inspect", "Show metadata and the table of tensors");
  cmd->footer("FILE may be a model directory (config.json + weights, sharded or not), or any\n"
              "local folder: then each model directory, shard index and safetensors file in it\n"
              "is listed, recursively (a PEFT adapter, a diffusers pipeline, `tlio shard` output).\n"
              "Quantized weights are shown as one logical tensor with their stored parts.\n\n"
              "Examples:\n  tlio inspect model.safetensors\n  tlio inspect model/ --json");
  auto path = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  cmd->add_option("FILE", *path, "File or model directory (or an http(s):// URL)")->required();
  add_token_option(cmd);
  cmd->add_flag("--json", *json, "Machine-readable output (sizes in bytes)");
  cmd->callback([path, json, &exit_code] {
    exit_code = guarded([&] {
      std::error_code ec;
      if (std::filesystem::is_directory(*path, ec) && !tlio::checkpoint_in_directory(*path)) {
        const std::vector<tlio::FolderItem> items = tlio::folder_contents(*path);
        const bool one_model = items.size() == 1 && items[0].kind == tlio::FolderItem::Kind::model &&
                               items[0].path.empty();
        if (!one_model) return inspect_folder(*path, items, *json);
      }
      return inspect_one(*path, *json, nullptr);
    });
  });
}

}  // namespace tlio::cli

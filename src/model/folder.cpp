// model/folder.cpp: any folder of weights, as validate and inspect see it: model directories
// (a transformers config.json beside safetensors weights), shard indexes with their shards, and
// lone safetensors files, found recursively (a PEFT adapter, a diffusers pipeline, a folder
// made by `tlio shard`, a plain folder of files).
#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/json_doc.hpp"
#include "io/folder_walk.hpp"
#include "io/os_file.hpp"
#include "model/layout.hpp"
#include "model/shard_index.hpp"
#include "tlio/error.hpp"
#include "tlio/model.hpp"
#include "tlio/quant.hpp"

namespace tlio {

namespace {

constexpr std::string_view kSafetensorsSuffix = ".safetensors";
constexpr std::string_view kIndexSuffix = ".safetensors.index.json";

// Whether the config.json of `dir` is a transformers model's. Other libraries write a
// config.json too: diffusers components (`_class_name`) and PEFT adapters (`peft_type`); those
// folders are not model directories. One that cannot be parsed counts as a model's, so that
// Model::open says what is wrong with it.
bool is_model_config(const std::filesystem::path& dir) {
  try {
    const std::string text = detail::read_text_file(dir / detail::kConfigFile);
    const detail::JsonDoc doc(text, (dir / detail::kConfigFile).string(), Rule::model);
    simdjson::dom::object top;
    if (doc.root().get_object().get(top)) return true;
    for (const char* other : {"_class_name", "peft_type"})
      if (top[other].error() == simdjson::SUCCESS) return false;
    return true;
  } catch (const Error&) {
    return true;
  }
}

// The shards an index names, or none when it cannot be read (its check says why).
std::vector<std::string> shards_of(const std::filesystem::path& index) {
  try {
    return detail::parse_shard_index(detail::read_text_file(index), index.string()).files;
  } catch (const Error&) {
    return {};
  }
}

bool hidden(const std::filesystem::path& p) {
  const std::string name = p.filename().string();
  return !name.empty() && name[0] == '.';
}

}  // namespace

std::vector<FolderItem> folder_contents(const std::filesystem::path& dir) {
  // The files of each folder, by folder (relative paths, '/'-separated); hidden entries (.git,
  // .cache, temporaries of unfinished writes) and folders that cannot be read passed over.
  std::map<std::string, std::vector<std::string>> files_of;
  files_of[""];
  detail::walk_local_folder(dir, true, [&](const detail::FolderEntry& e) {
    const std::filesystem::path rel(e.rel);
    if (hidden(rel)) return false;
    if (e.kind == detail::FolderEntry::Kind::folder)
      files_of[e.rel];
    else if (e.kind == detail::FolderEntry::Kind::file ||
             e.kind == detail::FolderEntry::Kind::link_to_file)
      files_of[rel.parent_path().generic_string()].push_back(rel.filename().string());
    return true;
  });

  std::vector<FolderItem> items;
  for (auto& entry : files_of) {
    // (Named, not bound: clang 14 cannot capture structured bindings in the lambdas below.)
    const std::string& folder = entry.first;
    std::vector<std::string>& names = entry.second;
    std::sort(names.begin(), names.end(), natural_less);
    const std::filesystem::path here = folder.empty() ? dir : dir / folder;
    const auto join = [&](const std::string& name) {
      return folder.empty() ? name : folder + "/" + name;
    };
    const auto has = [&](std::string_view name) {
      return std::find(names.begin(), names.end(), name) != names.end();
    };
    std::set<std::string, std::less<>> covered;
    // An index and the shards it names, as one item.
    const auto add_index = [&](FolderItem::Kind kind, const std::string& path,
                               const std::string& name) {
      FolderItem item{kind, path, {}};
      covered.insert(name);
      for (std::string& s : shards_of(here / name)) {
        item.files.push_back(join(s));
        covered.insert(std::move(s));
      }
      items.push_back(std::move(item));
    };
    if (has(detail::kConfigFile) &&
        (has(detail::kSingleWeightsFile) || has(detail::kShardIndexFile)) &&
        is_model_config(here)) {
      if (has(detail::kShardIndexFile)) {
        add_index(FolderItem::Kind::model, folder, detail::kShardIndexFile);
      } else {
        items.push_back({FolderItem::Kind::model, folder, {join(detail::kSingleWeightsFile)}});
        covered.insert(detail::kSingleWeightsFile);
      }
    }
    for (const std::string& name : names)
      if (name.ends_with(kIndexSuffix) && !covered.contains(name))
        add_index(FolderItem::Kind::index, join(name), name);
    for (const std::string& name : names)
      if (name.ends_with(kSafetensorsSuffix) && !covered.contains(name))
        items.push_back({FolderItem::Kind::file, join(name), {join(name)}});
  }
  std::stable_sort(items.begin(), items.end(), [](const FolderItem& a, const FolderItem& b) {
    return natural_less(a.path, b.path);
  });
  return items;
}

std::string check_folder_item(const std::filesystem::path& dir, const FolderItem& item) {
  const std::filesystem::path where = item.path.empty() ? dir : dir / item.path;
  // The form of a well-formed item that tlio does not decode is named, not a failure.
  const auto undecoded = [](const auto& find) -> std::string {
    try {
      find();
    } catch (const Error& e) {
      if (e.code() != ErrorCode::unsupported || e.rule() != Rule::quant) throw;
      return e.detail();
    }
    return {};
  };
  switch (item.kind) {
    case FolderItem::Kind::model: {
      const Model m = Model::open(where);
      m.check();
      return m.undecoded();
    }
    case FolderItem::Kind::index: {
      const detail::ModelLocation folder(detail::Location::local(where.parent_path()), {});
      const std::optional<detail::WeightFiles> shards =
          detail::open_indexed_weights(folder, where.filename().string());
      if (!shards)
        throw_io("cannot open", where.string(),
                 std::make_error_code(std::errc::no_such_file_or_directory));
      return undecoded(
          [&] { find_quantized_weights(shards->files); });  // parts may be in any shard
    }
    case FolderItem::Kind::file:
      return undecoded([&] { find_quantized_weights(File::open(where)); });
  }
  return {};
}

}  // namespace tlio

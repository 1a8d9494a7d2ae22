// model/folder.cpp: any folder of weights, as validate and inspect see it: model directories
// (a transformers config.json beside safetensors weights), shard indexes with their shards, and
// lone safetensors files, found recursively (a PEFT adapter, a diffusers pipeline, a folder
// made by `tlio shard`, a plain folder of files).
#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <system_error>
#include <vector>

#include "common/json_doc.hpp"
#include "io/os_file.hpp"
#include "model/json_util.hpp"
#include "model/layout.hpp"
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
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    throw_io("not a directory", dir.string(),
             ec ? ec : std::make_error_code(std::errc::not_a_directory));
  // The files of each folder, by folder (relative paths, '/'-separated).
  std::map<std::string, std::vector<std::string>> files_of;
  files_of[""];
  std::filesystem::recursive_directory_iterator it(
      dir, std::filesystem::directory_options::skip_permission_denied, ec);
  if (ec) throw_io("cannot list", dir.string(), ec);
  for (const std::filesystem::recursive_directory_iterator end; it != end; it.increment(ec)) {
    if (ec) throw_io("cannot list", dir.string(), ec);
    const std::filesystem::path& p = it->path();
    if (hidden(p)) {  // .git, .cache, temporaries of unfinished writes
      if (it->is_directory(ec)) it.disable_recursion_pending();
      continue;
    }
    const std::string rel = std::filesystem::relative(p, dir, ec).generic_string();
    if (ec) throw_io("cannot list", p.string(), ec);
    if (it->is_directory(ec)) {
      files_of[rel];
    } else if (it->is_regular_file(ec)) {
      const std::string parent = std::filesystem::path(rel).parent_path().generic_string();
      files_of[parent].push_back(p.filename().string());
    }
  }
  if (ec) throw_io("cannot list", dir.string(), ec);  // the step that ended the walk failed

  std::vector<FolderItem> items;
  for (auto& entry : files_of) {
    // (Named, not bound: clang 14 cannot capture structured bindings in the lambdas below.)
    const std::string& folder = entry.first;
    std::vector<std::string>& names = entry.second;
    std::sort(names.begin(), names.end(), natural_less);
    const std::filesystem::path here = folder.empty() ? dir : dir / folder;
    const auto join = [&](const std::string& name) { return folder.empty() ? name : folder + "/" + name; };
    const auto has = [&](std::string_view name) {
      return std::find(names.begin(), names.end(), name) != names.end();
    };
    std::set<std::string, std::less<>> covered;
    // An index and the shards it names, as one item.
    const auto add_index = [&](FolderItem::Kind kind, const std::string& path, const std::string& name) {
      FolderItem item{kind, path, {}};
      covered.insert(name);
      for (std::string& s : shards_of(here / name)) {
        item.files.push_back(join(s));
        covered.insert(std::move(s));
      }
      items.push_back(std::move(item));
    };
    if (has(detail::kConfigFile) && (has(detail::kSingleWeightsFile) || has(detail::kShardIndexFile)) &&
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

void check_folder_item(const std::filesystem::path& dir, const FolderItem& item) {
  const std::filesystem::path where = item.path.empty() ? dir : dir / item.path;
  switch (item.kind) {
    case FolderItem::Kind::model:
      Model::open(where).check();
      return;
    case FolderItem::Kind::index: {
      const detail::ShardIndex index =
          detail::parse_shard_index(detail::read_text_file(where), where.string());
      std::vector<File> shards;
      for (const std::string& name : index.files) shards.push_back(File::open(where.parent_path() / name));
      detail::check_shard_index(index, shards, where.string());
      for (const File& f : shards) find_quantized_weights(f);
      return;
    }
    case FolderItem::Kind::file:
      find_quantized_weights(File::open(where));
      return;
  }
}

}  // namespace tlio

// model/shard_index.cpp: the shard index read, checked and written.
#include "model/shard_index.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <map>

#include "common/json_text.hpp"
#include "io/os_file.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {

namespace dom = simdjson::dom;

ShardIndex read_shard_index(const std::filesystem::path& path) {
  return parse_shard_index(read_text_file(path), path.string());
}

ShardIndex parse_shard_index(std::string_view text, const std::string& source) {
  JsonDoc doc(text, source, Rule::index);
  ShardIndex index;
  dom::element meta;
  if (doc.root()["metadata"].get(meta) == simdjson::SUCCESS && !meta.is_null()) {
    if (!meta.is_object()) doc.fail("metadata", "metadata is not an object");
    dom::element total;
    if (meta["total_size"].get(total) == simdjson::SUCCESS) {
      uint64_t n;
      if (total.get_uint64().get(n))
        doc.fail("total_size", "total_size is not a non-negative integer");
      index.total_size = n;
    }
  }
  dom::object map;
  if (doc.root()["weight_map"].get_object().get(map))
    doc.fail("weight_map", "weight_map is missing or not an object");
  for (auto f : map) {
    std::string_view file;
    if (f.value.get_string().get(file))
      doc.fail(std::string(f.key),
               fmt::format("the file of {} is not a string", quote_name(f.key)));
    const bool plain =
        !file.empty() && file != "." && file != ".." && file.find('/') == std::string_view::npos &&
        file.find('\\') == std::string_view::npos && file.find('\0') == std::string_view::npos;
    if (!plain)
      doc.fail(std::string(f.key), fmt::format("tensor {} maps to {}: not a plain file name in the "
                                               "model directory",
                                               quote_name(f.key), quote_name(file)));
    index.weight_map.emplace_back(std::string(f.key), std::string(file));
  }
  std::sort(index.weight_map.begin(), index.weight_map.end());
  for (const auto& [t, f] : index.weight_map) index.files.push_back(f);
  std::sort(index.files.begin(), index.files.end());
  index.files.erase(std::unique(index.files.begin(), index.files.end()), index.files.end());
  return index;
}

void check_shard_index(const ShardIndex& index,
                       const std::vector<std::vector<std::string_view>>& names,
                       const std::string& source) {
  auto fail = [&](const std::string& tensor, std::string detail) {
    throw Error(ErrorCode::format, Rule::index, tensor, std::nullopt, std::move(detail), source);
  };
  std::map<std::string_view, std::string_view> file_of;  // tensor -> the shard holding it
  for (size_t i = 0; i < names.size(); ++i)
    for (const std::string_view name : names[i]) {
      auto [it, fresh] = file_of.emplace(name, index.files[i]);
      if (!fresh)
        fail(std::string(name), fmt::format("tensor {} is in {} and in {}", quote_name(name),
                                            it->second, index.files[i]));
    }
  for (const auto& [tensor, file] : index.weight_map) {
    auto it = file_of.find(tensor);
    if (it == file_of.end() || it->second != file)
      fail(tensor,
           fmt::format("tensor {} is listed in {} but missing from it", quote_name(tensor), file));
  }
  // Each listed tensor was found where listed: a shard tensor left is one the index does not list.
  if (file_of.size() != index.weight_map.size())
    for (const auto& [tensor, file] : file_of) {
      auto listed = std::lower_bound(
          index.weight_map.begin(), index.weight_map.end(), tensor,
          [](const auto& entry, std::string_view name) { return entry.first < name; });
      if (listed == index.weight_map.end() || listed->first != tensor)
        fail(std::string(tensor),
             fmt::format("tensor {} of {} is not listed in the index", quote_name(tensor), file));
    }
}

void check_shard_index(const ShardIndex& index, const std::vector<File>& shards,
                       const std::string& source) {
  std::vector<std::vector<std::string_view>> names(shards.size());
  uint64_t total = 0;
  for (size_t i = 0; i < shards.size(); ++i)
    for (const TensorInfo& t : shards[i].tensors()) {
      names[i].push_back(t.name);
      total += t.byte_size();
    }
  check_shard_index(index, names, source);
  if (index.total_size && *index.total_size != total)
    throw Error(ErrorCode::format, Rule::index, "total_size", std::nullopt,
                fmt::format("total_size is {}, the shards' tensors hold {} bytes",
                            *index.total_size, total),
                source);
}

namespace {

// json.dumps with ensure_ascii=True: escapes like the canonical writer, and non-ASCII as \uXXXX.
void append_ascii_json_string(std::string& out, std::string_view s) {
  std::string plain;
  append_json_string(plain, s);
  for (size_t i = 0; i < plain.size();) {
    const unsigned char c = static_cast<unsigned char>(plain[i]);
    if (c == 0x7F) {  // Python escapes everything outside ' '..'~'
      out += "\\u007f";
      ++i;
      continue;
    }
    if (c < 0x80) {
      out.push_back(plain[i++]);
      continue;
    }
    const size_t len = c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    uint32_t cp = c & (0xFF >> (len + 1));
    for (size_t k = 1; k < len; ++k)
      cp = (cp << 6) | (static_cast<unsigned char>(plain[i + k]) & 0x3F);
    i += len;
    if (cp >= 0x10000) {
      cp -= 0x10000;
      out += fmt::format("\\u{:04x}\\u{:04x}", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
    } else {
      out += fmt::format("\\u{:04x}", cp);
    }
  }
}

}  // namespace

std::string shard_index_json(const ShardIndex& index) {
  std::string out = "{\n  \"metadata\": {\n    \"total_size\": ";
  out += std::to_string(index.total_size.value_or(0));
  out += "\n  },\n  \"weight_map\": {";
  for (size_t i = 0; i < index.weight_map.size(); ++i) {
    out += i ? ",\n    " : "\n    ";
    append_ascii_json_string(out, index.weight_map[i].first);
    out += ": ";
    append_ascii_json_string(out, index.weight_map[i].second);
  }
  out += index.weight_map.empty() ? "}\n}\n" : "\n  }\n}\n";
  return out;
}

}  // namespace tlio::detail

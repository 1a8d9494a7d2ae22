// model/shard_index.cpp: the shard index read, checked and written.
#include "model/shard_index.hpp"

#include <algorithm>
#include <map>

#include <fmt/core.h>

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
      if (total.get_uint64().get(n)) doc.fail("total_size", "total_size is not a non-negative integer");
      index.total_size = n;
    }
  }
  dom::object map;
  if (doc.root()["weight_map"].get_object().get(map))
    doc.fail("weight_map", "weight_map is missing or not an object");
  for (auto f : map) {
    std::string_view file;
    if (f.value.get_string().get(file))
      doc.fail(std::string(f.key), fmt::format("the file of {} is not a string", quote_name(f.key)));
    const bool plain = !file.empty() && file != "." && file != ".." &&
                       file.find('/') == std::string_view::npos &&
                       file.find('\\') == std::string_view::npos &&
                       file.find('\0') == std::string_view::npos;
    if (!plain)
      doc.fail(std::string(f.key), fmt::format("tensor {} maps to {}: not a plain file name in the "
                                               "model directory", quote_name(f.key), quote_name(file)));
    index.weight_map.emplace_back(std::string(f.key), std::string(file));
  }
  std::sort(index.weight_map.begin(), index.weight_map.end());
  for (const auto& [t, f] : index.weight_map) index.files.push_back(f);
  std::sort(index.files.begin(), index.files.end());
  index.files.erase(std::unique(index.files.begin(), index.files.end()), index.files.end());
  return index;
}

void check_shard_index(const ShardIndex& index, const std::vector<File>& shards,
                       const std::string& source) {
  auto fail = [&](const std::string& tensor, std::string detail) {
    throw Error(ErrorCode::format, Rule::index, tensor, std::nullopt, std::move(detail), source);
  };
  std::map<std::string_view, size_t> shard_of_file;
  for (size_t i = 0; i < index.files.size(); ++i) shard_of_file[index.files[i]] = i;
  uint64_t total = 0;
  for (const auto& [tensor, file] : index.weight_map) {
    const File& shard = shards[shard_of_file.at(file)];
    if (!shard.header().find(tensor))
      fail(tensor, fmt::format("tensor {} is listed in {} but missing from it", quote_name(tensor), file));
  }
  for (size_t i = 0; i < shards.size(); ++i)
    for (const TensorInfo& t : shards[i].tensors()) {
      total += t.byte_size();
      auto it = std::lower_bound(index.weight_map.begin(), index.weight_map.end(),
                                 std::make_pair(t.name, std::string()));
      if (it == index.weight_map.end() || it->first != t.name)
        fail(t.name, fmt::format("tensor {} of {} is not listed in the index", quote_name(t.name),
                                 index.files[i]));
      if (it->second != index.files[i])
        fail(t.name, fmt::format("tensor {} is in {} but the index lists {}", quote_name(t.name),
                                 index.files[i], it->second));
    }
  if (index.total_size && *index.total_size != total)
    fail("total_size", fmt::format("total_size is {}, the shards' tensors hold {} bytes",
                                   *index.total_size, total));
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
    for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(plain[i + k]) & 0x3F);
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

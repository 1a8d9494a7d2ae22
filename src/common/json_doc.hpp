// common/json_doc.hpp: small JSON documents (config.json, shard indexes, bitsandbytes
// quant_state) read strictly with simdjson: invalid JSON, a non-object root and duplicate keys
// at any depth are format errors under the caller's rule.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "tlio/error.hpp"

namespace tlio::detail {

/// A parsed JSON object document. Rejects invalid JSON, a non-object root and duplicate keys
/// at any depth.
class JsonDoc {
 public:
  JsonDoc(std::string_view json, std::string source, Rule rule);
  [[noreturn]] void fail(const std::string& key, std::string detail) const;
  std::optional<std::string> optional_string(const char* key) const;
  std::optional<uint64_t> optional_uint(const char* key) const;
  uint64_t required_uint(const char* key) const;
  std::optional<bool> optional_bool(const char* key) const;
  simdjson::dom::element root() const { return root_; }

 private:
  simdjson::dom::parser parser_;
  simdjson::dom::element root_;
  std::string source_;
  Rule rule_;
};

}  // namespace tlio::detail

// common/json_doc.cpp: see json_doc.hpp.
#include "common/json_doc.hpp"

#include <fmt/core.h>

#include <algorithm>

#include "common/json_scan.hpp"
#include "common/json_text.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {

namespace dom = simdjson::dom;

namespace {

// The first key that appears twice in one object, at any depth.
std::optional<std::string> duplicate_key(dom::element el) {
  dom::object obj;
  dom::array arr;
  if (el.get_object().get(obj) == simdjson::SUCCESS) {
    std::vector<std::string_view> keys;
    for (auto f : obj) {
      keys.push_back(f.key);
      if (auto d = duplicate_key(f.value)) return d;
    }
    std::sort(keys.begin(), keys.end());
    auto it = std::adjacent_find(keys.begin(), keys.end());
    if (it != keys.end()) return std::string(*it);
  } else if (el.get_array().get(arr) == simdjson::SUCCESS) {
    for (auto v : arr)
      if (auto d = duplicate_key(v)) return d;
  }
  return std::nullopt;
}

}  // namespace

JsonDoc::JsonDoc(std::string_view json, std::string source, Rule rule)
    : source_(std::move(source)), rule_(rule) {
  auto err = parser_.parse(json.data(), json.size()).get(root_);
  if (err) {
    // simdjson says neither where nor whether the text is JSON with integers past 64 bits: the
    // scan does. Those are read as the doubles nearest them (an exponent appended to a copy).
    const JsonScan scan = scan_json(json);
    const auto fail_at = [&](size_t offset, const std::string& what) {
      const TextPosition at = text_position(json, offset);
      fail({}, fmt::format("invalid JSON at line {}, column {}: {}", at.line, at.column, what));
    };
    if (scan.valid && !scan.big_integers.empty()) {
      std::string widened;
      size_t from = 0;
      for (const JsonSpan& n : scan.big_integers) {
        widened.append(json.substr(from, n.end - from)).append("e0");
        from = n.end;
      }
      widened.append(json.substr(from));
      err = parser_.parse(widened).get(root_);
      if (err)  // past a double's range too (310 digits and more): said where
        fail_at(scan.big_integers.front().begin,
                fmt::format("{} (a number, or another past a double's range, tlio does not read)",
                            simdjson::error_message(err)));
    }
    if (err && !scan.valid) fail_at(scan.error_offset, scan.error);
    if (err) fail({}, fmt::format("invalid JSON: {}", simdjson::error_message(err)));
  }
  if (!root_.is_object()) fail({}, "not a JSON object");
  if (auto d = duplicate_key(root_)) fail(*d, fmt::format("key {} appears twice", quote_name(*d)));
}

void JsonDoc::fail(const std::string& key, std::string detail) const {
  throw Error(ErrorCode::format, rule_, key, std::nullopt, std::move(detail), source_);
}

std::optional<std::string> JsonDoc::optional_string(const char* key) const {
  dom::element v;
  if (root_[key].get(v) != simdjson::SUCCESS || v.is_null()) return std::nullopt;
  std::string_view s;
  if (v.get_string().get(s)) fail(key, fmt::format("{} is not a string", key));
  return std::string(s);
}

std::optional<uint64_t> JsonDoc::optional_uint(const char* key) const {
  dom::element v;
  if (root_[key].get(v) != simdjson::SUCCESS || v.is_null()) return std::nullopt;
  uint64_t n;
  if (v.get_uint64().get(n)) fail(key, fmt::format("{} is not a non-negative integer", key));
  return n;
}

uint64_t JsonDoc::required_uint(const char* key) const {
  auto v = optional_uint(key);
  if (!v) fail(key, fmt::format("missing key {}", key));
  return *v;
}

std::optional<bool> JsonDoc::optional_bool(const char* key) const {
  dom::element v;
  if (root_[key].get(v) != simdjson::SUCCESS || v.is_null()) return std::nullopt;
  bool b;
  if (v.get_bool().get(b)) fail(key, fmt::format("{} is not true or false", key));
  return b;
}

}  // namespace tlio::detail

// format/header_walk_dom.cpp: the DOM walk, which takes any header and finds its errors: rule 2
// ends it at once, the first rule 3 and rule 4 failures are reported after it.
#include <fmt/core.h>
#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "format/header_builder.hpp"
#include "format/name_index.hpp"
#include "tlio/error.hpp"
#include "tlio/header.hpp"

namespace tlio {

using detail::key_is;
using detail::rule2;

// JSON nesting allowed (simdjson's default parser depth); deeper input is rule 2.
inline constexpr size_t kMaxJsonDepth = simdjson::DEFAULT_MAX_DEPTH;

namespace {

std::string json_error_text(simdjson::error_code e) {
  switch (e) {
    case simdjson::EMPTY:
      return "header is empty or only whitespace";
    case simdjson::UTF8_ERROR:
      return "header is not valid UTF-8";
    case simdjson::DEPTH_ERROR:
      return fmt::format("JSON nested deeper than {} levels", kMaxJsonDepth);
    case simdjson::STRING_ERROR:
      return "invalid JSON string (bad escape or lone surrogate)";
    case simdjson::UNESCAPED_CHARS:
      return "invalid JSON string (unescaped control character)";
    case simdjson::UNCLOSED_STRING:
      return "invalid JSON string (unclosed)";
    case simdjson::NUMBER_ERROR:
      return "invalid JSON number";
    case simdjson::T_ATOM_ERROR:
    case simdjson::F_ATOM_ERROR:
    case simdjson::N_ATOM_ERROR:
      return "invalid JSON literal";
    case simdjson::TAPE_ERROR:
      return "invalid JSON (bad structure, trailing characters, or bytes outside the JSON value)";
    default:
      return fmt::format("invalid JSON ({})", simdjson::error_message(e));
  }
}

// simdjson reports a number it cannot represent (an integer of 2^64 or more, a float that
// overflows) with the same code as a malformed one. Such numbers are valid JSON; wherever they
// stand in a header they break rule 3 or 4 exactly as any other number there would. So replace
// each one by "-1" padded with spaces (same length, same verdict) and parse again; a malformed
// number is left alone and still fails as rule 2. Returns false when nothing was replaced.
bool neutralize_unrepresentable_numbers(std::string& text) {
  bool changed = false;
  bool in_string = false;
  size_t i = 0;
  const size_t n = text.size();
  auto is_num_char = [](char c) {
    return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
  };
  while (i < n) {
    char c = text[i];
    if (in_string) {
      if (c == '\\')
        i += 2;
      else {
        if (c == '"') in_string = false;
        ++i;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
      ++i;
      continue;
    }
    if (c != '-' && !(c >= '0' && c <= '9')) {
      ++i;
      continue;
    }
    size_t start = i;
    while (i < n && is_num_char(text[i])) ++i;
    std::string_view tok(text.data() + start, i - start);
    // JSON number grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
    size_t p = 0;
    if (p < tok.size() && tok[p] == '-') ++p;
    auto digits = [&] {
      size_t s = p;
      while (p < tok.size() && tok[p] >= '0' && tok[p] <= '9') ++p;
      return p - s;
    };
    size_t int_start = p;
    size_t int_digits = digits();
    bool ok = int_digits > 0 && !(int_digits > 1 && tok[int_start] == '0');
    bool is_integer = true;
    if (ok && p < tok.size() && tok[p] == '.') {
      ++p;
      is_integer = false;
      ok = digits() > 0;
    }
    if (ok && p < tok.size() && (tok[p] == 'e' || tok[p] == 'E')) {
      ++p;
      is_integer = false;
      if (p < tok.size() && (tok[p] == '+' || tok[p] == '-')) ++p;
      ok = digits() > 0;
    }
    if (!ok || p != tok.size()) continue;  // malformed: leave it for the parser to reject
    bool representable;
    if (is_integer) {
      if (tok[0] == '-') {
        int64_t v;
        representable = std::from_chars(tok.data(), tok.data() + tok.size(), v).ec == std::errc{};
      } else {
        uint64_t v;
        representable = std::from_chars(tok.data(), tok.data() + tok.size(), v).ec == std::errc{};
      }
    } else {
      std::string copy(tok);
      double v = std::strtod(copy.c_str(), nullptr);
      representable = std::isfinite(v);
    }
    if (!representable) {
      text.replace(start, tok.size(), "-1" + std::string(tok.size() - 2, ' '));
      changed = true;
    }
  }
  return changed;
}

std::optional<dom::object> as_object(dom::element el) {
  dom::object o;
  if (el.get_object().get(o) != simdjson::SUCCESS) return std::nullopt;
  return o;
}

std::optional<dom::array> as_array(dom::element el) {
  dom::array a;
  if (el.get_array().get(a) != simdjson::SUCCESS) return std::nullopt;
  return a;
}

// Rule 2 at any depth: no object may hold two equal keys (compared after unescaping).
void check_no_duplicate_keys(dom::element el, const std::string& tensor) {
  if (el.is_object()) {
    dom::object obj = *as_object(el);
    std::vector<std::string_view> keys;
    for (auto field : obj) {
      keys.push_back(field.key);
      check_no_duplicate_keys(field.value, tensor);
    }
    std::sort(keys.begin(), keys.end());
    auto dup = std::adjacent_find(keys.begin(), keys.end());
    if (dup != keys.end()) rule2(fmt::format("duplicate key {}", quote_name(*dup)), tensor);
  } else if (el.is_array()) {
    dom::array arr = *as_array(el);
    for (auto child : arr) check_no_duplicate_keys(child, tensor);
  }
}

std::optional<uint64_t> as_u64(dom::element el) {
  uint64_t v;
  if (el.get_uint64().get(v) != simdjson::SUCCESS) return std::nullopt;
  return v;
}

}  // namespace

// Rule 2: the header is one JSON object (simdjson; a parser per thread, reused while its buffers
// stay small).
dom::object HeaderBuilder::parse_json(std::span<const std::byte> json, bool padded,
                                      std::unique_ptr<dom::parser>& big_parser,
                                      std::string& rescued) {
  if (json.size() >= 3 && json[0] == std::byte{0xEF} && json[1] == std::byte{0xBB} &&
      json[2] == std::byte{0xBF})
    rule2("byte-order mark before the JSON object (not JSON whitespace)");
  thread_local dom::parser cached_parser(kRetainedParserCapacity);
  dom::parser* parser = &cached_parser;
  if (json.size() > kRetainedParserCapacity) {
    big_parser = std::make_unique<dom::parser>();
    parser = big_parser.get();
  }
  dom::element root;
  auto err =
      parser->parse(reinterpret_cast<const uint8_t*>(json.data()), json.size(), !padded).get(root);
  if (err == simdjson::NUMBER_ERROR) {
    rescued.assign(reinterpret_cast<const char*>(json.data()), json.size());
    if (neutralize_unrepresentable_numbers(rescued)) err = parser->parse(rescued).get(root);
  }
  if (err) rule2(json_error_text(err));
  if (!root.is_object()) rule2("header is not a JSON object");
  return *as_object(root);
}

// Rule 3: __metadata__ is an object of strings (null: none, as MLX writes).
void HeaderBuilder::read_metadata(dom::element value) {
  if (seen_metadata_) rule2("duplicate key \"__metadata__\"");
  seen_metadata_ = true;
  if (value.is_null()) return;
  if (!value.is_object()) {
    check_no_duplicate_keys(value, {});
    rule3_.record(Rule::r3_metadata, "__metadata__", "__metadata__ is not an object of strings");
    return;
  }
  h_.has_metadata_ = true;
  dom::object meta = *as_object(value);
  for (auto entry : meta) {
    std::string_view text;
    if (entry.value.get_string().get(text) != simdjson::SUCCESS) {
      check_no_duplicate_keys(entry.value, std::string(entry.key));
      rule3_.record(Rule::r3_metadata, std::string(entry.key),
                    fmt::format("metadata value of {} is not a string", quote_name(entry.key)));
      h_.metadata_.try_emplace(std::string(entry.key));
      continue;
    }
    if (!h_.metadata_.try_emplace(std::string(entry.key), text).second)
      rule2(fmt::format("duplicate key {} in __metadata__", quote_name(entry.key)),
            std::string(entry.key));
  }
}

// Rule 4 for one tensor entry: exactly the fields dtype, shape, data_offsets, each well typed,
// and offsets spanning the tensor's size. (Duplicate names are found after the walk.)
[[gnu::flatten]] void HeaderBuilder::read_entry(std::string_view key, dom::element value) {
  h_.name_slots_.push_back(detail::name_index_key(key, static_cast<uint32_t>(h_.tensors_.size())));
  TensorInfo& info = h_.tensors_.emplace_back();
  info.name.assign(key.data(), key.size());
  if (!value.is_object()) {
    check_no_duplicate_keys(value, info.name);
    bad_entry(info, fmt::format("entry of {} is not an object with fields dtype, shape, "
                                "data_offsets",
                                quote_name(key)));
    return;
  }
  std::optional<dom::element> dtype_el, shape_el, offsets_el;
  dom::object fields = *as_object(value);
  for (auto f : fields) {
    std::optional<dom::element>* slot = key_is(f.key, "dtype")          ? &dtype_el
                                        : key_is(f.key, "shape")        ? &shape_el
                                        : key_is(f.key, "data_offsets") ? &offsets_el
                                                                        : nullptr;
    if (slot == nullptr) {
      check_no_duplicate_keys(f.value, info.name);
      bad_entry(info, fmt::format("unknown field {} in the entry of {} (allowed: dtype, shape, "
                                  "data_offsets)",
                                  quote_name(f.key), quote_name(key)));
      continue;
    }
    if (*slot)
      rule2(fmt::format("duplicate key {} in the entry of {}", quote_name(f.key), quote_name(key)),
            info.name);
    *slot = f.value;
  }
  if (!dtype_el || !shape_el || !offsets_el) {
    bad_entry(info, fmt::format("entry of {} lacks field {}", quote_name(key),
                                !dtype_el   ? "dtype"
                                : !shape_el ? "shape"
                                            : "data_offsets"));
    for (auto* el : {&dtype_el, &shape_el, &offsets_el})
      if (*el) check_no_duplicate_keys(**el, info.name);
    return;
  }
  const bool dtype_ok = read_dtype(*dtype_el, info).has_value();
  const bool shape_ok = read_shape(*shape_el, info);
  const bool offsets_ok = read_offsets(*offsets_el, info);
  if (dtype_ok && shape_ok && offsets_ok && !rule4_.set) check_size(info);
}

std::optional<Dtype> HeaderBuilder::read_dtype(dom::element el, TensorInfo& info) {
  std::string_view text;
  std::optional<Dtype> dtype;
  if (el.get_string().get(text) == simdjson::SUCCESS) {
    if (text == last_dtype_text_) {
      dtype = last_dtype_;
    } else if ((dtype = parse_dtype(text))) {
      last_dtype_text_ = text;
      last_dtype_ = *dtype;
    }
  }
  if (dtype) {
    info.dtype = *dtype;
    return dtype;
  }
  check_no_duplicate_keys(el, info.name);
  if (el.is_string())
    bad_entry(info, fmt::format("unknown dtype {} for tensor {}", quote_name(text),
                                quote_name(info.name)));
  else
    bad_entry(info, fmt::format("dtype of tensor {} is not a string", quote_name(info.name)));
  return std::nullopt;
}

bool HeaderBuilder::read_shape(dom::element el, TensorInfo& info) {
  bool ok = el.is_array();
  if (ok) {
    dom::array dims = *as_array(el);
    info.shape.reserve(dims.size());
    for (auto d : dims) {
      auto v = as_u64(d);
      if (!v) {
        check_no_duplicate_keys(d, info.name);
        ok = false;
        break;
      }
      info.shape.push_back(*v);
    }
  } else {
    check_no_duplicate_keys(el, info.name);
  }
  if (!ok)
    bad_entry(info, fmt::format("shape of tensor {} is not a list of integers in [0, 2^64)",
                                quote_name(info.name)));
  return ok;
}

bool HeaderBuilder::read_offsets(dom::element el, TensorInfo& info) {
  std::optional<uint64_t> begin, end;
  if (el.is_array()) {
    dom::array offs = *as_array(el);
    if (offs.size() == 2) {
      auto it = offs.begin();
      begin = as_u64(*it);
      ++it;
      end = as_u64(*it);
    }
  }
  if (!begin || !end) {
    check_no_duplicate_keys(el, info.name);
    bad_entry(info, fmt::format("data_offsets of tensor {} is not [begin, end] with integers in "
                                "[0, 2^64)",
                                quote_name(info.name)));
    return false;
  }
  info.begin = *begin;
  info.end = *end;
  note_offset_order(info);
  return true;
}

}  // namespace tlio

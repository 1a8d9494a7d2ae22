// cli/gguf_listing.cpp: a GGUF file's listing, as text and as JSON.
#include "gguf_listing.hpp"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "cli_util.hpp"

namespace tlio::cli {

namespace {

// Array elements shown (text and JSON); the count says how many there are.
constexpr uint64_t kShownElements = 8;

// A value as text: a number, a string (quoted when it holds control characters), or an array's
// first elements.
std::string value_text(const tlio::GgufValue& v) {
  const auto scalar = [](tlio::GgufValueType t, const tlio::GgufValue& x,
                         uint64_t i) -> std::string {
    if (t == tlio::GgufValueType::BOOL) return x.bytes[i] != std::byte{0} ? "true" : "false";
    const std::optional<double> d = t == tlio::GgufValueType::ARRAY ? std::nullopt : x.number_at(i);
    return d ? fmt::format("{}", *d) : std::string();
  };
  if (const std::string* s = v.as_string()) return display_name(*s);
  if (v.type != tlio::GgufValueType::ARRAY) {
    if (v.type == tlio::GgufValueType::BOOL) return v.bytes[0] != std::byte{0} ? "true" : "false";
    return fmt::format("{}", *v.as_double());
  }
  std::vector<std::string> shown;
  for (uint64_t i = 0; i < std::min(v.count, kShownElements); ++i)
    shown.push_back(v.element_type == tlio::GgufValueType::STRING ? json_string(v.strings[i])
                                                                  : scalar(v.element_type, v, i));
  return fmt::format("[{}{}] ({} {})", fmt::join(shown, ", "),
                     v.count > kShownElements ? ", ..." : "", v.count,
                     tlio::gguf_value_type_name(v.element_type));
}

std::string value_json(const tlio::GgufValue& v) {
  const auto element = [&](uint64_t i) -> std::string {
    if (v.element_type == tlio::GgufValueType::STRING) return json_string(v.strings[i]);
    if (v.element_type == tlio::GgufValueType::BOOL)
      return v.bytes[i] != std::byte{0} ? "true" : "false";
    return json_number(*v.number_at(i));
  };
  if (const std::string* s = v.as_string())
    return fmt::format("{{\"type\":\"STRING\",\"value\":{}}}", json_string(*s));
  if (v.type != tlio::GgufValueType::ARRAY) {
    const std::string value = v.type == tlio::GgufValueType::BOOL
                                  ? (v.bytes[0] != std::byte{0} ? "true" : "false")
                              : v.as_uint() ? std::to_string(*v.as_uint())
                                            : json_number(*v.as_double());
    return fmt::format("{{\"type\":\"{}\",\"value\":{}}}", tlio::gguf_value_type_name(v.type),
                       value);
  }
  std::vector<std::string> shown;
  for (uint64_t i = 0; i < std::min(v.count, kShownElements); ++i) shown.push_back(element(i));
  return fmt::format("{{\"type\":\"ARRAY\",\"element_type\":\"{}\",\"count\":{},\"first\":[{}]}}",
                     tlio::gguf_value_type_name(v.element_type), v.count, fmt::join(shown, ","));
}

std::string type_name(uint32_t id) { return std::string(tlio::ggml_type(id)->name); }

}  // namespace

void print_gguf(const tlio::GgufFile& f, bool json, std::string* json_out) {
  uint64_t total = 0, parameters = 0;
  std::map<std::string, uint64_t> counts;
  for (const tlio::GgufTensorInfo& t : f.tensors()) {
    total += t.bytes;
    parameters += t.element_count();
    ++counts[type_name(t.type)];
  }
  if (json) {
    std::vector<std::string> meta, tensors, type_counts;
    for (const tlio::GgufKeyValue& kv : f.metadata())
      meta.push_back(fmt::format("{}:{}", json_string(kv.key), value_json(kv.value)));
    for (const tlio::GgufTensorInfo& t : f.tensors())
      tensors.push_back(fmt::format(
          "{{\"name\":{},\"type\":\"{}\",\"shape\":[{}],\"offset\":{},\"bytes\":{}}}",
          json_string(t.name), type_name(t.type), fmt::join(t.shape(), ","), t.offset, t.bytes));
    for (const auto& [name, n] : counts) type_counts.push_back(fmt::format("\"{}\":{}", name, n));
    const std::string doc = fmt::format(
        "{{\"path\":{},\"kind\":\"gguf\",\"file_size\":{},\"splits\":{},\"version\":{},\"alignment\":{},"
        "\"data_offset\":{},"
        "\"metadata\":{{{}}},\"tensors\":[{}],\"type_counts\":{{{}}},\"tensor_count\":{},\"total_bytes\":{},"
        "\"parameters\":{}}}",
        json_string(f.name()), f.size(), f.splits(), f.version(), f.alignment(), f.data_offset(),
        fmt::join(meta, ","), fmt::join(tensors, ","), fmt::join(type_counts, ","),
        f.tensors().size(), total, parameters);
    if (json_out)
      *json_out += doc;
    else
      fmt::print("{}\n", doc);
    return;
  }
  fmt::print("file:      {}\n", f.name());
  fmt::print("format:    GGUF v{} (alignment {}, data at byte {})\n", f.version(), f.alignment(),
             f.data_offset());
  if (f.splits() > 1)
    fmt::print("size:      {} in {} files (a split set, opened by its first)\n",
               human_size(f.size()), f.splits());
  else
    fmt::print("size:      {} (data {})\n", human_size(f.size()),
               human_size(f.size() - f.data_offset()));
  fmt::print("metadata:  {} key{}\n", f.metadata().size(), f.metadata().size() == 1 ? "" : "s");
  size_t key_width = 0;
  for (const tlio::GgufKeyValue& kv : f.metadata())
    key_width = std::max(key_width, display_name(kv.key).size());
  for (const tlio::GgufKeyValue& kv : f.metadata())
    fmt::print("  {}  {:<7}  {}\n", pad(display_name(kv.key), key_width),
               tlio::gguf_value_type_name(kv.value.type), value_text(kv.value));
  std::vector<std::vector<std::string>> rows = {{"name", "type", "shape", "bytes", "offset"}};
  for (const tlio::GgufTensorInfo& t : f.tensors())
    rows.push_back({display_name(t.name), type_name(t.type), shape_text(t.shape()),
                    human_size(t.bytes), std::to_string(t.offset)});
  std::vector<size_t> width(5, 0);
  for (const auto& r : rows)
    for (size_t i = 0; i < 5; ++i) width[i] = std::max(width[i], r[i].size());
  fmt::print("tensors:\n");
  for (const auto& r : rows)
    fmt::print("  {}  {}  {}  {}  {}\n", pad(r[0], width[0]), pad(r[1], width[1]),
               pad(r[2], width[2]), pad(r[3], width[3], true), r[4]);
  std::vector<std::string> per_type;
  for (const auto& [name, n] : counts) per_type.push_back(fmt::format("{} {}", n, name));
  fmt::print("total:     {} tensor{}, {}; {}\n", f.tensors().size(),
             f.tensors().size() == 1 ? "" : "s", human_size(total), fmt::join(per_type, ", "));
  fmt::print("params:    {}\n", thousands(parameters));
}

}  // namespace tlio::cli

// format/header_text.cpp: the canonical header (writer rules 1-4) and byte counts of tensors.
#include "format/header_text.hpp"

#include <fmt/core.h>

#include <algorithm>

#include "common/checked.hpp"
#include "common/json_text.hpp"
#include "tlio/error.hpp"
#include "tlio/header.hpp"

namespace tlio {

using detail::append_json_string;

std::optional<uint64_t> tensor_bytes(Dtype dtype, std::span<const uint64_t> shape) noexcept {
  const detail::TensorSize s = detail::tensor_size(dtype_bits(dtype), shape);
  if (s.problem != detail::TensorSize::Problem::none) return std::nullopt;
  return s.bytes;
}

void detail::canonical_layout(std::vector<TensorInfo>& tensors) {
  std::stable_sort(tensors.begin(), tensors.end(), [](const TensorInfo& a, const TensorInfo& b) {
    int ra = write_rank(a.dtype), rb = write_rank(b.dtype);
    return ra != rb ? ra < rb : a.name < b.name;  // std::string compares bytes as unsigned
  });
  uint64_t offset = 0;
  for (TensorInfo& t : tensors) {
    auto size = tensor_bytes(t.dtype, t.shape);
    if (!size) throw_invalid("tensor size overflows or is not a whole number of bytes", t.name);
    auto end = detail::checked_add(offset, *size);
    if (!end) throw_invalid("total data size overflows 64 bits", t.name);
    t.begin = offset;
    t.end = *end;
    offset = *end;
  }
}

std::string detail::canonical_header(const Metadata& metadata,
                                     const std::vector<TensorInfo>& tensors) {
  std::string out;
  out.reserve(64 + tensors.size() * 80);
  out.push_back('{');
  bool first = true;
  if (!metadata.empty()) {
    out += "\"__metadata__\":{";
    for (const auto& [k, v] : metadata) {
      if (!first) out.push_back(',');
      first = false;
      append_json_string(out, k);
      out.push_back(':');
      append_json_string(out, v);
    }
    out.push_back('}');
    first = false;
  }
  char num[24];
  auto append_u64 = [&](uint64_t v) {
    auto r = fmt::format_to(num, "{}", v);
    out.append(num, r);
  };
  for (const TensorInfo& t : tensors) {
    if (!first) out.push_back(',');
    first = false;
    append_json_string(out, t.name);
    out += ":{\"dtype\":\"";
    out += dtype_name(t.dtype);
    out += "\",\"shape\":[";
    for (size_t i = 0; i < t.shape.size(); ++i) {
      if (i) out.push_back(',');
      append_u64(t.shape[i]);
    }
    out += "],\"data_offsets\":[";
    append_u64(t.begin);
    out.push_back(',');
    append_u64(t.end);
    out += "]}";
  }
  out.push_back('}');
  out.append((8 - out.size() % 8) % 8, ' ');
  return out;
}

}  // namespace tlio

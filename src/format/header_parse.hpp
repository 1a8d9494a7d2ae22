// format/header_parse.hpp: the parser entry point for readers that hold the whole file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "tlio/header.hpp"

namespace tlio::detail {

/// Header::parse, for a header with at least kJsonPadding readable bytes after it (the data that
/// follows it in a mapped file): the JSON is then parsed in place instead of copied.
inline constexpr size_t kJsonPadding = 64;  // simdjson::SIMDJSON_PADDING
Header parse_header(std::span<const std::byte> json, uint64_t data_size, bool padded);

}  // namespace tlio::detail

// format/header_parse.hpp: the parser entry point for readers that hold the whole file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "tlio/header.hpp"

namespace tlio::detail {

/// Header::parse, for a header with at least kJsonPadding readable bytes after it (the data that
/// follows it in a mapped file): the JSON is then parsed in place instead of copied.
inline constexpr size_t kJsonPadding = 64;  // simdjson::SIMDJSON_PADDING
/// The fast walk takes a header in pieces of about this many bytes: a piece and simdjson's index
/// of it (4 bytes a token) stay in the core's cache, reused from piece to piece.
inline constexpr size_t kHeaderPieceBytes = size_t{256} << 10;
Header parse_header(std::span<const std::byte> json, uint64_t data_size, bool padded);

/// A data size for parse_header when the data has not arrived yet (standard input): every rule
/// is checked but where the data ends, and the header's data size is where its tensors end.
inline constexpr uint64_t kDataSizeUnknown = UINT64_MAX;

/// The two walks parse_header chooses between, for the tests and the fuzz target that check they
/// agree. The On-Demand walk needs kJsonPadding bytes after `json`; it returns nullopt for any
/// header that breaks rule 2, 3 or 4 (and for a few valid ones it does not handle, such as keys
/// with escapes), which the DOM walk then explains. The DOM walk takes any header (`padded` as
/// for parse_header).
/// The On-Demand walk splits headers of `split_from` bytes or more into two halves walked at once
/// (parse_header: from 1 MiB), and walks in pieces of about `piece_bytes` (parse_header: 256 KiB);
/// tests pass small sizes to exercise both.
std::optional<Header> parse_header_on_demand(std::span<const std::byte> json, uint64_t data_size,
                                             size_t split_from, size_t piece_bytes);
Header parse_header_dom(std::span<const std::byte> json, uint64_t data_size, bool padded);

/// How many leading bytes of a file read_header_length is given when the file has them: enough to
/// recognise what a file that is not safetensors is (zip, pickle, GGUF, text, ...).
inline constexpr size_t kSniffBytes = 16;

/// Rule 1: reads N from the first 8 bytes of a file of `file_size` bytes and checks
/// N <= kMaxHeaderSize and 8 + N <= file_size. `prefix` holds the first min(kSniffBytes,
/// file_size) bytes; when the rule fails, the message says what the file looks like instead.
uint64_t read_header_length(std::span<const std::byte> prefix, uint64_t file_size);

/// What a file that breaks rule 1 looks like, from its first bytes ("a zip archive (...)"), or
/// empty when it looks like nothing in particular.
std::string describe_foreign_file(std::span<const std::byte> prefix);

}  // namespace tlio::detail

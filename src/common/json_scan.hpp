// common/json_scan.hpp: one pass over a JSON text's grammar (RFC 8259) for what simdjson's DOM
// parser does not say: where the text first goes wrong (its errors carry no position), and which
// integers lie beyond 64 bits (JSON sets no limit: transformers writes model_max_length as
// 1000000000000000019884624838656, which simdjson 3.0 refuses as an integer).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace tlio::detail {

/// A byte range of a JSON text.
struct JsonSpan {
  size_t begin = 0;
  size_t end = 0;
};

struct JsonScan {
  bool valid = true;
  size_t error_offset = 0;             ///< where the text first breaks the grammar (when !valid)
  std::string error;                   ///< what was expected there
  std::vector<JsonSpan> big_integers;  ///< integer literals beyond int64 and uint64
};

/// Scans `text` once; nesting deeper than 1024 levels (simdjson's DEFAULT_MAX_DEPTH, which it
/// counts its own way) is an error at that byte.
JsonScan scan_json(std::string_view text);

/// 1-based line and column (in bytes) of `offset` in `text`.
struct TextPosition {
  size_t line = 1;
  size_t column = 1;
};
TextPosition text_position(std::string_view text, size_t offset);

}  // namespace tlio::detail

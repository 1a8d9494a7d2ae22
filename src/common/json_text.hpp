// common/json_text.hpp: JSON string literals, for the canonical header (whose escaping must be
// the reference's byte for byte) and for names in messages, quoted so that control characters
// and quotes in a hostile name stay visible and cannot break the one-line message.
#pragma once

#include <string>
#include <string_view>

namespace tlio::detail {

/// Appends `s` as a JSON string literal with the reference escaping (serde_json compact).
void append_json_string(std::string& out, std::string_view s);

/// `text` with every byte that does not begin a valid UTF-8 sequence made U+FFFD: names in a
/// document that must stay JSON whatever bytes a file's names hold (GGUF does not check them).
std::string valid_utf8(std::string_view text);

/// `s` as a JSON string literal, for messages: `tensor "a\nb"`.
inline std::string quote_name(std::string_view s) {
  std::string out;
  append_json_string(out, s);
  return out;
}

}  // namespace tlio::detail

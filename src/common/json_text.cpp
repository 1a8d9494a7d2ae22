// common/json_text.cpp: see json_text.hpp.
#include "common/json_text.hpp"

#include <simdjson.h>

namespace tlio::detail {

void append_json_string(std::string& out, std::string_view s) {
  // serde_json's compact escaping: the two mandatory escapes, the short forms for \b \t \n \f \r,
  // \u00XX (lowercase hex) for other control characters; everything else raw, including
  // '/', DEL and non-ASCII.
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  size_t run = 0;  // start of the pending run of bytes copied as they are
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(s.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        out += "\\u00";
        out.push_back(kHex[c >> 4]);
        out.push_back(kHex[c & 15]);
    }
  }
  out.append(s.data() + run, s.size() - run);
  out.push_back('"');
}

std::string valid_utf8(std::string_view text) {
  if (simdjson::validate_utf8(text.data(), text.size())) return std::string(text);
  std::string out;
  for (size_t i = 0; i < text.size();) {
    const auto lead = static_cast<unsigned char>(text[i]);
    const size_t n = lead < 0x80 ? 1 : lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
    if (i + n <= text.size() && simdjson::validate_utf8(text.data() + i, n)) {
      out.append(text.substr(i, n));
      i += n;
    } else {
      out += "\xEF\xBF\xBD";  // U+FFFD for this byte; the next is looked at on its own
      ++i;
    }
  }
  return out;
}

}  // namespace tlio::detail

// format/quote.hpp: names in messages are quoted as JSON strings, so control characters and
// quotes in a hostile name stay visible and cannot break the one-line message.
#pragma once

#include <string>
#include <string_view>

#include "tlio/header.hpp"

namespace tlio::detail {

inline std::string quote_name(std::string_view s) {
  std::string out;
  append_json_string(out, s);
  return out;
}

}  // namespace tlio::detail

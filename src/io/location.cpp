// io/location.cpp: parsing names into locations.
#include "io/location.hpp"

#include <fmt/core.h>

#include <optional>
#include <utility>

#include "common/text.hpp"
#include "io/http.hpp"
#include "io/store.hpp"
#include "tlio/error.hpp"
#include "tlio/location.hpp"

namespace tlio::detail {

namespace {
// The scheme of "scheme://...": a letter, then letters, digits, '+', '-' or '.' (RFC 3986),
// in lower case (schemes are case-insensitive: HTTPS:// is https://); "" when there is none.
std::string scheme_of(std::string_view text) {
  const size_t end = text.find("://");
  if (end == std::string_view::npos || end == 0) return {};
  const std::string s = ascii_lower(text.substr(0, end));
  if (!(s[0] >= 'a' && s[0] <= 'z')) return {};
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.'))
      return {};
  return s;
}
}  // namespace

Location::Location(std::string scheme, std::string text)
    : scheme_(std::move(scheme)), text_(std::move(text)) {
  display_ = store_of(*this).display(text_);
}

Location Location::parse(std::string_view text) {
  if (text == kStandardStream) return Location(std::string(kStandardStream), std::string(text));
  const std::string scheme = scheme_of(text);
  if (scheme.empty()) return Location({}, std::string(text));
  if (!find_store(scheme))
    throw Error(
        ErrorCode::unsupported, Rule::none, {}, std::nullopt,
        fmt::format("unsupported URL scheme '{}' (tlio reads local paths, http://, https://, "
                    "s3://, gs:// and hf://)",
                    scheme),
        url_for_messages(text));
  // The scheme as stores and libcurl expect it: in lower case.
  return Location(scheme, scheme + std::string(text.substr(scheme.size())));
}

Location Location::join(std::string_view name) const {
  return Location(scheme_, store_of(*this).join(text_, name));
}

}  // namespace tlio::detail

std::string tlio::display_location(std::string_view location) {
  if (location == detail::kStandardStream || detail::scheme_of(location).empty())
    return std::string(location);
  return detail::url_for_messages(location);
}

bool tlio::is_standard_stream(std::string_view location) noexcept {
  return location == detail::kStandardStream;
}

// Fuzz target: what a server sends before the body: header lines (split at '\n', as libcurl
// hands them over) read into a response, and each line and value parsed as a Content-Range.
// Nothing may crash; a parsed range must satisfy first <= last < total.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "io/http.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  tlio::detail::HttpResponse response;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    const std::string_view line = text.substr(0, end == std::string_view::npos ? text.size() : end + 1);
    text.remove_prefix(line.size());
    tlio::detail::read_response_header(line, response);
    if (const auto r = tlio::detail::parse_content_range(line); r && !(r->first <= r->last && r->last < r->total))
      std::abort();
  }
  if (const auto r = tlio::detail::parse_content_range(response.content_range); r && !(r->first <= r->last && r->last < r->total))
    std::abort();
  return 0;
}

// Fuzz target: what a remote store sends or is told, parsed without a network: header lines
// (split at '\n', as libcurl hands them over) read into a response, and each line and value
// parsed as a Content-Range (a parsed range must satisfy first <= last < total); the same bytes
// as an object store's XML error answer, as an AWS/boto config file, as the URL messages show
// (no query value may survive), and after s3://, gs:// and hf:// as a location. Nothing may
// crash; bad locations are Errors.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "io/http.hpp"
#include "io/location.hpp"
#include "io/object_store_config.hpp"
#include "io/s3_client.hpp"
#include "io/store.hpp"
#include "tlio/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tlio::detail;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  std::string_view text = input;
  HttpResponse response;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    const std::string_view line =
        text.substr(0, end == std::string_view::npos ? text.size() : end + 1);
    text.remove_prefix(line.size());
    read_response_header(line, response);
    if (const auto r = parse_content_range(line); r && !(r->first <= r->last && r->last < r->total))
      std::abort();
  }
  if (const auto r = parse_content_range(response.content_range);
      r && !(r->first <= r->last && r->last < r->total))
    std::abort();

  const ObjectStoreConfig config;
  (void)explain_s3_error(static_cast<long>(size % 600), input, S3Object{"b", "k"}, config);
  (void)xml_element(input, "UploadId");
  (void)parse_ini(input);
  const std::string shown =
      url_for_messages(std::string("https://h/x?secret=") + std::string(input));
  if (shown.find("secret=") != std::string::npos && shown.find("secret=...") == std::string::npos)
    std::abort();

  for (const char* scheme : {"s3://", "gs://", "hf://"}) {
    try {
      const Location where = Location::parse(std::string(scheme) + std::string(input));
      (void)store_of(where).is_directory(where);
      (void)where.join("config.json").display();
    } catch (const tlio::Error&) {
    }
  }
  return 0;
}

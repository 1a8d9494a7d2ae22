// io/http_store.cpp: files on HTTP(S) servers, read by byte ranges (io/http.hpp).
#include <fmt/core.h>

#include <cstdlib>
#include <system_error>
#include <utility>
#include <vector>

#include "io/http.hpp"
#include "io/http_request.hpp"
#include "io/os_file.hpp"
#include "io/store.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {

namespace {

bool not_found(const Error& e) { return e.os_error() == std::errc::no_such_file_or_directory; }

// One pinned version of a remote file; ranges go to HttpFile together, which merges them into
// requests and keeps several in flight.
class HttpSource final : public ByteSource {
 public:
  HttpSource(std::shared_ptr<const HttpFile> file, std::string name)
      : ByteSource(std::move(name), file->size()), file_(std::move(file)) {}
  bool batches_ranges() const noexcept override { return true; }
  void read(uint64_t offset, std::span<std::byte> dst) const override { file_->read(offset, dst); }
  void read_ranges(std::span<const ReadRange> ranges, unsigned) const override {
    std::vector<HttpRange> http;
    http.reserve(ranges.size());
    for (const ReadRange& r : ranges) http.push_back({r.offset, r.dst, r.size});
    file_->read_ranges(http);
  }
  PublishedDigest published_sha256() const override {
    return {file_->published_sha256(), file_->published_by()};
  }

 private:
  std::shared_ptr<const HttpFile> file_;
};

// The bearer token: the caller's, else $HF_TOKEN (the Hub's files are the usual URLs).
HttpOptions http_options(const SourceOptions& options) {
  HttpOptions o;
  o.token = options.token;
  if (o.token.empty())
    if (const char* t = std::getenv("HF_TOKEN")) o.token = t;
  o.warning = options.warning;
  return o;
}

class HttpStore final : public Store {
 public:
  std::shared_ptr<const ByteSource> open(const Location& where,
                                         const SourceOptions& options) const override {
    // The opening request brings the first kHttpFirstRange bytes: most headers whole.
    return http_source(HttpFile::open(where.text(), http_options(options)), where.display());
  }

  std::optional<std::string> read_small(const Location& where,
                                        const SourceOptions& options) const override {
    return read_small_http(where.text(), http_options(options));
  }

  bool exists(const Location& where, const SourceOptions& options) const override {
    try {
      HttpFile::open(where.text(), http_options(options), 1);  // one byte: does it exist
      return true;
    } catch (const Error& e) {
      if (not_found(e)) return false;
      throw;
    }
  }

  std::optional<bool> is_directory(const Location& where) const override {
    // By its spelling only: HTTP has no listing.
    if (url_ends_with_slash(where.text())) return true;
    const std::string_view url = where.text();
    if (url.substr(0, url.find_first_of("?#")).ends_with(".safetensors")) return false;
    return std::nullopt;
  }

  void check_directory(const Location&) const override {}

  std::string join(const std::string& dir, std::string_view name) const override {
    return url_join(dir, name);
  }

  std::string display(const std::string& text) const override { return url_for_messages(text); }
};

}  // namespace

std::shared_ptr<const ByteSource> http_source(std::shared_ptr<const HttpFile> file,
                                              std::string name) {
  return std::make_shared<HttpSource>(std::move(file), std::move(name));
}

std::optional<std::string> read_small_http(const std::string& url, const HttpOptions& options) {
  std::shared_ptr<HttpFile> f;
  try {
    f = HttpFile::open(url, options);
  } catch (const Error& e) {
    if (not_found(e)) return std::nullopt;
    throw;
  }
  if (f->size() > kMaxTextFileSize)
    throw_io(fmt::format("{} bytes is over the limit of {} for a JSON file", f->size(),
                         kMaxTextFileSize),
             name_for_messages(url, options));
  std::string text(static_cast<size_t>(f->size()), '\0');
  f->read(0, std::as_writable_bytes(std::span(text)));  // from the opening request's bytes, mostly
  return text;
}

const Store& http_store() noexcept {
  static const HttpStore store;
  return store;
}

}  // namespace tlio::detail

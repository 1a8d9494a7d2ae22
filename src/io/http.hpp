// io/http.hpp: a file on an HTTP(S) server read by byte ranges, with libcurl. One version of
// the file: the first answer's ETag (or Last-Modified) pins it and every later request carries
// If-Range, so a file that changes while it is read is an error, never a mix. Every 206's
// Content-Range is checked against what was asked; a server that ignores Range (200) has its
// body streamed and only the asked bytes used. Connection errors, 5xx and 429 are retried with
// exponential backoff (Retry-After honoured), resuming after the last byte received.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tlio::detail {

/// Bytes asked for with the first request: the header of nearly every file fits, so `inspect`
/// of a remote file takes one request (two when the header is longer).
inline constexpr uint64_t kHttpFirstRange = uint64_t{128} << 10;
/// Attempts per request (the first included) on connection errors, 5xx and 429, unless
/// $TLIO_HTTP_ATTEMPTS says otherwise.
inline constexpr int kHttpAttempts = 5;
/// Redirects followed per request (hubs redirect /resolve/ to a CDN).
inline constexpr long kHttpMaxRedirects = 10;

struct HttpOptions {
  /// Sent as "Authorization: Bearer ..." to the URL's own origin only, never after a redirect
  /// to another scheme, host or port. Empty: $HF_TOKEN, if set.
  std::string token;
  /// Seconds to connect, and seconds without a byte before a transfer is abandoned (and
  /// retried). 0: $TLIO_HTTP_TIMEOUT, else 30.
  long timeout_seconds = 0;
  /// Attempts per request. 0: $TLIO_HTTP_ATTEMPTS, else kHttpAttempts.
  int attempts = 0;
};

/// True for http:// and https:// names.
bool is_url(std::string_view name) noexcept;

class HttpFile {
 public:
  /// Fetches the first kHttpFirstRange bytes (kept: see prefix()), learning the size and the
  /// validator. Error{io} naming the URL (never the token) when the server refuses.
  static std::shared_ptr<HttpFile> open(const std::string& url, const HttpOptions& options = {});

  const std::string& url() const noexcept { return url_; }
  uint64_t size() const noexcept { return size_; }
  /// The first bytes of the file, as the opening request returned them.
  std::span<const std::byte> prefix() const noexcept { return prefix_; }
  /// Reads exactly dst.size() bytes at `offset` of the pinned version of the file.
  void read(uint64_t offset, std::span<std::byte> dst) const;

  HttpFile(std::string url, HttpOptions options);
  ~HttpFile();

 private:
  struct Exchange;
  // Fetches [offset, offset + dst.size()) (the opening request, which pins the file: up to that
  // much); returns the bytes received. Thread-safe once pinned (open() pins it).
  uint64_t transfer(uint64_t offset, std::span<std::byte> dst);

  std::string url_;
  HttpOptions options_;
  bool pinned_ = false;
  uint64_t size_ = 0;
  std::string validator_;  // a strong ETag, else Last-Modified (may be empty)
  bool validator_is_etag_ = false;
  std::vector<std::byte> prefix_;
};

}  // namespace tlio::detail

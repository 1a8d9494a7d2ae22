// io/http.hpp: a file on an HTTP(S) server read by byte ranges, with libcurl. One version of
// the file: the first answer's ETag (or Last-Modified) pins it and every later request carries
// If-Range, so a file that changes while it is read is an error, never a mix. Every 206's
// Content-Range is checked against what was asked; a server that ignores Range (200) has its
// body streamed and only the asked bytes used; after such an answer the whole file is fetched
// once, with one warning, into an unnamed temporary file that every later read comes from.
// Connection errors, 5xx and 429 are retried with exponential backoff (Retry-After honoured),
// resuming after the last byte received.
#pragma once

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "io/source.hpp"

namespace tlio::detail {

class CurlPool;

/// Bytes asked for with the first request: the header of nearly every file fits, so `inspect`
/// of a remote file takes one request (two when the header is longer).
inline constexpr uint64_t kHttpFirstRange = uint64_t{128} << 10;
/// Attempts per request (the first included) on connection errors, 5xx and 429, unless
/// $TLIO_HTTP_ATTEMPTS says otherwise.
inline constexpr int kHttpAttempts = 5;
/// Redirects followed per request (hubs redirect /resolve/ to a CDN).
inline constexpr long kHttpMaxRedirects = 10;
/// Requests in flight at once when several ranges are read (read_ranges), unless
/// $TLIO_HTTP_CONNECTIONS says otherwise: enough to fill a fast link, few enough for a server.
inline constexpr unsigned kHttpConnections = 4;
/// The largest single request of read_ranges: longer runs are split so that they are fetched
/// over several connections at once.
inline constexpr uint64_t kHttpRequestBytes = uint64_t{16} << 20;

/// What an error answer said, as explain() reads it.
struct HttpFailure {
  std::string message;
  int os_error = EIO;  ///< ENOENT (missing), EACCES (refused), EIO, ...
  bool retry = false;  ///< another attempt may succeed (a store that is busy)
};

struct HttpOptions {
  /// Sent as "Authorization: Bearer ..." to the URL's own origin only, never after a redirect
  /// to another scheme, host or port. Empty: none (the http store defaults it to $HF_TOKEN).
  std::string token;
  /// Seconds to connect, and seconds without a byte before a transfer is abandoned (and
  /// retried). 0: $TLIO_HTTP_TIMEOUT, else 30.
  long timeout_seconds = 0;
  /// Attempts per request. 0: $TLIO_HTTP_ATTEMPTS, else kHttpAttempts.
  int attempts = 0;
  /// Requests in flight in read_ranges. 0: $TLIO_HTTP_CONNECTIONS (at most 64), else
  /// kHttpConnections.
  unsigned connections = 0;
  /// A CA bundle to verify TLS against instead of the system's. Empty: $CURL_CA_BUNDLE (as for
  /// the curl tool), if set.
  std::string ca_bundle = {};
  /// Told once per file when the server ignores Range requests (the file is then downloaded
  /// whole, once, into a temporary file that later reads come from).
  std::function<void(std::string_view)> warning = {};
  /// The header lines that sign one attempt of a request (an object store's Authorization,
  /// x-amz-date, ...), from its method, URL and the hex SHA-256 of its body. Set: redirects
  /// are not followed (a signature holds for one host) and no bearer token is sent.
  std::function<std::vector<std::string>(std::string_view method, const std::string& url,
                                         std::string_view body_sha256)>
      sign = {};
  /// What an error answer means, from its status and the start of its body (an object store's
  /// XML error); nullopt, or unset: judged by the status alone.
  std::function<std::optional<HttpFailure>(long status, std::string_view body)> explain = {};
  /// The name messages give the file ("s3://bucket/key" for an endpoint's URL). Empty: the URL
  /// without its user, password and query.
  std::string display = {};
  /// Asked while a transfer runs (from any thread); true stops it with Error{interrupted}.
  std::function<bool()> should_stop = {};
  /// Send the URL's path as written: "." and ".." segments are not removed (object keys).
  bool path_as_is = false;
};

/// What one response said (the last one, after redirects).
struct HttpResponse {
  long status = 0;
  std::string content_range, etag, last_modified, content_encoding;
  std::optional<uint64_t> content_length, retry_after;
  /// X-Linked-Etag, which the Hub sends on its /resolve/ answers (the redirect to its CDN
  /// included) for files in LFS: their SHA-256. Kept across redirects.
  std::string linked_etag;
};
/// Reads one header line of a response into `r`; a status line ("HTTP/1.1 206 ...") starts a
/// new response. Lines it does not know are skipped.
void read_response_header(std::string_view line, HttpResponse& r);

/// "bytes FIRST-LAST/TOTAL" with FIRST <= LAST < TOTAL, else nullopt.
struct ContentRange {
  uint64_t first, last, total;
};
std::optional<ContentRange> parse_content_range(std::string_view text);

/// `name` (a file name, percent-encoded here) inside the directory URL `dir` ("http://h/d" or
/// "http://h/d/" + "x" is "http://h/d/x"; a query string stays at the end).
std::string url_join(std::string_view dir, std::string_view name);
/// True when the URL's path ends with '/' (a directory by its spelling).
bool url_ends_with_slash(std::string_view url) noexcept;
/// The URL as messages show it: user and password (https://user:pass@host/) left out, the
/// query's values hidden ("?X-Amz-Signature=...": a presigned URL's signature is a secret), no
/// fragment.
std::string url_for_messages(std::string_view url);

/// `size` bytes of the file at `offset` go to `dst` (read_ranges).
struct HttpRange {
  uint64_t offset;
  std::byte* dst;
  uint64_t size;
};

class HttpFile {
 public:
  /// Fetches the first `first_bytes` bytes (kept: see prefix()), learning the size and the
  /// validator. Error{io} naming the URL (never the token) when the server refuses; errno
  /// ENOENT for 404 and 410.
  static std::shared_ptr<HttpFile> open(const std::string& url, const HttpOptions& options = {},
                                        uint64_t first_bytes = kHttpFirstRange);

  uint64_t size() const noexcept { return size_; }
  /// The SHA-256 the server published for the file, lower-case hex: its X-Linked-Etag, else a
  /// strong ETag that is one (64 hex digits); empty when neither is.
  const std::string& published_sha256() const noexcept { return published_sha256_; }
  /// "X-Linked-Etag" or "ETag": the header published_sha256() came from.
  const char* published_by() const noexcept { return published_by_; }
  /// The first bytes of the file, as the opening request returned them.
  std::span<const std::byte> prefix() const noexcept { return prefix_; }
  /// Reads exactly dst.size() bytes at `offset` of the pinned version of the file.
  void read(uint64_t offset, std::span<std::byte> dst) const;
  /// Reads several ranges (bytes the opening request brought are copied from prefix()): ranges
  /// that touch in the file are fetched by one request, long ones
  /// are split into kHttpRequestBytes requests, and up to kHttpConnections requests are in
  /// flight at once, each writing its bytes straight into the ranges' destinations.
  void read_ranges(std::span<const HttpRange> ranges) const;

  HttpFile(std::string url, HttpOptions options);
  ~HttpFile();

 private:
  struct Exchange;
  // Fetches the bytes of `ranges` (consecutive in the file) with one request (the opening
  // request, which pins the file, may get fewer: a small file); returns the bytes received.
  // Thread-safe once pinned (open() pins it).
  uint64_t transfer(std::span<const HttpRange> ranges, int spool_fd = -1);
  // The whole file in a temporary file, fetched by the first caller (once); its descriptor.
  int spool() const;
  [[noreturn]] void fail(std::string detail, int err = EIO) const;

  std::string url_;
  HttpOptions options_;
  bool pinned_ = false;
  uint64_t size_ = 0;
  std::string validator_;  // a strong ETag, else Last-Modified (may be empty)
  bool validator_is_etag_ = false;
  std::string published_sha256_;
  const char* published_by_ = "";
  std::vector<std::byte> prefix_;
  std::unique_ptr<CurlPool> handles_;        // libcurl handles kept for their open connections
  std::atomic<bool> ranges_ignored_{false};  // a Range request was answered with 200
  mutable std::mutex spool_mutex_;
  mutable int spool_fd_ = -1;  // the whole file, once spool() fetched it
};

/// A ByteSource over one pinned remote file (its ranges go to read_ranges together).
std::shared_ptr<const ByteSource> http_source(std::shared_ptr<const HttpFile> file,
                                              std::string name);
/// The whole of a small remote file (at most kMaxTextFileSize bytes), or nullopt when the
/// server says there is none.
std::optional<std::string> read_small_http(const std::string& url, const HttpOptions& options);

}  // namespace tlio::detail

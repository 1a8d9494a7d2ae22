// io/http_request.hpp: what every HTTP(S) exchange of tlio shares (HttpFile's ranged reads,
// an object store's uploads): the options libcurl gets, kept-alive handles, the retry rules
// and the errors a failed exchange ends in; and one whole request with a body (PUT, POST,
// DELETE), retried by those rules.
#pragma once

#include <curl/curl.h>

#include <cstddef>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "io/http.hpp"

namespace tlio::detail {

/// `options` with every 0 or empty default filled in from the environment (TLIO_HTTP_*,
/// CURL_CA_BUNDLE). The token is left as given.
HttpOptions resolve_http_options(HttpOptions options);

/// libcurl easy handles kept between requests: each keeps its connection open, so a run of
/// requests to one server pays for one TCP (and TLS) handshake per handle, not per request.
class CurlPool {
 public:
  CurlPool() = default;
  CurlPool(const CurlPool&) = delete;
  ~CurlPool();
  /// A handle for one transfer, taken on construction (Error{io, ENOMEM} naming `name` when
  /// libcurl cannot make one): given back if keep() was called (its transfer succeeded, the
  /// connection is sound), else cleaned up.
  class Lease {
   public:
    Lease(CurlPool& pool, const std::string& name);
    ~Lease();
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    CURL* get() const noexcept { return curl_; }
    void keep() noexcept { keep_ = true; }

   private:
    CurlPool& pool_;
    CURL* curl_;
    bool keep_ = false;
  };

 private:
  // An idle handle, reset (options gone, connection kept), or a new one; null when libcurl
  // cannot make one.
  CURL* take();
  void give_back(CURL* c);

  std::mutex mutex_;
  std::vector<CURL*> idle_;
};

/// The header lines as libcurl takes them, freed with the list. Error{io, ENOMEM} naming `name`.
using CurlHeaders = std::unique_ptr<curl_slist, void (*)(curl_slist*)>;
CurlHeaders curl_headers(std::span<const std::string> lines, const std::string& name);

/// Sets what every request of tlio has: the URL, http(s) only (after redirects too),
/// redirects followed unless the request is signed, timeouts, the user agent, the CA bundle,
/// and the bearer token (to the first origin only) unless the request is signed.
void set_common_options(CURL* curl, const std::string& url, const HttpOptions& options);

/// Whether another attempt may succeed after this libcurl result (a network failure, not a
/// refused certificate or a malformed URL), and whether it says the host could not be reached.
bool curl_transient(CURLcode rc) noexcept;
bool curl_unreachable(CURLcode rc) noexcept;
/// The errno a libcurl failure is reported with.
int curl_errno(CURLcode rc) noexcept;
/// A host that does not resolve or refuses the connection rarely changes its mind in a second:
/// one quick retry, not the full count (a typo in a URL should fail at once).
inline constexpr int kUnreachableAttempts = 2;
/// How much of an error answer's body is kept for HttpOptions::explain.
inline constexpr size_t kMaxErrorBody = 16 << 10;

/// The name messages give a request's file: options.display, else url_for_messages(url).
std::string name_for_messages(const std::string& url, const HttpOptions& options);

/// Throws the Error a request that ended with this status (or libcurl result, with status 0)
/// after `attempt` attempts ends in: HttpOptions::explain's reading of the body first, else by
/// the status (404/410 ENOENT, 401/403 EACCES, 412 ESTALE).
[[noreturn]] void throw_http_failure(const std::string& url, const HttpOptions& options,
                                     long status, std::string_view error_body, CURLcode rc,
                                     int attempt);

/// Whether the status and result of one attempt are worth another (5xx, 429, a cut
/// connection), given what explain says of the body.
bool http_retryable(const HttpOptions& options, long status, std::string_view error_body,
                    CURLcode rc);

/// The wait before attempt `attempt + 1`: exponential from 250 ms, or Retry-After (at most 60 s).
void http_backoff(int attempt, std::optional<uint64_t> retry_after);

struct HttpReply {
  long status = 0;
  std::string etag;
  std::string body;  ///< at most kMaxReplyBody bytes
};
/// Replies to uploads are small XML documents.
inline constexpr size_t kMaxReplyBody = 1 << 20;

/// One request with `body` (empty: none), signed per attempt by options.sign, retried by the
/// rules above; a 2xx answer is returned, anything else thrown (throw_http_failure).
/// `body_sha256` is the body's hex SHA-256, for the signature. options.should_stop is asked
/// while the request runs; when it says stop, Error{interrupted}.
HttpReply http_request(CurlPool& pool, std::string_view method, const std::string& url,
                       std::span<const std::byte> body, std::string_view body_sha256,
                       const HttpOptions& options, std::span<const std::string> extra_headers = {});

}  // namespace tlio::detail

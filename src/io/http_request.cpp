#include "io/http_request.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <system_error>
#include <thread>

#include "io/curl_library.hpp"
#include "io/interrupt.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {

HttpOptions resolve_http_options(HttpOptions o) {
  if (o.timeout_seconds <= 0) {
    const char* t = std::getenv("TLIO_HTTP_TIMEOUT");
    o.timeout_seconds = t && std::atol(t) > 0 ? std::atol(t) : 30;
  }
  if (o.attempts <= 0) {
    const char* a = std::getenv("TLIO_HTTP_ATTEMPTS");
    o.attempts = a && std::atoi(a) > 0 ? std::atoi(a) : kHttpAttempts;
  }
  if (o.connections == 0) {
    const char* c = std::getenv("TLIO_HTTP_CONNECTIONS");
    o.connections = c && std::atoi(c) > 0 ? static_cast<unsigned>(std::min(std::atoi(c), 64))
                                          : kHttpConnections;
  }
  if (o.ca_bundle.empty())
    if (const char* ca = std::getenv("CURL_CA_BUNDLE")) o.ca_bundle = ca;
  return o;
}

CurlPool::~CurlPool() {
  for (CURL* c : idle_) curl_library().easy_cleanup(c);
}

CURL* CurlPool::take() {
  {
    std::lock_guard lock(mutex_);
    if (!idle_.empty()) {
      CURL* c = idle_.back();
      idle_.pop_back();
      curl_library().easy_reset(c);  // options go; the open connection stays
      return c;
    }
  }
  return curl_library().easy_init();
}

void CurlPool::give_back(CURL* c) {
  std::lock_guard lock(mutex_);
  idle_.push_back(c);
}

CurlPool::Lease::Lease(CurlPool& pool, const std::string& name) : pool_(pool), curl_(pool.take()) {
  if (!curl_)
    throw_io("libcurl could not start", name, std::error_code(ENOMEM, std::generic_category()));
}

CurlPool::Lease::~Lease() {
  if (keep_)
    pool_.give_back(curl_);
  else
    curl_library().easy_cleanup(curl_);
}

CurlHeaders curl_headers(std::span<const std::string> lines, const std::string& name) {
  const CurlLibrary& lib = curl_library();
  CurlHeaders list(nullptr, lib.slist_free_all);
  for (const std::string& line : lines) {
    curl_slist* next = lib.slist_append(list.get(), line.c_str());
    if (!next) throw_io("out of memory", name, std::error_code(ENOMEM, std::generic_category()));
    (void)list.release();  // the same list, one line longer
    list.reset(next);
  }
  return list;
}

std::string name_for_messages(const std::string& url, const HttpOptions& options) {
  if (!options.display.empty()) return options.display;
  return url_for_messages(url);
}

void set_common_options(CURL* curl, const std::string& url, const HttpOptions& options) {
  const CurlLibrary& lib = curl_library();
  lib.easy_setopt(curl, CURLOPT_URL, url.c_str());
  // A signature holds for one host: a signed request never follows a redirect.
  lib.easy_setopt(curl, CURLOPT_FOLLOWLOCATION, options.sign ? 0L : 1L);
  lib.easy_setopt(curl, CURLOPT_MAXREDIRS, kHttpMaxRedirects);
  // Only http(s), after redirects too: refused outright if this libcurl cannot promise it.
  if (lib.easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https") != CURLE_OK ||
      lib.easy_setopt(curl, CURLOPT_REDIR_PROTOCOLS_STR, "http,https") != CURLE_OK)
    throw_io("libcurl cannot restrict requests to http and https", name_for_messages(url, options),
             std::error_code(ENOTSUP, std::generic_category()));
  lib.easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  if (options.path_as_is) lib.easy_setopt(curl, CURLOPT_PATH_AS_IS, 1L);
  lib.easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, options.timeout_seconds);
  lib.easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);  // no byte for the timeout: abandoned
  lib.easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, options.timeout_seconds);
  lib.easy_setopt(curl, CURLOPT_USERAGENT, "tlio");
  // TLS is verified against the system's CAs, or the bundle options.ca_bundle names.
  if (!options.ca_bundle.empty()) lib.easy_setopt(curl, CURLOPT_CAINFO, options.ca_bundle.c_str());
  if (!options.token.empty() && !options.sign) {
    // libcurl sends it to the first origin only (CURLOPT_UNRESTRICTED_AUTH stays off).
    lib.easy_setopt(curl, CURLOPT_HTTPAUTH, CURLAUTH_BEARER);
    lib.easy_setopt(curl, CURLOPT_XOAUTH2_BEARER, options.token.c_str());
  }
}

bool curl_unreachable(CURLcode rc) noexcept {
  return rc == CURLE_COULDNT_RESOLVE_HOST || rc == CURLE_COULDNT_RESOLVE_PROXY ||
         rc == CURLE_COULDNT_CONNECT;
}

bool curl_transient(CURLcode rc) noexcept {
  switch (rc) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_PARTIAL_FILE:
    case CURLE_GOT_NOTHING:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return true;
    default:
      return false;  // TLS verification, a bad URL, too many redirects: final
  }
}

int curl_errno(CURLcode rc) noexcept {
  switch (rc) {
    case CURLE_COULDNT_CONNECT:
      return ECONNREFUSED;
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
      return EHOSTUNREACH;
    case CURLE_OPERATION_TIMEDOUT:
      return ETIMEDOUT;
    case CURLE_PARTIAL_FILE:
    case CURLE_GOT_NOTHING:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
      return ECONNRESET;
    default:
      return EIO;
  }
}

namespace {
[[noreturn]] void fail(const std::string& url, const HttpOptions& options, std::string detail,
                       int err) {
  throw_io(std::move(detail), name_for_messages(url, options),
           std::error_code(err, std::generic_category()));
}
}  // namespace

bool http_retryable(const HttpOptions& options, long status, std::string_view error_body,
                    CURLcode rc) {
  if (status >= 300 && options.explain)
    if (const auto f = options.explain(status, error_body)) return f->retry;
  const bool busy = status == 429 || (status >= 500 && status < 600);
  const bool cut = curl_transient(rc) && (status == 0 || status == 200 || status == 206);
  return busy || cut;
}

void throw_http_failure(const std::string& url, const HttpOptions& options, long status,
                        std::string_view error_body, CURLcode rc, int attempt) {
  if (status >= 300 && options.explain)
    if (const auto f = options.explain(status, error_body))
      fail(url, options, f->message, f->os_error);
  if (status == 404 || status == 410)
    fail(url, options, fmt::format("HTTP {}: not found", status), ENOENT);
  if (status == 401 || status == 403)
    fail(url, options,
         fmt::format("HTTP {}: access refused (a token? HF_TOKEN or --token)", status), EACCES);
  if (status == 412) fail(url, options, "the file changed on the server while it was read", ESTALE);
  if (status && (status < 200 || status >= 300))
    fail(url, options, fmt::format("HTTP {} after {} attempt(s)", status, attempt), EIO);
  fail(url, options,
       fmt::format("{} after {} attempt(s)", curl_library().easy_strerror(rc), attempt),
       curl_errno(rc));
}

void http_backoff(int attempt, std::optional<uint64_t> retry_after) {
  auto wait = std::chrono::milliseconds(250 << std::min(attempt - 1, 8));
  if (retry_after) wait = std::chrono::milliseconds(std::min<uint64_t>(*retry_after, 60) * 1000);
  std::this_thread::sleep_for(wait);
}

namespace {

// One request's state, shared with libcurl's callbacks (which may throw nothing).
struct Call {
  std::span<const std::byte> body;
  size_t sent = 0;
  HttpResponse response;
  std::string reply;
  bool overflow = false;
  const HttpOptions* options = nullptr;
  bool stopped = false;

  static size_t on_read(char* out, size_t size, size_t n, void* user) noexcept {
    auto* c = static_cast<Call*>(user);
    const size_t len = std::min(size * n, c->body.size() - c->sent);
    std::memcpy(out, c->body.data() + c->sent, len);
    c->sent += len;
    return len;
  }
  static int on_seek(void* user, curl_off_t offset, int origin) noexcept {  // a resent body
    auto* c = static_cast<Call*>(user);
    if (origin != SEEK_SET || offset < 0 || static_cast<uint64_t>(offset) > c->body.size())
      return CURL_SEEKFUNC_FAIL;
    c->sent = static_cast<size_t>(offset);
    return CURL_SEEKFUNC_OK;
  }
  static size_t on_header(char* data, size_t size, size_t n, void* user) noexcept {
    try {
      read_response_header({data, size * n}, static_cast<Call*>(user)->response);
    } catch (...) {
      return 0;
    }
    return size * n;
  }
  static size_t on_body(char* data, size_t size, size_t n, void* user) noexcept {
    auto* c = static_cast<Call*>(user);
    const size_t len = size * n;
    const size_t cap =
        c->response.status >= 200 && c->response.status < 300 ? kMaxReplyBody : kMaxErrorBody;
    try {
      const size_t keep = std::min(len, cap - std::min(cap, c->reply.size()));
      c->reply.append(data, keep);
      if (keep < len) c->overflow = true;
    } catch (...) {
      return 0;
    }
    return len;  // the rest of a long answer is dropped, the connection kept
  }
  static int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) noexcept {
    auto* c = static_cast<Call*>(user);
    try {
      if (c->options->should_stop && c->options->should_stop()) c->stopped = true;
    } catch (...) {
      c->stopped = true;
    }
    return c->stopped ? 1 : 0;
  }
};

}  // namespace

HttpReply http_request(CurlPool& pool, std::string_view method, const std::string& url,
                       std::span<const std::byte> body, std::string_view body_sha256,
                       const HttpOptions& options, std::span<const std::string> extra_headers) {
  const CurlLibrary& lib = curl_library();
  const std::string verb(method);
  for (int attempt = 1;; ++attempt) {
    Call c;
    c.body = body;
    c.options = &options;
    CurlPool::Lease lease(pool, name_for_messages(url, options));
    CURL* curl = lease.get();
    // No 100-continue round trip before each body.
    std::vector<std::string> lines = {"Expect:", "Accept-Encoding: identity"};
    lines.insert(lines.end(), extra_headers.begin(), extra_headers.end());
    if (options.sign)
      for (std::string& h : options.sign(method, url, body_sha256)) lines.push_back(std::move(h));
    const CurlHeaders headers = curl_headers(lines, name_for_messages(url, options));
    set_common_options(curl, url, options);
    lib.easy_setopt(curl, CURLOPT_HTTPHEADER, headers.get());
    if (verb == "PUT") {
      lib.easy_setopt(curl, CURLOPT_UPLOAD, 1L);
      lib.easy_setopt(curl, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(body.size()));
      lib.easy_setopt(curl, CURLOPT_READFUNCTION, &Call::on_read);
      lib.easy_setopt(curl, CURLOPT_READDATA, &c);
      lib.easy_setopt(curl, CURLOPT_SEEKFUNCTION, &Call::on_seek);
      lib.easy_setopt(curl, CURLOPT_SEEKDATA, &c);
    } else if (verb == "POST") {
      lib.easy_setopt(curl, CURLOPT_POST, 1L);
      lib.easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
      lib.easy_setopt(curl, CURLOPT_POSTFIELDS,
                      body.empty() ? "" : reinterpret_cast<const char*>(body.data()));
    } else if (verb == "HEAD") {
      lib.easy_setopt(curl, CURLOPT_NOBODY, 1L);
    } else if (verb != "GET") {
      lib.easy_setopt(curl, CURLOPT_CUSTOMREQUEST, verb.c_str());
    }
    lib.easy_setopt(curl, CURLOPT_HEADERFUNCTION, &Call::on_header);
    lib.easy_setopt(curl, CURLOPT_HEADERDATA, &c);
    lib.easy_setopt(curl, CURLOPT_WRITEFUNCTION, &Call::on_body);
    lib.easy_setopt(curl, CURLOPT_WRITEDATA, &c);
    lib.easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
    lib.easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, &Call::on_progress);
    lib.easy_setopt(curl, CURLOPT_XFERINFODATA, &c);
    const CURLcode rc = lib.easy_perform(curl);
    if (rc == CURLE_OK) lease.keep();
    if (c.stopped) throw_interrupted();
    const long status = c.response.status;
    if (rc == CURLE_OK && status >= 200 && status < 300) {
      if (c.overflow)
        fail(url, options, fmt::format("the answer is longer than {} bytes", kMaxReplyBody), EIO);
      return {status, c.response.etag, std::move(c.reply)};
    }
    const std::string_view error_body =
        status >= 300 ? std::string_view(c.reply) : std::string_view();
    if (!http_retryable(options, status, error_body, rc) || attempt >= options.attempts ||
        (curl_unreachable(rc) && attempt >= kUnreachableAttempts && status == 0))
      throw_http_failure(url, options, status, error_body, rc, attempt);
    http_backoff(attempt, c.response.retry_after);
  }
}

}  // namespace tlio::detail

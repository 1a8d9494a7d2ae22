#include "io/http.hpp"

#include <curl/curl.h>
#include <fmt/core.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>

#include "tlio/error.hpp"

namespace tlio::detail {
namespace {

[[noreturn]] void http_fail(const std::string& url, std::string detail, int err = EIO) {
  throw_io(std::move(detail), url, std::error_code(err, std::generic_category()));
}

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == '\r' || s.back() == '\n' || s.back() == ' ' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

std::optional<uint64_t> number(std::string_view s) {
  if (s.empty() || s.size() > 19) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v;
}

// What one response said (the last one, after redirects).
struct Response {
  long status = 0;
  std::string content_range, etag, last_modified, content_encoding;
  std::optional<uint64_t> content_length, retry_after;
};

}  // namespace

bool is_url(std::string_view name) noexcept {
  return name.substr(0, 7) == "http://" || name.substr(0, 8) == "https://";
}

// One request's state, shared with libcurl's callbacks.
struct HttpFile::Exchange {
  HttpFile* file = nullptr;
  Response response;
  // Bytes wanted: file offsets [want_begin, want_end); they land in dst.
  uint64_t want_begin = 0, want_end = 0;
  std::byte* dst = nullptr;
  uint64_t received = 0;     // of [want_begin, want_end) so far (kept across retries)
  uint64_t asked_from = 0;   // this attempt's Range start
  uint64_t body_offset = 0;  // file offset of the next body byte
  bool body_started = false;
  bool done = false;     // everything wanted arrived (the rest of a 200 body is dropped)
  std::string problem;   // why the body callback refused the answer (not retried)

  static size_t on_header(char* data, size_t size, size_t n, void* user) {
    auto* x = static_cast<Exchange*>(user);
    const std::string_view line(data, size * n);
    if (line.substr(0, 5) == "HTTP/") {  // a new response (after a redirect): start over
      x->response = Response{};
      const auto space = line.find(' ');
      if (space != std::string_view::npos)
        x->response.status = std::atol(std::string(line.substr(space + 1, 3)).c_str());
      return size * n;
    }
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) return size * n;
    const std::string key = lower(trim(line.substr(0, colon)));
    const std::string_view value = trim(line.substr(colon + 1));
    if (key == "content-range") x->response.content_range = value;
    else if (key == "etag") x->response.etag = value;
    else if (key == "last-modified") x->response.last_modified = value;
    else if (key == "content-encoding") x->response.content_encoding = lower(value);
    else if (key == "content-length") x->response.content_length = number(value);
    else if (key == "retry-after") x->response.retry_after = number(value);
    return size * n;
  }

  // Checks the answer's headers before any of its bytes is used; "" when it may be used.
  std::string check_answer() {
    const Response& r = response;
    if (!r.content_encoding.empty() && r.content_encoding != "identity")
      return fmt::format("the server sent the file {}-encoded, which would change its bytes", r.content_encoding);
    HttpFile& f = *file;
    std::optional<uint64_t> total;
    if (r.status == 206) {
      const auto slash = r.content_range.rfind('/');
      if (r.content_range.substr(0, 6) != "bytes " || slash == std::string::npos ||
          !(total = number(r.content_range.substr(slash + 1))))
        return fmt::format("a 206 answer without a usable Content-Range (\"{}\")", r.content_range);
    } else {
      total = r.content_length;  // 200: the whole file
    }
    const bool weak = r.etag.substr(0, 2) == "W/";
    const std::string etag = weak ? std::string() : r.etag;
    if (!f.pinned_) {  // the first answer pins the version: size and validator
      if (!total) return "the server gave no size for the file";
      f.size_ = *total;
      f.validator_ = !etag.empty() ? etag : r.last_modified;
      f.validator_is_etag_ = !etag.empty();
      f.pinned_ = true;
    } else {
      const std::string& now = f.validator_is_etag_ ? etag : r.last_modified;
      if ((total && *total != f.size_) || (!f.validator_.empty() && !now.empty() && now != f.validator_))
        return "the file changed on the server while it was read";
      if (r.status == 200 && !f.validator_.empty() && now.empty())
        return "the server answered with the whole file and no validator: it may have changed";
    }
    want_end = std::min(want_end, f.size_);  // the opening request may ask past a small file
    if (r.status == 206) {
      const std::string expected = fmt::format("bytes {}-{}/{}", asked_from, want_end - 1, f.size_);
      if (r.content_range != expected)
        return fmt::format("asked for bytes {}-{}, the server answered \"{}\"", asked_from, want_end - 1, r.content_range);
      body_offset = asked_from;
    } else {
      body_offset = 0;  // 200: the whole body streams past; the wanted bytes are kept
    }
    return {};
  }

  static size_t on_body(char* data, size_t size, size_t n, void* user) {
    auto* x = static_cast<Exchange*>(user);
    const size_t len = size * n;
    if (!x->body_started) {
      x->body_started = true;
      if (x->response.status != 200 && x->response.status != 206) return 0;  // an error page
      x->problem = x->check_answer();
      if (!x->problem.empty()) return 0;
    }
    if (x->done) return 0;  // a 200 body past what was wanted: stop here
    const uint64_t at = x->body_offset;
    x->body_offset += len;
    const uint64_t next = x->want_begin + x->received;
    const uint64_t from = std::max(at, next), to = std::min(at + len, x->want_end);
    if (from < to) {
      std::memcpy(x->dst + (from - x->want_begin), data + (from - at), static_cast<size_t>(to - from));
      x->received += to - from;
    }
    if (x->want_begin + x->received >= x->want_end) {
      x->done = true;
      if (at + len > x->want_end) return 0;  // the rest of a whole-file body is not needed
    }
    return len;
  }
};

HttpFile::HttpFile(std::string url, HttpOptions options) : url_(std::move(url)), options_(std::move(options)) {
  if (options_.token.empty())
    if (const char* t = std::getenv("HF_TOKEN")) options_.token = t;
  if (options_.timeout_seconds <= 0) {
    const char* t = std::getenv("TLIO_HTTP_TIMEOUT");
    options_.timeout_seconds = t && std::atol(t) > 0 ? std::atol(t) : 30;
  }
  if (options_.attempts <= 0) {
    const char* a = std::getenv("TLIO_HTTP_ATTEMPTS");
    options_.attempts = a && std::atoi(a) > 0 ? std::atoi(a) : kHttpAttempts;
  }
}

HttpFile::~HttpFile() = default;

std::shared_ptr<HttpFile> HttpFile::open(const std::string& url, const HttpOptions& options) {
  global_init();
  auto f = std::make_shared<HttpFile>(url, options);
  f->prefix_.resize(static_cast<size_t>(kHttpFirstRange));
  const uint64_t got = f->transfer(0, f->prefix_);
  f->prefix_.resize(static_cast<size_t>(got));
  return f;
}

void HttpFile::read(uint64_t offset, std::span<std::byte> dst) const {
  if (dst.empty()) return;
  if (offset > size_ || dst.size() > size_ - offset)
    http_fail(url_, fmt::format("read of {} bytes at {} is past the end of the file ({} bytes)", dst.size(), offset, size_));
  const uint64_t got = const_cast<HttpFile*>(this)->transfer(offset, dst);
  if (got != dst.size()) http_fail(url_, "the server sent fewer bytes than asked");
}

uint64_t HttpFile::transfer(uint64_t offset, std::span<std::byte> dst) {
  Exchange x;
  x.file = this;
  x.want_begin = offset;
  x.want_end = offset + dst.size();
  x.dst = dst.data();
  for (int attempt = 1;; ++attempt) {
    x.asked_from = offset + x.received;
    x.response = Response{};
    x.body_started = false;
    CURL* curl = curl_easy_init();
    if (!curl) http_fail(url_, "libcurl could not start", ENOMEM);
    std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> guard(curl, curl_easy_cleanup);
    curl_slist* headers = nullptr;
    headers = curl_slist_append(headers, fmt::format("Range: bytes={}-{}", x.asked_from, x.want_end - 1).c_str());
    headers = curl_slist_append(headers, "Accept-Encoding: identity");
    if (pinned_ && !validator_.empty())
      headers = curl_slist_append(headers, fmt::format("If-Range: {}", validator_).c_str());
    std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> header_guard(headers, curl_slist_free_all);
    curl_easy_setopt(curl, CURLOPT_URL, url_.c_str());
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(curl, CURLOPT_MAXREDIRS, kHttpMaxRedirects);
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, options_.timeout_seconds);
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);  // no byte for the timeout: abandoned
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, options_.timeout_seconds);
    curl_easy_setopt(curl, CURLOPT_USERAGENT, "tlio");
    if (!options_.token.empty()) {
      // libcurl sends it to the first origin only (CURLOPT_UNRESTRICTED_AUTH stays off).
      curl_easy_setopt(curl, CURLOPT_HTTPAUTH, CURLAUTH_BEARER);
      curl_easy_setopt(curl, CURLOPT_XOAUTH2_BEARER, options_.token.c_str());
    }
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, &Exchange::on_header);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, &x);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &Exchange::on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &x);
    const CURLcode rc = curl_easy_perform(curl);
    const Response& r = x.response;

    if (!x.problem.empty()) http_fail(url_, x.problem, ESTALE);
    if (x.done) return x.received;
    if (rc == CURLE_OK && (r.status == 200 || r.status == 206) && x.body_started)
      return x.received;  // the whole answer arrived (the opening request of a small file)
    if (!pinned_ && r.status == 416) {  // the opening request of an empty file
      pinned_ = true;
      size_ = 0;
      return 0;
    }
    // Retry connection errors, cut bodies, 5xx and 429 (after Retry-After); not the rest.
    const bool busy = r.status == 429 || (r.status >= 500 && r.status < 600);
    const bool cut = rc != CURLE_OK && (r.status == 0 || r.status == 200 || r.status == 206);
    if (!(busy || cut) || attempt >= options_.attempts) {
      if (r.status == 404 || r.status == 410) http_fail(url_, fmt::format("HTTP {}: not found", r.status), ENOENT);
      if (r.status == 401 || r.status == 403)
        http_fail(url_, fmt::format("HTTP {}: access refused (a token? HF_TOKEN or --token)", r.status), EACCES);
      if (r.status == 412) http_fail(url_, "the file changed on the server while it was read", ESTALE);
      if (r.status && r.status != 200 && r.status != 206)
        http_fail(url_, fmt::format("HTTP {} after {} attempt(s)", r.status, attempt));
      http_fail(url_, fmt::format("{} after {} attempt(s)", curl_easy_strerror(rc), attempt),
                rc == CURLE_OPERATION_TIMEDOUT ? ETIMEDOUT : ECONNRESET);
    }
    auto wait = std::chrono::milliseconds(250 << (attempt - 1));
    if (r.retry_after) wait = std::chrono::milliseconds(std::min<uint64_t>(*r.retry_after, 60) * 1000);
    std::this_thread::sleep_for(wait);
  }
}

}  // namespace tlio::detail

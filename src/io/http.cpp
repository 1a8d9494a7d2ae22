#include "io/http.hpp"

#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>

#include "common/text.hpp"
#include "io/curl_library.hpp"
#include "io/digest.hpp"
#include "io/http_request.hpp"
#include "io/os_file.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {
namespace {

std::optional<uint64_t> number(std::string_view s) {
  if (s.empty() || s.size() > 19) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v;
}

// The SHA-256 an entity tag names ("64 hex digits", quoted or not; not a weak one), in lower
// case, or empty: the Hub's LFS files are tagged by their SHA-256.
std::string sha256_in_etag(std::string_view tag) {
  if (tag.size() >= 2 && tag.front() == '"' && tag.back() == '"')
    tag = tag.substr(1, tag.size() - 2);
  return is_sha256_hex(tag) ? ascii_lower(tag) : std::string();
}

}  // namespace

void read_response_header(std::string_view line, HttpResponse& r) {
  if (line.substr(0, 5) == "HTTP/") {  // a new response (after a redirect): start over
    std::string linked_etag = std::move(r.linked_etag);  // the redirect's, kept
    r = HttpResponse{};
    r.linked_etag = std::move(linked_etag);
    const auto space = line.find(' ');
    if (space != std::string_view::npos)
      if (const auto status = number(line.substr(space + 1, 3)); status && *status >= 100)
        r.status = static_cast<long>(*status);
    return;
  }
  const auto colon = line.find(':');
  if (colon == std::string_view::npos) return;
  const std::string key = ascii_lower(trim_blanks(line.substr(0, colon)));
  const std::string_view value = trim_blanks(line.substr(colon + 1));
  if (key == "content-range")
    r.content_range = value;
  else if (key == "etag")
    r.etag = value;
  else if (key == "last-modified")
    r.last_modified = value;
  else if (key == "content-encoding")
    r.content_encoding = ascii_lower(value);
  else if (key == "content-length")
    r.content_length = number(value);
  else if (key == "retry-after")
    r.retry_after = number(value);
  else if (key == "x-linked-etag")
    r.linked_etag = value;
}

std::optional<ContentRange> parse_content_range(std::string_view text) {
  if (text.substr(0, 6) != "bytes ") return std::nullopt;
  text.remove_prefix(6);
  const size_t dash = text.find('-'), slash = text.find('/');
  if (dash == std::string_view::npos || slash == std::string_view::npos || slash < dash)
    return std::nullopt;
  const auto first = number(text.substr(0, dash)),
             last = number(text.substr(dash + 1, slash - dash - 1)),
             total = number(text.substr(slash + 1));
  if (!first || !last || !total || *first > *last || *last >= *total) return std::nullopt;
  return ContentRange{*first, *last, *total};
}

namespace {
// The URL up to its query or fragment (the part a path is joined to).
size_t path_end(std::string_view url) noexcept { return std::min(url.find('?'), url.find('#')); }
}  // namespace

std::string url_join(std::string_view dir, std::string_view name) {
  const size_t end = std::min(path_end(dir), dir.size());
  std::string out(dir.substr(0, end));
  if (out.empty() || out.back() != '/') out += '/';
  // Percent-encoded: a '?', '#' or space in a file name is part of the name, not of the URL.
  // Every byte but RFC 3986's unreserved characters, as curl_easy_escape does (done here so
  // that naming a file needs no libcurl).
  constexpr char kHex[] = "0123456789ABCDEF";
  for (const char c : name) {
    const auto b = static_cast<unsigned char>(c);
    if ((b >= 'A' && b <= 'Z') || (b >= 'a' && b <= 'z') || (b >= '0' && b <= '9') || b == '-' ||
        b == '.' || b == '_' || b == '~') {
      out += c;
    } else {
      out += '%';
      out += kHex[b >> 4];
      out += kHex[b & 15];
    }
  }
  out += dir.substr(end);
  return out;
}

bool url_ends_with_slash(std::string_view url) noexcept {
  const size_t end = std::min(path_end(url), url.size());
  return end > 0 && url[end - 1] == '/';
}

std::string url_for_messages(std::string_view url) {
  std::string out(url.substr(0, std::min(url.find('#'), url.size())));
  // A query's values may be secrets (a presigned URL's signature, a token): names only.
  if (const size_t q = out.find('?'); q != std::string::npos) {
    std::string query = out.substr(q + 1), shown;
    out.resize(q + 1);
    for (size_t start = 0; start <= query.size();) {
      const size_t end = std::min(query.find('&', start), query.size());
      const std::string_view pair = std::string_view(query).substr(start, end - start);
      if (!shown.empty()) shown += '&';
      shown += pair.substr(0, pair.find('='));
      if (pair.find('=') != std::string_view::npos) shown += "=...";
      start = end + 1;
    }
    out += shown;
  }
  const size_t scheme = out.find("://");
  if (scheme == std::string::npos) return out;
  const size_t host = scheme + 3;
  const size_t authority_end = std::min(out.find_first_of("/?#", host), out.size());
  const size_t at = out.substr(0, authority_end).rfind('@');
  if (at == std::string::npos || at < host) return out;
  return out.substr(0, host) + out.substr(at + 1);
}

// One request's state, shared with libcurl's callbacks.
struct HttpFile::Exchange {
  HttpFile* file = nullptr;
  HttpResponse response;
  // Bytes wanted: file offsets [want_begin, want_end); they land in the ranges' destinations
  // (consecutive ranges, so the body is scattered in order).
  uint64_t want_begin = 0, want_end = 0;
  std::span<const HttpRange> ranges;
  size_t range_index = 0;    // the range the next wanted byte belongs to
  uint64_t received = 0;     // of [want_begin, want_end) so far (kept across retries)
  uint64_t asked_from = 0;   // this attempt's Range start
  uint64_t body_offset = 0;  // file offset of the next body byte
  bool body_started = false;
  bool done = false;    // everything wanted arrived (the rest of a 200 body is dropped)
  std::string problem;  // why the body callback refused the answer (not retried)
  int problem_errno = EIO;
  int spool_fd = -1;        // >= 0: the wanted bytes go to this file, at their file offsets
  bool error_page = false;  // the answer is not 200 or 206: its body is kept in error_body
  std::string error_body;

  // Copies body bytes for file offsets [from, from + len) into the ranges (or the spool file);
  // false, with `problem` set, when the spool cannot be written (a full disk).
  bool scatter(uint64_t from, const char* data, uint64_t len) {
    while (spool_fd >= 0 && len) {
      const ssize_t n =
          ::pwrite(spool_fd, data, static_cast<size_t>(len), static_cast<off_t>(from));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        problem_errno = n < 0 ? errno : ENOSPC;
        problem = fmt::format("cannot write the temporary copy of the file: {}",
                              std::strerror(problem_errno));
        return false;
      }
      from += static_cast<uint64_t>(n);
      data += n;
      len -= static_cast<uint64_t>(n);
    }
    while (len) {
      while (ranges[range_index].offset + ranges[range_index].size <= from) ++range_index;
      const HttpRange& r = ranges[range_index];
      const uint64_t n = std::min(len, r.offset + r.size - from);
      std::memcpy(r.dst + (from - r.offset), data, static_cast<size_t>(n));
      from += n;
      data += n;
      len -= n;
    }
    return true;
  }

  static size_t on_header(char* data, size_t size, size_t n, void* user) noexcept {
    try {
      read_response_header({data, size * n}, static_cast<Exchange*>(user)->response);
    } catch (...) {
      return 0;  // (out of memory) the transfer fails
    }
    return size * n;
  }

  // Checks the answer's headers before any of its bytes is used; "" when it may be used.
  std::string check_answer() {
    const HttpResponse& r = response;
    if (!r.content_encoding.empty() && r.content_encoding != "identity")
      return fmt::format("the server sent the file {}-encoded, which would change its bytes",
                         r.content_encoding);
    HttpFile& f = *file;
    std::optional<uint64_t> total;
    std::optional<ContentRange> range;
    if (r.status == 206) {
      if (!(range = parse_content_range(r.content_range)))
        return fmt::format("a 206 answer without a usable Content-Range (\"{}\")", r.content_range);
      total = range->total;
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
      if (std::string d = sha256_in_etag(r.linked_etag); !d.empty()) {
        f.published_sha256_ = std::move(d);
        f.published_by_ = "X-Linked-Etag";
      } else if (std::string e = sha256_in_etag(etag); !e.empty()) {
        f.published_sha256_ = std::move(e);
        f.published_by_ = "ETag";
      }
      f.pinned_ = true;
    } else {
      const std::string& now = f.validator_is_etag_ ? etag : r.last_modified;
      if ((total && *total != f.size_) ||
          (!f.validator_.empty() && !now.empty() && now != f.validator_)) {
        problem_errno = ESTALE;
        return "the file changed on the server while it was read";
      }
      if (r.status == 200 && !f.validator_.empty() && now.empty())
        return "the server answered with the whole file and no validator: it may have changed";
    }
    want_end = std::min(want_end, f.size_);  // the opening request may ask past a small file
    if (r.status == 206) {
      if (range->first != asked_from || range->last != want_end - 1)
        return fmt::format("asked for bytes {}-{}, the server answered \"{}\"", asked_from,
                           want_end - 1, r.content_range);
      body_offset = asked_from;
    } else {
      body_offset = 0;  // 200: the whole body streams past; the wanted bytes are kept
      f.ranges_ignored_ = true;
    }
    return {};
  }

  // libcurl is C: nothing may be thrown through it.
  static size_t on_body(char* data, size_t size, size_t n, void* user) noexcept {
    auto* x = static_cast<Exchange*>(user);
    try {
      return body(x, data, size * n);
    } catch (...) {
      try {
        x->problem = "out of memory while receiving the file";
        x->problem_errno = ENOMEM;
      } catch (...) {  // then libcurl's own write error says it failed
      }
      return 0;
    }
  }

  static size_t body(Exchange* x, char* data, size_t len) {
    if (!x->body_started) {
      x->body_started = true;
      if (x->response.status != 200 && x->response.status != 206)
        x->error_page = true;
      else
        x->problem = x->check_answer();
      if (!x->problem.empty()) return 0;
    }
    if (x->error_page) {  // kept for HttpOptions::explain (an object store's XML error)
      const size_t keep =
          std::min(len, kMaxErrorBody - std::min(kMaxErrorBody, x->error_body.size()));
      x->error_body.append(data, keep);
      return keep == len ? len : 0;  // a longer page is cut there (its start says what it is)
    }
    if (x->done) return 0;  // a 200 body past what was wanted: stop here
    const uint64_t at = x->body_offset;
    x->body_offset += len;
    const uint64_t next = x->want_begin + x->received;
    const uint64_t from = std::max(at, next), to = std::min(at + len, x->want_end);
    if (from < to) {
      if (!x->scatter(from, data + (from - at), to - from)) return 0;
      x->received += to - from;
    }
    if (x->want_begin + x->received >= x->want_end) {
      x->done = true;
      if (at + len > x->want_end) return 0;  // the rest of a whole-file body is not needed
    }
    return len;
  }
};

HttpFile::HttpFile(std::string url, HttpOptions options)
    : url_(std::move(url)),
      options_(resolve_http_options(std::move(options))),
      handles_(std::make_unique<CurlPool>()) {}

[[noreturn]] void HttpFile::fail(std::string detail, int err) const {
  throw_io(std::move(detail), name_for_messages(url_, options_),
           std::error_code(err, std::generic_category()));
}

HttpFile::~HttpFile() {
  if (spool_fd_ >= 0) ::close(spool_fd_);
}

int HttpFile::spool() const {
  const std::lock_guard lock(spool_mutex_);
  if (spool_fd_ >= 0) return spool_fd_;
  const std::string shown = name_for_messages(url_, options_);
  if (options_.warning)
    options_.warning(
        fmt::format("{}: the server ignores Range requests: the whole file ({} bytes) "
                    "is downloaded once, to a temporary file",
                    shown, size_));
  Fd fd = unnamed_temp_file(shown);
  const HttpRange whole{0, nullptr, size_};
  if (const_cast<HttpFile*>(this)->transfer({&whole, 1}, fd.get()) != size_)
    fail("the server sent fewer bytes than the file has");
  spool_fd_ = fd.release();
  return spool_fd_;
}

std::shared_ptr<HttpFile> HttpFile::open(const std::string& url, const HttpOptions& options,
                                         uint64_t first_bytes) {
  curl_library();  // loads libcurl, or says why it cannot
  auto f = std::make_shared<HttpFile>(url, options);
  f->prefix_.resize(static_cast<size_t>(std::max<uint64_t>(first_bytes, 1)));
  const HttpRange first{0, f->prefix_.data(), f->prefix_.size()};
  const uint64_t got = f->transfer({&first, 1});
  f->prefix_.resize(static_cast<size_t>(got));
  return f;
}

void HttpFile::read(uint64_t offset, std::span<std::byte> dst) const {
  const HttpRange r{offset, dst.data(), dst.size()};
  read_ranges({&r, 1});
}

void HttpFile::read_ranges(std::span<const HttpRange> ranges) const {
  std::vector<HttpRange> sorted;
  for (const HttpRange& r : ranges)
    if (r.offset > size_ || r.size > size_ - r.offset)
      fail(fmt::format("read of {} bytes at {} is past the end of the file ({} bytes)", r.size,
                       r.offset, size_));
  for (const HttpRange& r : ranges) {
    // Bytes the opening request already brought are not asked for again.
    const uint64_t have =
        r.offset < prefix_.size() ? std::min<uint64_t>(prefix_.size() - r.offset, r.size) : 0;
    if (have) std::memcpy(r.dst, prefix_.data() + r.offset, static_cast<size_t>(have));
    if (r.size > have) sorted.push_back({r.offset + have, r.dst + have, r.size - have});
  }
  if (!sorted.empty() && ranges_ignored_) {  // one whole download, then reads from its copy
    const int fd = spool();
    const std::string name = name_for_messages(url_, options_);
    for (const HttpRange& r : sorted)
      pread_exact(fd, r.offset, {r.dst, static_cast<size_t>(r.size)}, name);
    return;
  }
  std::sort(sorted.begin(), sorted.end(),
            [](const HttpRange& a, const HttpRange& b) { return a.offset < b.offset; });
  // Requests: runs of touching ranges, cut at kHttpRequestBytes (a range may be cut in two).
  std::vector<HttpRange> pieces;  // `sorted`, with ranges cut at request boundaries
  std::vector<std::pair<size_t, size_t>> requests;  // [first, last) pieces of each
  uint64_t request_bytes = 0;
  for (const HttpRange& r : sorted) {
    const bool touches = !pieces.empty() && pieces.back().offset + pieces.back().size == r.offset;
    if (!touches) request_bytes = kHttpRequestBytes;  // start a new request below
    for (uint64_t done = 0; done < r.size;) {
      if (request_bytes == kHttpRequestBytes) {
        requests.emplace_back(pieces.size(), pieces.size());
        request_bytes = 0;
      }
      const uint64_t n = std::min(r.size - done, kHttpRequestBytes - request_bytes);
      pieces.push_back({r.offset + done, r.dst + done, n});
      ++requests.back().second;
      request_bytes += n;
      done += n;
    }
  }
  auto* self = const_cast<HttpFile*>(this);
  auto fetch = [&](size_t i) {
    const auto [first, last] = requests[i];
    const std::span<const HttpRange> run(pieces.data() + first, last - first);
    uint64_t want = 0;
    for (const HttpRange& p : run) want += p.size;
    if (self->transfer(run) != want) fail("the server sent fewer bytes than asked");
  };
  const auto connections =
      static_cast<unsigned>(std::min<size_t>(options_.connections, requests.size()));
  if (connections <= 1) {
    for (size_t i = 0; i < requests.size(); ++i) fetch(i);
    return;
  }
  // Each worker takes the next request; the first error stops the others taking more.
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::vector<std::exception_ptr> errors(connections);
  auto work = [&](unsigned w) {
    try {
      for (size_t i; !failed && (i = next++) < requests.size();) fetch(i);
    } catch (...) {
      errors[w] = std::current_exception();
      failed = true;
    }
  };
  std::vector<std::thread> workers;
  for (unsigned w = 1; w < connections; ++w) workers.emplace_back(work, w);
  work(0);
  for (auto& t : workers) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

uint64_t HttpFile::transfer(std::span<const HttpRange> ranges, int spool_fd) {
  Exchange x;
  x.file = this;
  x.spool_fd = spool_fd;
  x.want_begin = ranges.front().offset;
  x.want_end = ranges.back().offset + ranges.back().size;
  x.ranges = ranges;
  const uint64_t offset = x.want_begin;
  // Whether the server has answered this file before: then a refused connection is a blip
  // mid-download, retried like the rest, not a wrong address.
  bool reached = pinned_;
  for (int attempt = 1;; ++attempt) {
    x.asked_from = offset + x.received;
    x.response = HttpResponse{};
    x.body_started = false;
    x.error_page = false;
    x.error_body.clear();
    const CurlLibrary& lib = curl_library();
    CurlPool::Lease lease(*handles_, name_for_messages(url_, options_));
    CURL* curl = lease.get();
    std::vector<std::string> lines = {
        fmt::format("Range: bytes={}-{}", x.asked_from, x.want_end - 1),
        "Accept-Encoding: identity"};
    if (pinned_ && !validator_.empty()) lines.push_back(fmt::format("If-Range: {}", validator_));
    if (options_.sign)
      for (std::string& h : options_.sign("GET", url_, {})) lines.push_back(std::move(h));
    const CurlHeaders headers = curl_headers(lines, name_for_messages(url_, options_));
    set_common_options(curl, url_, options_);
    lib.easy_setopt(curl, CURLOPT_HTTPHEADER, headers.get());
    lib.easy_setopt(curl, CURLOPT_HEADERFUNCTION, &Exchange::on_header);
    lib.easy_setopt(curl, CURLOPT_HEADERDATA, &x);
    lib.easy_setopt(curl, CURLOPT_WRITEFUNCTION, &Exchange::on_body);
    lib.easy_setopt(curl, CURLOPT_WRITEDATA, &x);
    const CURLcode rc = lib.easy_perform(curl);
    const HttpResponse& r = x.response;
    if (rc == CURLE_OK) lease.keep();  // a failed transfer may leave a broken connection

    if (!x.problem.empty()) fail(x.problem, x.problem_errno);
    if (x.done) return x.received;
    if (rc == CURLE_OK && r.status == 200 && !x.body_started && r.content_length == 0) {
      // An empty file: a 200 without a body never reaches on_body, which checks answers.
      x.body_started = true;
      x.problem = x.check_answer();
      if (!x.problem.empty()) fail(x.problem, x.problem_errno);
      return x.received;
    }
    if (rc == CURLE_OK && (r.status == 200 || r.status == 206) && x.body_started)
      return x.received;  // the whole answer arrived (the opening request of a small file)
    if (!pinned_ && r.status == 416) {  // the opening request of an empty file
      pinned_ = true;
      size_ = 0;
      return 0;
    }
    // Retry connection errors, cut bodies, 5xx and 429 (after Retry-After); not the rest.
    reached = reached || r.status != 0 || x.received > 0;
    if (!http_retryable(options_, r.status, x.error_body, rc) || attempt >= options_.attempts ||
        (curl_unreachable(rc) && attempt >= kUnreachableAttempts && !reached))
      throw_http_failure(url_, options_, r.status, x.error_body, rc, attempt);
    http_backoff(attempt, r.retry_after);
  }
}

}  // namespace tlio::detail

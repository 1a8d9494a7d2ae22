#include "io/s3_client.hpp"

#include <fcntl.h>
#include <fmt/core.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <system_error>
#include <thread>
#include <vector>

#include "io/aws_sigv4.hpp"
#include "io/digest.hpp"
#include "io/http_request.hpp"
#include "io/interrupt.hpp"
#include "io/os_file.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {

namespace {

bool bucket_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_';
}

// The authority of an endpoint URL ("host:port") and what comes before it ("https://").
std::pair<std::string_view, std::string_view> split_endpoint(std::string_view endpoint) {
  const size_t start = endpoint.find("://");
  const size_t host = start == std::string_view::npos ? 0 : start + 3;
  const size_t end = std::min(endpoint.find('/', host), endpoint.size());
  return {endpoint.substr(0, host), endpoint.substr(host, end - host)};
}

// Whether `bucket` can be a host name under the endpoint, as botocore decides: lower-case
// letters, digits and '-', 3 to 63 of them, no dots over https (the certificate's wildcard
// covers one label).
bool virtual_host_name(std::string_view bucket, std::string_view endpoint) {
  if (bucket.size() < 3 || bucket.size() > 63 || bucket.front() == '-' || bucket.back() == '-')
    return false;
  for (const char c : bucket)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
          (c == '.' && !endpoint.starts_with("https://"))))
      return false;
  return true;
}

std::string decode_entities(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '&') {
      static constexpr std::pair<std::string_view, char> kEntities[] = {
          {"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}};
      bool matched = false;
      for (const auto& [name, c] : kEntities)
        if (s.substr(i, name.size()) == name) {
          out += c;
          i += name.size() - 1;
          matched = true;
          break;
        }
      if (matched) continue;
    }
    out += s[i];
  }
  return out;
}

[[noreturn]] void fail(const std::string& display, std::string detail, int err = EIO) {
  throw_io(std::move(detail), display, std::error_code(err, std::generic_category()));
}

}  // namespace

S3Object parse_s3_url(std::string_view text) {
  const size_t start = text.find("://");
  const std::string_view rest = start == std::string_view::npos ? text : text.substr(start + 3);
  const size_t slash = rest.find('/');
  S3Object o{std::string(rest.substr(0, slash)),
             slash == std::string_view::npos ? std::string() : std::string(rest.substr(slash + 1))};
  if (o.bucket.empty())
    throw_invalid(fmt::format("{} names no bucket (s3://BUCKET/KEY)", std::string(text)));
  if (o.bucket.size() > 255 || !std::all_of(o.bucket.begin(), o.bucket.end(), bucket_char))
    throw_invalid(
        fmt::format("'{}' is not a bucket name (letters, digits, '.', '-' and '_')", o.bucket));
  return o;
}

uint64_t s3_part_size(uint64_t size) noexcept {
  uint64_t part = kS3PartSize;
  while (size / part >= kS3MaxParts) part *= 2;
  return part;
}

std::optional<std::string> xml_element(std::string_view xml, std::string_view name) {
  const std::string open = fmt::format("<{}>", name), close = fmt::format("</{}>", name);
  const size_t a = xml.find(open);
  if (a == std::string_view::npos) return std::nullopt;
  const size_t b = xml.find(close, a + open.size());
  if (b == std::string_view::npos) return std::nullopt;
  return decode_entities(xml.substr(a + open.size(), b - a - open.size()));
}

std::optional<HttpFailure> explain_s3_error(long status, std::string_view body,
                                            const S3Object& object,
                                            const ObjectStoreConfig& config) {
  const std::string code = xml_element(body, "Code").value_or("");
  const std::string message = xml_element(body, "Message").value_or("");
  const std::string where = object.key.empty()
                                ? fmt::format("bucket '{}'", object.bucket)
                                : fmt::format("bucket '{}', key '{}'", object.bucket, object.key);
  // "NoSuchKey: The specified key does not exist. (bucket 'b', key 'k', HTTP 404)"
  auto said = [&](std::string_view more = {}) {
    const std::string what = code.empty()      ? std::string("the store refused the request")
                             : message.empty() ? code
                                               : fmt::format("{}: {}", code, message);
    return fmt::format("{} ({}, HTTP {}{})", what, where, status, more);
  };
  const std::string from = fmt::format("; credentials from {}", config.credentials_from);
  if (code == "NoSuchKey" || code == "NoSuchBucket" ||
      (code.empty() && (status == 404 || status == 410)))
    return HttpFailure{
        code.empty() ? fmt::format("not found ({}, HTTP {})", where, status) : said(), ENOENT};
  if (code == "ExpiredToken" || code == "TokenRefreshRequired")
    return HttpFailure{"the session token has expired: " + said(from), EACCES};
  if (code == "AccessDenied" || code == "SignatureDoesNotMatch" || code == "InvalidAccessKeyId" ||
      code == "InvalidToken" || code == "AllAccessDisabled" || code == "AccountProblem" ||
      (code.empty() && (status == 401 || status == 403)))
    return HttpFailure{"access refused: " + said(from), EACCES};
  if (code == "PermanentRedirect" || code == "AuthorizationHeaderMalformed" || status == 301)
    return HttpFailure{
        fmt::format("the bucket is elsewhere (another region than {}? set AWS_REGION): {}",
                    config.region, said()),
        EIO};
  if (code == "SlowDown" || code == "InternalError" || code == "ServiceUnavailable" ||
      code == "RequestTimeout" || status == 429 || status >= 500)
    return HttpFailure{said(), EIO, true};
  if (code.empty()) return std::nullopt;
  return HttpFailure{said(), EIO};
}

std::string S3Client::url(const S3Object& object, std::string_view query) const {
  std::string u;
  const std::string key = aws_uri_encode(object.key, true);
  if (config_.path_style || !virtual_host_name(object.bucket, config_.endpoint)) {
    u = fmt::format("{}/{}/{}", config_.endpoint, object.bucket, key);
  } else {
    const auto [scheme, host] = split_endpoint(config_.endpoint);
    const std::string_view path =
        std::string_view(config_.endpoint).substr(scheme.size() + host.size());
    u = fmt::format("{}{}.{}{}/{}", scheme, object.bucket, host, path, key);
  }
  if (!query.empty()) {
    u += '?';
    u += query;
  }
  return u;
}

HttpOptions S3Client::options(const S3Object& object, std::string display) const {
  HttpOptions o;
  o.display = std::move(display);
  o.path_as_is = true;  // a key's "./" and "../" are part of it (and of its signature)
  const ObjectStoreConfig& config = config_;
  o.explain = [object, config](long status, std::string_view body) {
    return explain_s3_error(status, body, object, config);
  };
  if (config_.credentials)
    o.sign = [credentials = *config_.credentials, region = config_.region](
                 std::string_view method, const std::string& url, std::string_view body_sha256) {
      const auto [scheme, host] = split_endpoint(url);
      const std::string_view rest = std::string_view(url).substr(scheme.size() + host.size());
      const size_t q = rest.find('?');
      AwsRequest r{.method = method,
                   .host = host,
                   .path = rest.substr(0, q),
                   .query = q == std::string_view::npos ? std::string_view() : rest.substr(q + 1),
                   .payload_sha256 = std::string(body_sha256)};
      return aws_sign(r, credentials, region, "s3", std::chrono::system_clock::now());
    };
  return o;
}

bool S3Client::exists(const S3Object& object, std::string display) const {
  CurlPool pool;
  try {
    http_request(pool, "HEAD", url(object), {}, kEmptySha256,
                 resolve_http_options(options(object, std::move(display))));
    return true;
  } catch (const Error& e) {
    if (e.os_error() == std::errc::no_such_file_or_directory) return false;
    throw;
  }
}

void S3Client::remove(const S3Object& object, std::string display) const {
  CurlPool pool;
  try {
    http_request(pool, "DELETE", url(object), {}, kEmptySha256,
                 resolve_http_options(options(object, std::move(display))));
  } catch (const Error& e) {  // S3 answers 204 for a missing key, Cloud Storage 404
    if (e.os_error() != std::errc::no_such_file_or_directory) throw;
  }
}

void S3Client::upload(const S3Object& object, std::string display, int fd, uint64_t size,
                      const std::function<bool()>& should_stop) const {
  HttpOptions o = resolve_http_options(options(object, display));
  o.should_stop = should_stop;
  CurlPool pool;
  const std::string binary = "Content-Type: application/octet-stream";  // the object's type
  if (size < kS3PartSize) {
    std::vector<std::byte> body(static_cast<size_t>(size));
    pread_exact(fd, 0, body, display);
    const std::string hash = to_hex(sha256(body));
    poll_stop(should_stop);
    // Not stopped once under way: the store may have stored it before an interrupted answer.
    HttpOptions put = o;
    put.should_stop = {};
    http_request(pool, "PUT", url(object), body, hash, put, {&binary, 1});
    return;
  }

  const HttpReply started =
      http_request(pool, "POST", url(object, "uploads="), {}, kEmptySha256, o, {&binary, 1});
  const std::optional<std::string> upload_id = xml_element(started.body, "UploadId");
  if (!upload_id || upload_id->empty())
    fail(display, "the store started a multipart upload without an UploadId");
  const std::string id_query = aws_canonical_query({{"uploadId", *upload_id}});
  bool completed = false;
  // Until the upload completes, the object is as it was; any way out but completion aborts it
  // (with its own options: an interrupt must not stop the abort), so no parts stay stored.
  struct Abort {
    const S3Client& client;
    const S3Object& object;
    const std::string& display;
    const std::string& query;
    const bool& completed;
    ~Abort() {
      if (completed) return;
      try {
        HttpOptions a = resolve_http_options(client.options(object, display));
        a.attempts = 3;
        CurlPool p;
        http_request(p, "DELETE", client.url(object, query), {}, kEmptySha256, a);
      } catch (...) {  // the first error is the one reported
      }
    }
  } abort_guard{*this, object, display, id_query, completed};

  const uint64_t part = s3_part_size(size);
  const size_t parts = static_cast<size_t>((size + part - 1) / part);
  std::vector<std::string> etags(parts);
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  const unsigned workers = static_cast<unsigned>(std::min<size_t>(o.connections, parts));
  std::vector<std::exception_ptr> errors(workers);
  auto work = [&](unsigned w) {
    try {
      std::vector<std::byte> buf;  // one part's bytes: memory is workers x part size
      for (size_t i; !failed && (i = next++) < parts;) {
        poll_stop(should_stop);
        const uint64_t offset = static_cast<uint64_t>(i) * part;
        buf.resize(static_cast<size_t>(std::min(part, size - offset)));
        pread_exact(fd, offset, buf, display);
        const std::string hash = to_hex(sha256(buf));
        const std::string query =
            aws_canonical_query({{"partNumber", std::to_string(i + 1)}, {"uploadId", *upload_id}});
        const HttpReply r = http_request(pool, "PUT", url(object, query), buf, hash, o);
        if (r.etag.empty())
          fail(display, fmt::format("the store answered part {} without an ETag", i + 1));
        etags[i] = r.etag;
        // Its dirty pages would otherwise be written back while the store assembles the object.
        (void)::fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                          static_cast<off_t>(offset), static_cast<off_t>(buf.size()));
      }
    } catch (...) {
      errors[w] = std::current_exception();
      failed = true;
    }
  };
  std::vector<std::thread> threads;
  try {
    for (unsigned w = 1; w < workers; ++w) threads.emplace_back(work, w);
  } catch (...) {  // no more threads (ulimit -u): those started finish, then the upload aborts
    failed = true;
    errors[0] = std::current_exception();
  }
  if (!failed) work(0);
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);

  std::string xml = "<CompleteMultipartUpload>";
  for (size_t i = 0; i < parts; ++i)
    xml += fmt::format("<Part><PartNumber>{}</PartNumber><ETag>{}</ETag></Part>", i + 1, etags[i]);
  xml += "</CompleteMultipartUpload>";
  const auto body = std::as_bytes(std::span(xml));
  const std::string header = "Content-Type: application/xml";
  // Not stopped once sent: the store may complete it before an interrupted answer arrives.
  HttpOptions complete = o;
  complete.should_stop = {};
  poll_stop(should_stop);
  const HttpReply done = http_request(pool, "POST", url(object, id_query), body,
                                      to_hex(sha256(body)), complete, {&header, 1});
  // S3 may answer 200 and still report an error in the body.
  if (xml_element(done.body, "Code")) {
    const auto why = explain_s3_error(500, done.body, object, config_);
    fail(display, why ? why->message : "the store could not complete the upload");
  }
  completed = true;
}

}  // namespace tlio::detail

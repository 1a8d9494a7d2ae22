#include "io/aws_sigv4.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <ctime>

#include "common/text.hpp"
#include "io/digest.hpp"

namespace tlio::detail {

std::string aws_uri_encode(std::string_view text, bool keep_slash) {
  constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto b = static_cast<unsigned char>(c);
    if ((b >= 'A' && b <= 'Z') || (b >= 'a' && b <= 'z') || (b >= '0' && b <= '9') || b == '-' ||
        b == '.' || b == '_' || b == '~' || (keep_slash && b == '/')) {
      out += c;
    } else {
      out += '%';
      out += kHex[b >> 4];
      out += kHex[b & 15];
    }
  }
  return out;
}

std::string aws_canonical_query(std::vector<std::pair<std::string, std::string>> query) {
  for (auto& [k, v] : query) {
    k = aws_uri_encode(k, false);
    v = aws_uri_encode(v, false);
  }
  std::sort(query.begin(), query.end());
  std::string out;
  for (const auto& [k, v] : query) {
    if (!out.empty()) out += '&';
    out += k;
    out += '=';
    out += v;
  }
  return out;
}

namespace {

// A header value as SigV4 canonicalises it: outer spaces trimmed, inner runs made one space.
std::string canonical_value(std::string_view v) {
  std::string out;
  bool space = false;
  for (const char c : v) {
    if (c == ' ' || c == '\t') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

}  // namespace

std::vector<std::string> aws_sign(const AwsRequest& request, const AwsCredentials& credentials,
                                  std::string_view region, std::string_view service,
                                  std::chrono::system_clock::time_point when) {
  const std::time_t t = std::chrono::system_clock::to_time_t(when);
  std::tm utc{};
  gmtime_r(&t, &utc);
  char stamp[17], day[9];
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &utc);
  std::strftime(day, sizeof day, "%Y%m%d", &utc);
  const std::string payload =
      request.payload_sha256.empty() ? std::string(kEmptySha256) : request.payload_sha256;

  std::vector<std::pair<std::string, std::string>> headers;  // lower-case name, value as sent
  headers.emplace_back("host", std::string(request.host));
  headers.emplace_back("x-amz-content-sha256", payload);
  headers.emplace_back("x-amz-date", stamp);
  if (!credentials.session_token.empty())
    headers.emplace_back("x-amz-security-token", credentials.session_token);
  for (const auto& [k, v] : request.headers) headers.emplace_back(ascii_lower(k), std::string(v));
  std::sort(headers.begin(), headers.end());

  std::string canonical_headers, signed_headers;
  for (const auto& [k, v] : headers) {
    canonical_headers += fmt::format("{}:{}\n", k, canonical_value(v));
    if (!signed_headers.empty()) signed_headers += ';';
    signed_headers += k;
  }
  const std::string canonical_request = fmt::format(
      "{}\n{}\n{}\n{}\n{}\n{}", request.method, request.path.empty() ? "/" : request.path,
      request.query, canonical_headers, signed_headers, payload);
  const std::string scope = fmt::format("{}/{}/{}/aws4_request", day, region, service);
  const Sha256Digest request_hash = sha256(canonical_request);
  const std::string string_to_sign =
      fmt::format("AWS4-HMAC-SHA256\n{}\n{}\n{}", stamp, scope, to_hex(request_hash));

  const std::string first_key = "AWS4" + credentials.secret_key;
  Sha256Digest key = hmac_sha256(
      {reinterpret_cast<const unsigned char*>(first_key.data()), first_key.size()}, day);
  key = hmac_sha256(key, region);
  key = hmac_sha256(key, service);
  key = hmac_sha256(key, "aws4_request");
  const Sha256Digest signature = hmac_sha256(key, string_to_sign);

  std::vector<std::string> lines;
  lines.push_back(fmt::format("Host: {}", request.host));
  lines.push_back(fmt::format("x-amz-content-sha256: {}", payload));
  lines.push_back(fmt::format("x-amz-date: {}", stamp));
  if (!credentials.session_token.empty())
    lines.push_back(fmt::format("x-amz-security-token: {}", credentials.session_token));
  for (const auto& [k, v] : request.headers) lines.push_back(fmt::format("{}: {}", k, v));
  lines.push_back(fmt::format(
      "Authorization: AWS4-HMAC-SHA256 Credential={}/{}, SignedHeaders={}, Signature={}",
      credentials.access_key, scope, signed_headers, to_hex(signature)));
  return lines;
}

}  // namespace tlio::detail

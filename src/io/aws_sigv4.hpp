// io/aws_sigv4.hpp: AWS Signature Version 4 (the header form), which S3 and the S3-compatible
// stores (MinIO, Ceph RGW, R2, Cloud Storage's XML API) check on every request. HMAC-SHA256 by
// OpenSSL (io/digest.hpp).
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tlio::detail {

struct AwsCredentials {
  std::string access_key, secret_key;
  std::string session_token = {};  ///< sent as x-amz-security-token when set
};

/// What is signed of one request.
struct AwsRequest {
  std::string_view method;      ///< "GET", "PUT", ...
  std::string_view host;        ///< the Host header's value (host, ":port" if not default)
  std::string_view path;        ///< the URI path as sent (already percent-encoded)
  std::string_view query = {};  ///< the query as sent: aws_canonical_query's form
  std::vector<std::pair<std::string, std::string>> headers = {};  ///< more to sign (any case)
  std::string payload_sha256 = {};  ///< hex SHA-256 of the body; empty: of no body
};

/// RFC 3986 percent-encoding as SigV4 wants it: every byte but A-Z a-z 0-9 - . _ ~ encoded
/// (upper-case hex); '/' kept when `keep_slash` (object keys in paths).
std::string aws_uri_encode(std::string_view text, bool keep_slash);

/// The query string SigV4 signs and the URL must carry: pairs encoded and sorted.
std::string aws_canonical_query(std::vector<std::pair<std::string, std::string>> query);

/// The header lines ("Name: value") to send with the request: Host, x-amz-date,
/// x-amz-content-sha256, x-amz-security-token (with a session token), Authorization, plus the
/// request's own `headers` (all of them signed). `when` is the signing time (now, in use).
std::vector<std::string> aws_sign(const AwsRequest& request, const AwsCredentials& credentials,
                                  std::string_view region, std::string_view service,
                                  std::chrono::system_clock::time_point when);

/// The hex SHA-256 of no bytes (an empty payload).
inline constexpr std::string_view kEmptySha256 =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

}  // namespace tlio::detail

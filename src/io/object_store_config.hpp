// io/object_store_config.hpp: where an S3-protocol store is and who tlio is to it, found as the
// AWS CLI finds them (s3://) or as gsutil's boto config says (gs://). docs/remote.md lists
// every variable and file read, in order.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "io/aws_sigv4.hpp"

namespace tlio::detail {

/// One INI-style file as the AWS CLI and boto read them: "[section]" headers (a comment may
/// follow), "key = value" or "key: value" lines, '#' and ';' comment lines, and nested blocks ("s3
/// =" followed by indented "key = value" lines, stored as "s3.key"). Keys are lower-cased; later
/// duplicates win.
using IniFile = std::map<std::string, std::map<std::string, std::string>, std::less<>>;
IniFile parse_ini(std::string_view text);

struct ObjectStoreConfig {
  std::string scheme;  ///< "s3" or "gs" (for messages)
  std::string
      endpoint;        ///< "https://s3.us-east-1.amazonaws.com", or a custom one, no '/' at the end
  std::string region;  ///< signed into every request ("us-east-1"; "auto" for gs)
  bool path_style = false;  ///< endpoint/BUCKET/KEY, else BUCKET.endpoint-host/KEY
  /// Where the credentials came from ("environment", "profile default in ~/.aws/credentials"),
  /// for messages; never the credentials themselves.
  std::string credentials_from;
  std::optional<AwsCredentials> credentials;  ///< nullopt: requests go unsigned (anonymous)
  bool custom_endpoint = false;
};

/// s3:// settings: AWS_* variables, then the profile in ~/.aws/credentials and ~/.aws/config.
/// Error{invalid_argument} for a named profile that exists in neither file, a half-set key pair
/// or an unknown addressing style; Error{io} for an unreadable file.
ObjectStoreConfig s3_config();
/// gs:// settings: GOOGLE_ACCESS_KEY_ID/GOOGLE_SECRET_ACCESS_KEY, then the boto config
/// ($BOTO_CONFIG, else ~/.boto); endpoint $TLIO_GS_ENDPOINT_URL, else the boto config's
/// gs_host, else https://storage.googleapis.com.
ObjectStoreConfig gs_config();

}  // namespace tlio::detail

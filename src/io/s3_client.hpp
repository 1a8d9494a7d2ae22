// io/s3_client.hpp: the S3 protocol as tlio speaks it (s3:// and gs://, whose XML API is S3's):
// objects addressed path-style or by virtual host, requests signed with SigV4, XML errors read
// into errors by kind, and whole-file uploads (one PUT, or a multipart upload whose object
// appears only when every part is in, and which is aborted on any failure).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "io/http.hpp"
#include "io/object_store_config.hpp"

namespace tlio::detail {

/// Objects at or above this size are uploaded in parts; parts are this size (more for files
/// over 10,000 parts' worth), the last one smaller.
inline constexpr uint64_t kS3PartSize = uint64_t{8} << 20;
/// S3's limit on parts per upload.
inline constexpr uint64_t kS3MaxParts = 10000;

struct S3Object {
  std::string bucket, key;
};
/// "s3://BUCKET/KEY" (any scheme of the S3 kind): Error{invalid_argument} for a missing or
/// malformed bucket name. The key is taken as written (not percent-decoded), as the AWS CLI does.
S3Object parse_s3_url(std::string_view text);

/// The part size for an upload of `size` bytes.
uint64_t s3_part_size(uint64_t size) noexcept;

/// The first <Name>...</Name> of an XML answer, its entities decoded; nullopt when absent.
std::optional<std::string> xml_element(std::string_view xml, std::string_view name);

/// What an S3 error answer means (HttpOptions::explain): missing key or bucket (ENOENT),
/// refused or badly signed (EACCES, never retried), an expired token, SlowDown and 5xx
/// (retried), each naming the bucket and key.
std::optional<HttpFailure> explain_s3_error(long status, std::string_view body,
                                            const S3Object& object,
                                            const ObjectStoreConfig& config);

class S3Client {
 public:
  explicit S3Client(ObjectStoreConfig config) : config_(std::move(config)) {}
  const ObjectStoreConfig& config() const noexcept { return config_; }

  /// The object's URL at the endpoint, with `query` (aws_canonical_query's form) if any.
  std::string url(const S3Object& object, std::string_view query = {}) const;
  /// Options for requests about `object`: signed (unless anonymous), errors explained, named
  /// `display` in messages.
  HttpOptions options(const S3Object& object, std::string display) const;

  /// Makes the `size` bytes of `fd` the object (one PUT under kS3PartSize, else a multipart
  /// upload with several parts in flight, each part's SHA-256 signed and checked by the
  /// store). On any failure, and when `should_stop` says stop, a multipart upload is aborted
  /// and the object stays as it was. Each part sent is punched out of `fd` (a staging copy), so
  /// its pages are freed, not written back to disk, while the rest is sent.
  void upload(const S3Object& object, std::string display, int fd, uint64_t size,
              const std::function<bool()>& should_stop) const;
  /// Deletes the object (a missing one is not an error).
  void remove(const S3Object& object, std::string display) const;
  /// True when the object exists (a HEAD request).
  bool exists(const S3Object& object, std::string display) const;

 private:
  ObjectStoreConfig config_;
};

}  // namespace tlio::detail

// io/s3_store.cpp: objects in S3 and S3-compatible stores (s3://BUCKET/KEY) and in Google
// Cloud Storage through its XML API (gs://BUCKET/KEY): read by signed ranged GETs (HttpFile),
// written by whole uploads (io/s3_client.hpp). A folder is a key prefix.
#include <fmt/core.h>

#include <system_error>
#include <utility>

#include "io/http.hpp"
#include "io/s3_client.hpp"
#include "io/store.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {

namespace {

// The object a file location names: a key that is not a folder (a GET of "s3://bucket" would
// list the bucket).
S3Object file_object(const Location& where) {
  S3Object object = parse_s3_url(where.text());
  if (object.key.empty() || object.key.ends_with('/'))
    throw_invalid(
        fmt::format("{} names a folder (a bucket or a key prefix), not a file", where.display()));
  return object;
}

class ObjectStore final : public Store {
 public:
  explicit ObjectStore(ObjectStoreConfig (*config)()) : config_(config) {}

  std::shared_ptr<const ByteSource> open(const Location& where,
                                         const SourceOptions& options) const override {
    const S3Client client(config_());
    const S3Object object = file_object(where);
    HttpOptions o = client.options(object, where.display());
    o.warning = options.warning;
    return http_source(HttpFile::open(client.url(object), o), where.display());
  }

  std::optional<std::string> read_small(const Location& where,
                                        const SourceOptions&) const override {
    const S3Client client(config_());
    const S3Object object = file_object(where);
    return read_small_http(client.url(object), client.options(object, where.display()));
  }

  bool exists(const Location& where, const SourceOptions&) const override {
    return S3Client(config_()).exists(parse_s3_url(where.text()), where.display());
  }

  std::optional<bool> is_directory(const Location& where) const override {
    // By its spelling, as for http(s): reading a folder needs no listing.
    const std::string& text = where.text();
    if (text.ends_with('/') || parse_s3_url(text).key.empty()) return true;
    if (text.ends_with(".safetensors")) return false;
    return std::nullopt;
  }

  void check_directory(const Location&) const override {}

  std::string join(const std::string& dir, std::string_view name) const override {
    return join_key(dir, name);
  }

  std::string display(const std::string& text) const override { return text; }

  // Staged in an unnamed temporary, uploaded whole on publish (one PUT or a multipart upload,
  // aborted on failure).
  std::unique_ptr<StagedFile> stage(const Location& where) const override {
    const S3Object object = file_object(where);
    return stage_upload(where.display(),
                        [config = config_, object, name = where.display()](
                            int fd, uint64_t size, const std::function<bool()>& should_stop) {
                          S3Client(config()).upload(object, name, fd, size, should_stop);
                        });
  }

  void remove(const Location& where) const override {
    S3Client(config_()).remove(parse_s3_url(where.text()), where.display());
  }

 private:
  ObjectStoreConfig (*config_)();
};

}  // namespace

const Store& s3_store() noexcept {
  static const ObjectStore store(s3_config);
  return store;
}

const Store& gs_store() noexcept {
  static const ObjectStore store(gs_config);
  return store;
}

}  // namespace tlio::detail

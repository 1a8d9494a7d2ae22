// capi/trust.cpp: the C API of tlio/checkpoint.hpp and trust.hpp (imports, hashes, signatures).
#include "capi/handles.hpp"

using namespace tlio::capi;

extern "C" {

int tl_import_checkpoint(const char* src, const char* dst, const char* key, unsigned flags,
                         uint64_t max_shard_size, uint64_t* tensors) {
  return tl_import_checkpoint_as(src, dst, key, flags, max_shard_size, -1, tensors);
}

int tl_import_checkpoint_as(const char* src, const char* dst, const char* key, unsigned flags,
                            uint64_t max_shard_size, int dtype, uint64_t* tensors) {
  TL_REQUIRE(src && dst, "tl_import_checkpoint: NULL argument");
  TL_REQUIRE((flags & ~(TL_IMPORT_SKIP_UNSUPPORTED | TL_IMPORT_ALLOW_EMPTY | TL_IMPORT_ALL)) == 0,
             "tl_import_checkpoint: unknown flags");
  TL_REQUIRE(dtype == -1 || valid_dtype(static_cast<tl_dtype>(dtype)),
             "tl_import_checkpoint_as: invalid dtype");
  return guard([&] {
    tlio::ImportOptions o;
    if (dtype != -1) o.dtype = to_cpp(static_cast<tl_dtype>(dtype));
    if (key) o.key = key;
    o.skip_unsupported = flags & TL_IMPORT_SKIP_UNSUPPORTED;
    o.allow_empty = flags & TL_IMPORT_ALLOW_EMPTY;
    o.import_all = flags & TL_IMPORT_ALL;
    o.max_shard_size = max_shard_size;
    o.job = current_job();
    const tlio::ImportReport r = tlio::import_checkpoint(src, dst, o);
    if (tensors) *tensors = r.tensors_written;
  });
}

static void copy_hex(const std::string& hex, char* out) {
  if (out) std::memcpy(out, hex.c_str(), hex.size() + 1);
}

int tl_hash_file(const char* location, const tl_open_options* options, char* sha256_hex) {
  TL_REQUIRE(location && sha256_hex, "tl_hash_file: NULL argument");
  tlio::HashOptions o;
  if (options)
    if (const int rc = open_options(options, "tl_hash_file", o.open); rc != TL_OK) return rc;
  return guard([&] { copy_hex(tlio::hash_file(location, o).sha256, sha256_hex); });
}

int tl_file_sha256(const tl_file* file, const char* expected_hex, char* sha256_hex) {
  TL_REQUIRE(file, "tl_file_sha256: NULL argument");
  return guard([&] {
    const tlio::FileHash h =
        expected_hex ? tlio::check_sha256(file->file, expected_hex) : tlio::hash_file(file->file);
    copy_hex(h.sha256, sha256_hex);
  });
}

int tl_sign_folder(const char* folder, const char* private_key, const char* signature) {
  TL_REQUIRE(folder && private_key, "tl_sign_folder: NULL argument");
  return guard([&] {
    tlio::SignOptions o;
    if (signature) o.signature = signature;
    (void)tlio::sign_folder(folder, private_key, o);
  });
}

int tl_verify_signature(const char* folder, const char* public_key, const char* signature) {
  TL_REQUIRE(folder && public_key, "tl_verify_signature: NULL argument");
  return guard([&] {
    tlio::VerifyOptions o;
    if (signature) o.signature = signature;
    (void)tlio::verify_signature(folder, public_key, o);
  });
}

}  // extern "C"

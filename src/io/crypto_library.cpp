#include "io/crypto_library.hpp"

#include <fmt/core.h>

#include <atomic>
#include <string>

#include "io/dynamic_library.hpp"

namespace tlio::detail {
namespace {

std::atomic<bool> loaded{false};

void resolve(void* handle, auto& slot, const char* name) {
  resolve_symbol(handle, slot, name, "tlio needs OpenSSL's libcrypto 3");
}

CryptoLibrary load() {
  // RTLD_LOCAL: a host that links libcrypto (libcurl does) gets the same object back.
  void* handle = dlopen("libcrypto.so.3", RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* e = dlerror();
    library_unsupported(
        fmt::format("tlio needs OpenSSL's libcrypto (libcrypto.so.3) for digests and "
                    "signing, which could not be loaded: {} (Debian: apt-get install libssl3)",
                    e ? e : "unknown reason"));
  }
  // Not closed: OpenSSL's state lives until the process ends.
  CryptoLibrary lib{};
  resolve(handle, lib.md_fetch, "EVP_MD_fetch");
  resolve(handle, lib.md_free, "EVP_MD_free");
  resolve(handle, lib.md_ctx_new, "EVP_MD_CTX_new");
  resolve(handle, lib.md_ctx_free, "EVP_MD_CTX_free");
  resolve(handle, lib.digest_init, "EVP_DigestInit_ex");
  resolve(handle, lib.digest_update, "EVP_DigestUpdate");
  resolve(handle, lib.digest_final, "EVP_DigestFinal_ex");
  resolve(handle, lib.md_ctx_copy, "EVP_MD_CTX_copy_ex");
  resolve(handle, lib.hmac, "HMAC");
  resolve(handle, lib.bio_new_mem_buf, "BIO_new_mem_buf");
  resolve(handle, lib.bio_free, "BIO_free");
  resolve(handle, lib.pem_read_private_key, "PEM_read_bio_PrivateKey");
  resolve(handle, lib.pem_read_public_key, "PEM_read_bio_PUBKEY");
  resolve(handle, lib.pkey_free, "EVP_PKEY_free");
  resolve(handle, lib.pkey_base_id, "EVP_PKEY_get_base_id");
  resolve(handle, lib.pkey_group_name, "EVP_PKEY_get_group_name");
  resolve(handle, lib.public_key_der, "i2d_PUBKEY");
  resolve(handle, lib.digest_sign_init, "EVP_DigestSignInit");
  resolve(handle, lib.digest_sign, "EVP_DigestSign");
  resolve(handle, lib.digest_verify_init, "EVP_DigestVerifyInit");
  resolve(handle, lib.digest_verify, "EVP_DigestVerify");
  resolve(handle, lib.encode_base64, "EVP_EncodeBlock");
  resolve(handle, lib.decode_base64, "EVP_DecodeBlock");
  resolve(handle, lib.err_get_error, "ERR_get_error");
  resolve(handle, lib.err_error_string, "ERR_error_string_n");
  resolve(handle, lib.err_clear_error, "ERR_clear_error");
  // Fetched once: EVP_sha256() would look the implementation up again on every init.
  lib.sha256 = lib.md_fetch(nullptr, "SHA256", nullptr);
  lib.sha384 = lib.md_fetch(nullptr, "SHA384", nullptr);
  lib.sha512 = lib.md_fetch(nullptr, "SHA512", nullptr);
  if (!lib.sha256 || !lib.sha384 || !lib.sha512)
    library_unsupported("OpenSSL's libcrypto has no SHA-2 implementation available");
  return lib;
}

}  // namespace

const CryptoLibrary& crypto_library() {
  // A failed load throws out of the initialiser, so the next call tries again.
  static const CryptoLibrary lib = load();
  loaded.store(true, std::memory_order_release);
  return lib;
}

bool crypto_library_loaded() noexcept { return loaded.load(std::memory_order_acquire); }

}  // namespace tlio::detail

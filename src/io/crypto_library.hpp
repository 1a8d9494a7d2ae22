// io/crypto_library.hpp: OpenSSL's libcrypto, loaded the first time a digest is needed (signing
// an object-store request, hashing a file). Linking it would load it into every process,
// `tlio --version` and local reads included, for the few runs that use it.
#pragma once

#include <openssl/evp.h>
#include <openssl/hmac.h>

namespace tlio::detail {

/// The libcrypto functions tlio calls, resolved from libcrypto.so.3 (OpenSSL 3, the ABI the
/// build's headers describe). Members are named after the functions without their prefix.
struct CryptoLibrary {
  decltype(&::EVP_MD_fetch) md_fetch;
  decltype(&::EVP_MD_free) md_free;
  decltype(&::EVP_MD_CTX_new) md_ctx_new;
  decltype(&::EVP_MD_CTX_free) md_ctx_free;
  decltype(&::EVP_DigestInit_ex) digest_init;
  decltype(&::EVP_DigestUpdate) digest_update;
  decltype(&::EVP_DigestFinal_ex) digest_final;
  decltype(&::EVP_MD_CTX_copy_ex) md_ctx_copy;
  decltype(&::HMAC) hmac;
  /// The SHA-256 implementation (SHA-NI where the CPU has it), fetched once.
  EVP_MD* sha256;
};

/// The library, loaded on the first call (thread-safe). Throws Error{unsupported} when
/// libcrypto.so.3 cannot be loaded or lacks a function.
const CryptoLibrary& crypto_library();

/// True once crypto_library() has loaded it (tests check local work never does).
bool crypto_library_loaded() noexcept;

}  // namespace tlio::detail

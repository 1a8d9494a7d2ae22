// io/crypto_library.hpp: OpenSSL's libcrypto, loaded the first time a digest or a key is needed
// (signing an object-store request, hashing a file, signing a model). Linking it would load it into
// every process, `tlio --version` and local reads included, for the few runs that use it.
#pragma once

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

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
  // Keys and signatures (ECDSA through the EVP interface).
  decltype(&::BIO_new_mem_buf) bio_new_mem_buf;
  decltype(&::BIO_free) bio_free;
  decltype(&::PEM_read_bio_PrivateKey) pem_read_private_key;
  decltype(&::PEM_read_bio_PUBKEY) pem_read_public_key;
  decltype(&::EVP_PKEY_free) pkey_free;
  decltype(&::EVP_PKEY_get_base_id) pkey_base_id;
  decltype(&::EVP_PKEY_get_group_name) pkey_group_name;
  decltype(&::i2d_PUBKEY) public_key_der;
  decltype(&::EVP_DigestSignInit) digest_sign_init;
  decltype(&::EVP_DigestSign) digest_sign;
  decltype(&::EVP_DigestVerifyInit) digest_verify_init;
  decltype(&::EVP_DigestVerify) digest_verify;
  decltype(&::EVP_EncodeBlock) encode_base64;
  decltype(&::EVP_DecodeBlock) decode_base64;
  decltype(&::ERR_get_error) err_get_error;
  decltype(&::ERR_error_string_n) err_error_string;
  decltype(&::ERR_clear_error) err_clear_error;
  /// The SHA-256 implementation (SHA-NI where the CPU has it), fetched once.
  EVP_MD* sha256;
  EVP_MD* sha384;
  EVP_MD* sha512;
};

/// The library, loaded on the first call (thread-safe). Throws Error{unsupported} when
/// libcrypto.so.3 cannot be loaded or lacks a function.
const CryptoLibrary& crypto_library();

/// True once crypto_library() has loaded it (tests check local work never does).
bool crypto_library_loaded() noexcept;

}  // namespace tlio::detail

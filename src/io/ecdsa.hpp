// io/ecdsa.hpp: elliptic-curve keys from PEM files and ECDSA signatures over them, by OpenSSL's
// libcrypto (io/crypto_library.hpp). Used by model signatures (trust/model_signing).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tlio::detail {

/// An ECDSA key on P-256, P-384 or P-521, private (it signs and verifies) or public (it
/// verifies). Each curve signs with the SHA-2 of its size: SHA-256, SHA-384, SHA-512.
class EcKey {
 public:
  /// Reads a PEM private key ("BEGIN PRIVATE KEY" or "BEGIN EC PRIVATE KEY", not encrypted).
  /// Error{invalid_argument} naming `name` when it is not one, Error{unsupported} for another
  /// kind of key or curve.
  static EcKey private_from_pem(std::string_view pem, const std::string& name) {
    return from_pem(pem, name, true);
  }
  /// Reads a PEM public key ("BEGIN PUBLIC KEY": a SubjectPublicKeyInfo).
  static EcKey public_from_pem(std::string_view pem, const std::string& name) {
    return from_pem(pem, name, false);
  }

  EcKey(EcKey&& other) noexcept : key_(other.key_), curve_(other.curve_) { other.key_ = nullptr; }
  EcKey& operator=(EcKey&&) = delete;
  EcKey(const EcKey&) = delete;
  ~EcKey();

  /// "P-256", "P-384" or "P-521".
  std::string_view curve() const noexcept { return curve_; }
  /// The DER SubjectPublicKeyInfo of the key's public half.
  std::vector<unsigned char> public_key_der() const;
  /// The DER ECDSA signature of `message` (a private key only).
  std::vector<unsigned char> sign(std::string_view message) const;
  /// True when `signature` (DER) signs `message` under this key.
  bool verify(std::string_view message, std::span<const unsigned char> signature) const;

 private:
  static EcKey from_pem(std::string_view pem, const std::string& name, bool is_private);
  EcKey(void* key, std::string_view curve) : key_(key), curve_(curve) {}
  void* key_;  // EVP_PKEY
  std::string_view curve_;
};

/// Standard base64 with padding (RFC 4648 section 4).
std::string base64_encode(std::span<const unsigned char> bytes);
/// Decodes standard base64 with padding into `out`; false when `text` is not that.
bool base64_decode(std::string_view text, std::vector<unsigned char>& out);

}  // namespace tlio::detail

// io/digest.hpp: SHA-256 and HMAC-SHA256, by OpenSSL's libcrypto (io/crypto_library.hpp).
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tlio::detail {

using Sha256Digest = std::array<unsigned char, 32>;

/// A SHA-256 computed over bytes given in pieces. Error{unsupported} when libcrypto is missing.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(std::span<const std::byte> bytes);
  void update(std::string_view text) { update(std::as_bytes(std::span(text))); }
  /// The digest of everything given; the object may not be updated afterwards.
  Sha256Digest finish();

 private:
  void* ctx_;  // EVP_MD_CTX
};

Sha256Digest sha256(std::span<const std::byte> bytes);
inline Sha256Digest sha256(std::string_view text) { return sha256(std::as_bytes(std::span(text))); }
Sha256Digest hmac_sha256(std::span<const unsigned char> key, std::string_view data);

/// Lower-case hexadecimal of `bytes`.
std::string to_hex(std::span<const unsigned char> bytes);
/// True for 64 hexadecimal digits (either case): how SHA-256 digests are written.
bool is_sha256_hex(std::string_view text) noexcept;
/// The bytes a string of hexadecimal digits (either case, even length) spells; empty when it
/// is not one.
std::vector<unsigned char> from_hex(std::string_view hex);

}  // namespace tlio::detail

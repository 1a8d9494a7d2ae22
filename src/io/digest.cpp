#include "io/digest.hpp"

#include <algorithm>

#include "io/crypto_library.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {

namespace {
[[noreturn]] void crypto_failed(const char* what) {
  throw Error(ErrorCode::unsupported, Rule::none, {}, std::nullopt,
              std::string("OpenSSL: ") + what + " failed");
}
}  // namespace

Sha256::Sha256() {
  const CryptoLibrary& lib = crypto_library();
  EVP_MD_CTX* ctx = lib.md_ctx_new();
  if (!ctx) crypto_failed("EVP_MD_CTX_new");
  if (lib.digest_init(ctx, lib.sha256, nullptr) != 1) {
    lib.md_ctx_free(ctx);
    crypto_failed("EVP_DigestInit_ex");
  }
  ctx_ = ctx;
}

Sha256::~Sha256() { crypto_library().md_ctx_free(static_cast<EVP_MD_CTX*>(ctx_)); }

void Sha256::update(std::span<const std::byte> bytes) {
  if (bytes.empty()) return;
  if (crypto_library().digest_update(static_cast<EVP_MD_CTX*>(ctx_), bytes.data(), bytes.size()) !=
      1)
    crypto_failed("EVP_DigestUpdate");
}

Sha256Digest Sha256::finish() {
  Sha256Digest out{};
  unsigned int n = 0;
  if (crypto_library().digest_final(static_cast<EVP_MD_CTX*>(ctx_), out.data(), &n) != 1 ||
      n != out.size())
    crypto_failed("EVP_DigestFinal_ex");
  return out;
}

Sha256Digest sha256(std::span<const std::byte> bytes) {
  Sha256 h;
  h.update(bytes);
  return h.finish();
}

Sha256Digest hmac_sha256(std::span<const unsigned char> key, std::string_view data) {
  const CryptoLibrary& lib = crypto_library();
  Sha256Digest out{};
  unsigned int n = 0;
  if (!lib.hmac(lib.sha256, key.data(), static_cast<int>(key.size()),
                reinterpret_cast<const unsigned char*>(data.data()), data.size(), out.data(), &n) ||
      n != out.size())
    crypto_failed("HMAC");
  return out;
}

std::string to_hex(std::span<const unsigned char> bytes) {
  constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

namespace {
int hex_value(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

bool is_sha256_hex(std::string_view text) noexcept {
  return text.size() == 64 &&
         std::all_of(text.begin(), text.end(), [](char c) { return hex_value(c) >= 0; });
}

std::vector<unsigned char> from_hex(std::string_view hex) {
  std::vector<unsigned char> out;
  if (hex.size() % 2) return out;
  out.reserve(hex.size() / 2);
  for (size_t i = 0; i < hex.size(); i += 2) {
    const int high = hex_value(hex[i]), low = hex_value(hex[i + 1]);
    if (high < 0 || low < 0) return {};
    out.push_back(static_cast<unsigned char>(high << 4 | low));
  }
  return out;
}

}  // namespace tlio::detail

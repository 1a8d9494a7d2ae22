#include "io/ecdsa.hpp"

#include <fmt/core.h>

#include <cstring>
#include <memory>

#include "io/crypto_library.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {
namespace {

// OpenSSL's reason for the last failure on this thread (its error queue, then emptied).
std::string openssl_reason(const CryptoLibrary& lib) {
  std::string reason;
  while (const unsigned long code = lib.err_get_error()) {
    char text[256];
    lib.err_error_string(code, text, sizeof text);
    reason = text;  // the first one queued is usually the closest to the cause; keep the last
  }
  return reason.empty() ? "no reason given" : reason;
}

[[noreturn]] void bad_key(const std::string& name, const std::string& why) {
  throw Error(ErrorCode::invalid_argument, Rule::none, {}, std::nullopt, why, name);
}

// Encrypted keys are refused (tlio asks for no passphrase).
int no_passphrase(char*, int, int, void*) { return -1; }

EVP_PKEY* read_pem(std::string_view pem, bool is_private, const std::string& name) {
  // A public key where the private one goes: say which is needed (sign takes the private key,
  // verify the public one).
  if (is_private && pem.find("-----BEGIN PUBLIC KEY-----") != std::string_view::npos)
    bad_key(name, "is a public key: signing needs the private key (verify takes the public one)");
  const CryptoLibrary& lib = crypto_library();
  lib.err_clear_error();
  if (pem.size() > static_cast<size_t>(INT32_MAX)) bad_key(name, "is too large for a PEM key");
  BIO* bio = lib.bio_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  if (!bio)
    throw Error(ErrorCode::out_of_memory, Rule::none, {}, std::nullopt,
                "OpenSSL: BIO_new_mem_buf failed");
  EVP_PKEY* key = is_private ? lib.pem_read_private_key(bio, nullptr, no_passphrase, nullptr)
                             : lib.pem_read_public_key(bio, nullptr, no_passphrase, nullptr);
  lib.bio_free(bio);
  if (!key)
    bad_key(name, fmt::format("is not an unencrypted PEM {} key ({})",
                              is_private ? "private" : "public", openssl_reason(lib)));
  return key;
}

// The curve's name as model signatures spell it, or empty for keys tlio does not sign with.
std::string_view curve_of(const CryptoLibrary& lib, EVP_PKEY* key) {
  if (lib.pkey_base_id(key) != EVP_PKEY_EC) return {};
  char group[64] = {};
  size_t length = 0;
  if (lib.pkey_group_name(key, group, sizeof group, &length) != 1) return {};
  const std::string_view g(group, length);
  if (g == "prime256v1" || g == "P-256") return "P-256";
  if (g == "secp384r1" || g == "P-384") return "P-384";
  if (g == "secp521r1" || g == "P-521") return "P-521";
  return {};
}

const EVP_MD* digest_for(const CryptoLibrary& lib, std::string_view curve) {
  return curve == "P-256" ? lib.sha256 : curve == "P-384" ? lib.sha384 : lib.sha512;
}

struct MdCtx {
  const CryptoLibrary& lib;
  EVP_MD_CTX* ctx;
  explicit MdCtx(const CryptoLibrary& l) : lib(l), ctx(l.md_ctx_new()) {
    if (!ctx)
      throw Error(ErrorCode::out_of_memory, Rule::none, {}, std::nullopt,
                  "OpenSSL: EVP_MD_CTX_new failed");
  }
  ~MdCtx() { lib.md_ctx_free(ctx); }
};

}  // namespace

EcKey EcKey::from_pem(std::string_view pem, const std::string& name, bool is_private) {
  const CryptoLibrary& lib = crypto_library();
  EVP_PKEY* key = read_pem(pem, is_private, name);
  const std::string_view curve = curve_of(lib, key);
  if (curve.empty()) {
    lib.pkey_free(key);
    throw Error(
        ErrorCode::unsupported, Rule::none, {}, std::nullopt,
        "is not an elliptic-curve key on P-256, P-384 or P-521 (the curves model signatures use)",
        name);
  }
  return EcKey(key, curve);
}

EcKey::~EcKey() {
  if (key_) crypto_library().pkey_free(static_cast<EVP_PKEY*>(key_));
}

std::vector<unsigned char> EcKey::public_key_der() const {
  const CryptoLibrary& lib = crypto_library();
  const int n = lib.public_key_der(static_cast<EVP_PKEY*>(key_), nullptr);
  if (n <= 0)
    throw Error(ErrorCode::unsupported, Rule::none, {}, std::nullopt, "OpenSSL: i2d_PUBKEY failed");
  std::vector<unsigned char> der(static_cast<size_t>(n));
  unsigned char* p = der.data();
  if (lib.public_key_der(static_cast<EVP_PKEY*>(key_), &p) != n)
    throw Error(ErrorCode::unsupported, Rule::none, {}, std::nullopt, "OpenSSL: i2d_PUBKEY failed");
  return der;
}

std::vector<unsigned char> EcKey::sign(std::string_view message) const {
  const CryptoLibrary& lib = crypto_library();
  lib.err_clear_error();
  MdCtx md(lib);
  const auto* data = reinterpret_cast<const unsigned char*>(message.data());
  size_t length = 0;
  if (lib.digest_sign_init(md.ctx, nullptr, digest_for(lib, curve_), nullptr,
                           static_cast<EVP_PKEY*>(key_)) != 1 ||
      lib.digest_sign(md.ctx, nullptr, &length, data, message.size()) != 1)
    throw Error(ErrorCode::invalid_argument, Rule::none, {}, std::nullopt,
                "OpenSSL could not sign with the key: " + openssl_reason(lib));
  std::vector<unsigned char> signature(length);
  if (lib.digest_sign(md.ctx, signature.data(), &length, data, message.size()) != 1)
    throw Error(ErrorCode::invalid_argument, Rule::none, {}, std::nullopt,
                "OpenSSL could not sign with the key: " + openssl_reason(lib));
  signature.resize(length);  // DER signatures vary in length
  return signature;
}

bool EcKey::verify(std::string_view message, std::span<const unsigned char> signature) const {
  const CryptoLibrary& lib = crypto_library();
  MdCtx md(lib);
  const bool ok = lib.digest_verify_init(md.ctx, nullptr, digest_for(lib, curve_), nullptr,
                                         static_cast<EVP_PKEY*>(key_)) == 1 &&
                  lib.digest_verify(md.ctx, signature.data(), signature.size(),
                                    reinterpret_cast<const unsigned char*>(message.data()),
                                    message.size()) == 1;
  lib.err_clear_error();  // a bad signature queues errors that say no more than `false`
  return ok;
}

std::string base64_encode(std::span<const unsigned char> bytes) {
  const CryptoLibrary& lib = crypto_library();
  std::string out;
  // EVP_EncodeBlock takes an int length: encode in pieces of a multiple of 3 bytes.
  constexpr size_t kPiece = 3 << 20;
  for (size_t at = 0; at < bytes.size(); at += kPiece) {
    const size_t n = std::min(kPiece, bytes.size() - at);
    const size_t start = out.size();
    out.resize(start + (n + 2) / 3 * 4 + 1);
    const int written = lib.encode_base64(reinterpret_cast<unsigned char*>(out.data() + start),
                                          bytes.data() + at, static_cast<int>(n));
    out.resize(start + static_cast<size_t>(written));
  }
  return out;
}

bool base64_decode(std::string_view text, std::vector<unsigned char>& out) {
  // EVP_DecodeBlock skips surrounding blanks and counts padding as zero bytes: take only the
  // strict form, then drop what the padding stood for.
  out.clear();
  if (text.size() % 4 != 0 || text.size() > static_cast<size_t>(INT32_MAX)) return false;
  if (text.empty()) return true;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const bool alnum = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    const bool pad =
        c == '=' && i + 2 >= text.size() && (i + 1 == text.size() || text[i + 1] == '=');
    if (!alnum && c != '+' && c != '/' && !pad) return false;
  }
  const size_t padding = text.ends_with("==") ? 2 : text.ends_with('=') ? 1 : 0;
  out.resize(text.size() / 4 * 3);
  const int n = crypto_library().decode_base64(out.data(),
                                               reinterpret_cast<const unsigned char*>(text.data()),
                                               static_cast<int>(text.size()));
  if (n < 0 || static_cast<size_t>(n) != out.size()) return false;
  out.resize(out.size() - padding);
  return true;
}

}  // namespace tlio::detail

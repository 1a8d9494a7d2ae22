// Fuzz target: model signatures as a stranger may hand them over. The bytes are read as a
// Sigstore bundle, then wrapped as the base64 payload of a well-formed bundle (so the in-toto
// statement reader sees them too), then as base64 text (what decodes must survive an encode
// and a decode unchanged), then as two paths compared in path order (a strict order). Nothing
// may crash or throw: every fault is a problem in the result.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "io/ecdsa.hpp"
#include "trust/hash.hpp"
#include "trust/model_signing.hpp"

namespace {

// A P-256 public key made for this target (its private half was not kept).
constexpr std::string_view kPublicKey =
    "-----BEGIN PUBLIC KEY-----\n"
    "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEAng6qhEdd5MMQfgkgt4fIyH047nJ\n"
    "OQTTfalDgYY7HZL882R4igLuYo4h6vocFs8C/pPWbkx/CwSy6OMyewX7Rg==\n"
    "-----END PUBLIC KEY-----\n";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tlio::detail;
  static const EcKey key = EcKey::public_from_pem(kPublicKey, "fuzz key");
  const std::string_view input(reinterpret_cast<const char*>(data), size);

  (void)read_signature(input, "bundle", key);

  const std::string payload = base64_encode({data, size});
  const std::string wrapped =
      "{\"mediaType\":\"application/vnd.dev.sigstore.bundle.v0.3+json\",\"verificationMaterial\":{\"publicKey\":"
      "{\"hint\":\"\"},\"tlogEntries\":[]},\"dsseEnvelope\":{\"payload\":\"" +
      payload +
      "\",\"payloadType\":\"application/vnd.in-toto+json\",\"signatures\":[{\"sig\":\"MEUCIQ==\"}]}}";
  const SignedStatement s = read_signature(wrapped, "wrapped", key);
  if (s.problems.empty()) std::abort();  // the signature cannot verify

  std::vector<unsigned char> decoded, again;
  if (base64_decode(input, decoded)) {
    if (!base64_decode(base64_encode(decoded), again) || again != decoded) std::abort();
  }

  const size_t half = size / 2;
  const std::string_view a = input.substr(0, half), b = input.substr(half);
  if (path_order(a, b) && path_order(b, a)) std::abort();
  if (path_order(a, a)) std::abort();
  return 0;
}

// trust/model_signing.hpp: reading a model signature's bundle (trust/model_signing.cpp), apart
// from the folder it signs, for tests and fuzz_signature.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "io/ecdsa.hpp"

namespace tlio::detail {

/// What a bundle says, and what is wrong with it.
struct SignedStatement {
  /// The bundle's own failures: media type, key hint, signature, payload type, statement types,
  /// subject, serialization, malformed resources, a root digest that does not cover them.
  std::vector<std::string> problems;
  /// name -> lower-case hex SHA-256, as the statement lists them.
  std::map<std::string, std::string> files;
  /// The serialization's ignore_paths, as written.
  std::vector<std::string> ignore_paths;
  std::string key_hint;
};

/// Reads the Sigstore bundle `text` (named `source` in problems) and checks it with `key`. Never
/// throws for what the text holds: every fault is a problem.
SignedStatement read_signature(std::string_view text, const std::string& source, const EcKey& key);

}  // namespace tlio::detail

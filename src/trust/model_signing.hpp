// trust/model_signing.hpp: reading a model signature's bundle (trust/model_signing.cpp), apart
// from the folder it signs, for tests and fuzz_signature.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "io/ecdsa.hpp"

namespace tlio::detail {

/// Problems as they are found: the first `limit` kept in full, the rest only counted (a
/// hostile statement may list millions), then "... and N more problems".
class Problems {
 public:
  explicit Problems(std::vector<std::string>& out, size_t limit = 100) : out_(out), limit_(limit) {}
  ~Problems() {
    if (more_) out_.push_back("... and " + std::to_string(more_) + " more problems");
  }
  Problems(const Problems&) = delete;
  Problems& operator=(const Problems&) = delete;
  void add(std::string problem) {
    if (out_.size() < limit_)
      out_.push_back(std::move(problem));
    else
      ++more_;
  }

 private:
  std::vector<std::string>& out_;
  size_t limit_;
  size_t more_ = 0;
};

/// What a bundle says, and what is wrong with it.
struct SignedStatement {
  /// The bundle's own failures: media type, key hint, signature, payload type, statement types,
  /// subject, serialization, malformed resources, a root digest that does not cover them.
  std::vector<std::string> problems;
  /// True when the signature verifies with the key: only then is the statement read (and the
  /// files worth hashing); an unsigned statement says nothing.
  bool trusted = false;
  /// name -> lower-case hex SHA-256, as the statement lists them.
  std::map<std::string, std::string> files;
  /// The serialization's ignore_paths, as written.
  std::vector<std::string> ignore_paths;
  std::string key_hint;
};

/// Reads the Sigstore bundle `text` (named `source` in problems) and checks it with `key`. Never
/// throws for what the text holds: every fault is a problem (names shown with shown_name).
SignedStatement read_signature(std::string_view text, const std::string& source, const EcKey& key);

}  // namespace tlio::detail

// tlio/error.hpp: the one error type thrown by the C++ API.
//
// Every failure carries a code (what kind of failure), the rule it broke ("1".."5" for the
// reader rules of the spec, or a named check such as "int4"), the tensor or key concerned,
// the byte offset in the file when known, and a one-line message such as
//   model.safetensors: rule 5: tensor "b" begins at 12, expected 16
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "tlio/export.hpp"

namespace tlio {

/// Kinds of failure. The numeric values are the C API's TL_E* codes.
enum class ErrorCode : int {
  format = 1,  ///< the bytes break a rule of the format (reader rules, quantization checks)
  io = 2,      ///< a file could not be opened, read, written or renamed
  invalid_argument = 3,  ///< the caller asked for something malformed (bad slice, bad tensor data)
  not_found = 4,         ///< a tensor or key asked for by name does not exist
  unsupported = 5,       ///< a valid request that tlio does not do
  out_of_memory = 6,     ///< an allocation failed
};

TLIO_API std::string_view error_code_name(ErrorCode code) noexcept;

class TLIO_API Error : public std::runtime_error {
 public:
  /// `rule` is empty when no rule applies; `tensor` is empty when no tensor or key applies.
  Error(ErrorCode code, std::string rule, std::string tensor, std::optional<uint64_t> offset,
        std::string detail, std::string source = {});

  ErrorCode code() const noexcept { return code_; }
  const std::string& rule() const noexcept { return rule_; }
  const std::string& tensor() const noexcept { return tensor_; }
  std::optional<uint64_t> offset() const noexcept { return offset_; }
  /// The message without the source prefix, e.g. `tensor "b" begins at 12, expected 16`.
  const std::string& detail() const noexcept { return detail_; }
  /// The file or buffer name the error is about (may be empty).
  const std::string& source() const noexcept { return source_; }

  /// The same error, attributed to `source` (a file name); keeps an existing source.
  Error with_source(std::string source) const;

 private:
  ErrorCode code_;
  std::string rule_;
  std::string tensor_;
  std::optional<uint64_t> offset_;
  std::string detail_;
  std::string source_;
};

/// Shorthands for the common kinds (rule and tensor optional).
[[noreturn]] TLIO_API void throw_format(std::string rule, std::string tensor, std::string detail,
                                        std::optional<uint64_t> offset = std::nullopt);
[[noreturn]] TLIO_API void throw_invalid(std::string detail, std::string tensor = {});
[[noreturn]] TLIO_API void throw_io(std::string detail, std::string source = {});

}  // namespace tlio

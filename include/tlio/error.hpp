// tlio/error.hpp: the one error type thrown by the C++ API.
//
// Every failure carries a code (what kind of failure), the rule it broke (one of the reader rules
// 1..5 of the spec, or a named check such as int4), the tensor or key concerned, the byte offset
// in the file when known, the operating system's error for I/O failures, and a one-line message
//   model.safetensors: rule 5: tensor "b" begins at 12, expected 16
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

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
  interrupted = 7,       ///< stopped by the caller's InterruptScope (tlio/interrupt.hpp)
  /// the bytes are not the ones expected: a SHA-256 or a model signature does not match
  /// (tlio/trust.hpp)
  verification = 8,
};

TLIO_API std::string_view error_code_name(ErrorCode code) noexcept;

/// The rule an input broke. r1..r5 are the reader rules of the spec (header length, JSON, metadata,
/// entries, layout); the others are the named checks of quantized weights and model directories.
enum class Rule : uint8_t {
  none,
  r1_length,    ///< "1": the 8-byte header length and the file's size
  r2_json,      ///< "2": UTF-8, JSON syntax, one object, no duplicate keys
  r3_metadata,  ///< "3": __metadata__ is an object of strings
  r4_entry,     ///< "4": each tensor entry (fields, dtype, shape, offsets)
  r5_layout,    ///< "5": the tensors tile the data section in order
  int4,         ///< "int4": tinyllm int4 pairs
  bnb,          ///< "bnb": bitsandbytes layout and quant_state
  bnb_001,      ///< "BNB-001": quant_type and blocksize
  bnb_002,      ///< "BNB-002": sizes of the packed codes and absmax
  bnb_003,      ///< "BNB-003": the stored quant_map
  bnb_004,      ///< "BNB-004": a nested absmax is complete
  model,        ///< "model": model directory, config.json, tokenizer, architecture checks
  index,        ///< "index": the shard index of a sharded model
  zip,          ///< "zip": the zip container of a PyTorch checkpoint
  pickle,       ///< "pickle": a checkpoint's pickle stream and the globals it names
  checkpoint,   ///< "checkpoint": a checkpoint's storages and tensor views
  gguf,         ///< "gguf": a GGUF file's header, metadata, tensor infos and data layout
  quant,        ///< "quant": the Hub's quantized layouts (FP8, GPTQ, AWQ, MXFP4, NVFP4,
                ///< compressed-tensors integers) and quantization_config
};

/// The rule as printed: "1".."5", "int4", "bnb", "BNB-001".."BNB-004", "model", "index", "zip",
/// "pickle", "checkpoint", "gguf", "quant"; "" for none.
TLIO_API std::string_view rule_name(Rule rule) noexcept;

class TLIO_API Error : public std::runtime_error {
 public:
  /// `rule` is Rule::none when no rule applies; `tensor` is empty when no tensor or key applies.
  Error(ErrorCode code, Rule rule, std::string tensor, std::optional<uint64_t> offset,
        std::string detail, std::string source = {}, std::error_code os_error = {});

  ErrorCode code() const noexcept { return code_; }
  Rule rule() const noexcept { return rule_; }
  std::string_view rule_name() const noexcept { return tlio::rule_name(rule_); }
  /// For I/O errors, what the operating system said (errno); empty otherwise.
  std::error_code os_error() const noexcept { return os_error_; }
  const std::string& tensor() const noexcept { return tensor_; }
  std::optional<uint64_t> offset() const noexcept { return offset_; }
  /// The message without the source prefix, e.g. `tensor "b" begins at 12, expected 16`.
  const std::string& detail() const noexcept { return detail_; }
  /// The file or buffer name the error is about (may be empty).
  const std::string& source() const noexcept { return source_; }

  /// The same error, attributed to `source` (a file name); keeps an existing source.
  Error with_source(std::string source) const;
  /// The same error about `tensor`, with `context` before its detail ("context: detail", e.g.
  /// `tensor "w": ...`); code, rule, offset, source and OS error are kept.
  Error with_tensor(std::string tensor, std::string_view context) const;

 private:
  ErrorCode code_;
  Rule rule_;
  std::string tensor_;
  std::optional<uint64_t> offset_;
  std::string detail_;
  std::string source_;
  std::error_code os_error_;
};

/// Shorthands for the common kinds (rule and tensor optional).
[[noreturn]] TLIO_API void throw_format(Rule rule, std::string tensor, std::string detail,
                                        std::optional<uint64_t> offset = std::nullopt);
[[noreturn]] TLIO_API void throw_invalid(std::string detail, std::string tensor = {});
/// `os_error` (errno) adds the OS reason to the message: "cannot open: Permission denied".
[[noreturn]] TLIO_API void throw_io(std::string detail, std::string source = {},
                                    std::error_code os_error = {});

}  // namespace tlio

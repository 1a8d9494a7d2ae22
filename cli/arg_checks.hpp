// cli/arg_checks.hpp: CLI11 checks for option values, so a bad value is a usage error (exit 2)
// found while parsing, before any file is opened, with bounds people can read.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

namespace tlio::cli {

/// A byte size as tlio::parse_size reads it ("5GB", "500MiB", "123456"), at least 1 byte.
CLI::Validator size_check();
/// An ECMAScript regex (the flavour the library searches names with).
CLI::Validator regex_check();
/// A finite number >= 0 ("1e-3"); never a bound printed with 309 digits.
CLI::Validator non_negative_check();
/// A whole number from 0 to `max`.
CLI::Validator count_check(uint64_t max);
/// A floating dtype tlio converts to (F16, bf16, float8_e4m3fn, ...): convert's and import's
/// --dtype; with `gguf_types` also the ggml types a .gguf output takes (convert checks them against
/// OUT).
CLI::Validator convert_dtype_check(bool gguf_types = false);
/// Whether `v` names a ggml block type tlio writes into a .gguf (Q8_0, Q4_K, ...), and their list.
bool is_gguf_weight_type(const std::string& v);
std::string gguf_weight_type_text();

}  // namespace tlio::cli

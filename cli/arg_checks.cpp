#include "arg_checks.hpp"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <regex>

#include "cli_util.hpp"
#include "tlio/convert.hpp"
#include "tlio/dtype.hpp"
#include "tlio/error.hpp"
#include "tlio/ggml.hpp"
#include "tlio/gguf.hpp"
#include "tlio/gguf_convert.hpp"
#include "tlio/model.hpp"

namespace tlio::cli {

CLI::Validator size_check() {
  return CLI::Validator(
      [](std::string& v) -> std::string {
        try {
          tlio::parse_size(v);
        } catch (const tlio::Error& e) {
          return e.what();
        }
        return {};
      },
      "");
}

bool is_gguf_weight_type(const std::string& v) {
  const auto t = tlio::ggml_type_named(v);
  if (t && tlio::ggml_plain_dtype(t->id)) return false;  // F32, F16, BF16: dtypes of any OUT
  const auto same = [&](std::string_view name) {
    return std::ranges::equal(name, v, [](char a, char b) {
      return std::toupper(static_cast<unsigned char>(a)) ==
             std::toupper(static_cast<unsigned char>(b));
    });
  };
  return std::ranges::any_of(tlio::gguf_export_types(), same);
}

std::string gguf_weight_type_text() {
  std::vector<std::string_view> names;
  for (std::string_view t : tlio::gguf_export_types())
    if (const auto g = tlio::ggml_type_named(t); !g || !tlio::ggml_plain_dtype(g->id))
      names.push_back(t);
  return fmt::format("{}", fmt::join(names, ", "));
}

CLI::Validator convert_dtype_check(bool gguf_types) {
  return CLI::Validator(
      [gguf_types](std::string& v) -> std::string {
        const auto d = tlio::parse_dtype_alias(v);
        if (!d && gguf_types && is_gguf_weight_type(v))
          return {};  // for a .gguf OUT (checked with OUT)
        if (!d)
          return "unknown dtype '" + v + "'; the dtypes: " + convert_dtype_text() +
                 (gguf_types ? "; for a .gguf OUT also " + gguf_weight_type_text() : std::string());
        if (!tlio::is_floating(*d) || !tlio::can_convert(tlio::Dtype::F32, *d))
          return "not a floating dtype tlio converts to: '" + v +
                 "'; those are: " + convert_dtype_text();
        return {};
      },
      "");
}

CLI::Validator regex_check() {
  return CLI::Validator(
      [](std::string& v) -> std::string {
        try {
          std::regex compiled(v, std::regex::ECMAScript);
        } catch (const std::regex_error& e) {
          return fmt::format("invalid regex '{}': {}", v, e.what());
        }
        return {};
      },
      "");
}

CLI::Validator non_negative_check() {
  return CLI::Validator(
      [](std::string& v) -> std::string {
        double x = 0;
        const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
        if (ec == std::errc::result_out_of_range)
          return fmt::format("{} is out of range: a number from 0 to about 1.8e308", v);
        if (ec != std::errc{} || end != v.data() + v.size() || !std::isfinite(x) || x < 0)
          return fmt::format("{} is not a number from 0 up (such as 0.01 or 1e-3)", v);
        return {};
      },
      "");
}

CLI::Validator count_check(uint64_t max) {
  return CLI::Validator(
      [max](std::string& v) -> std::string {
        uint64_t x = 0;
        const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
        if (ec != std::errc{} || end != v.data() + v.size() || x > max)
          return fmt::format("{} is not a whole number from 0 to {}", v, thousands(max));
        return {};
      },
      "");
}

}  // namespace tlio::cli

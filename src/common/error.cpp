// error.cpp: tlio::Error and its message format "source: rule R: detail[: OS reason]".
#include "tlio/error.hpp"

#include <iterator>
#include <utility>

namespace tlio {
namespace {

std::string compose(const std::string& source, Rule rule, const std::string& detail,
                    std::error_code os_error) {
  std::string out;
  if (!source.empty()) out.append(source).append(": ");
  if (rule != Rule::none) {
    // Reader rules are numbers ("rule 5"); named checks ("int4", "BNB-001") stand alone.
    if (rule <= Rule::r5_layout) out.append("rule ");
    out.append(rule_name(rule)).append(": ");
  }
  out.append(detail);
  if (os_error) out.append(": ").append(os_error.message());
  return out;
}

}  // namespace

std::string_view error_code_name(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::format:
      return "format";
    case ErrorCode::io:
      return "io";
    case ErrorCode::invalid_argument:
      return "invalid_argument";
    case ErrorCode::not_found:
      return "not_found";
    case ErrorCode::unsupported:
      return "unsupported";
    case ErrorCode::out_of_memory:
      return "out_of_memory";
    case ErrorCode::interrupted:
      return "interrupted";
    case ErrorCode::verification:
      return "verification";
  }
  return "unknown";
}

std::string_view rule_name(Rule rule) noexcept {
  // In the enum's order.
  static constexpr std::string_view kNames[] = {
      "",    "1",       "2",          "3",       "4",       "5",     "int4",
      "bnb", "BNB-001", "BNB-002",    "BNB-003", "BNB-004", "model", "index",
      "zip", "pickle",  "checkpoint", "gguf",    "quant"};
  static_assert(std::size(kNames) == static_cast<size_t>(Rule::quant) + 1);
  const auto i = static_cast<size_t>(rule);
  return i < std::size(kNames) ? kNames[i] : std::string_view{};
}

Error::Error(ErrorCode code, Rule rule, std::string tensor, std::optional<uint64_t> offset,
             std::string detail, std::string source, std::error_code os_error)
    : std::runtime_error(compose(source, rule, detail, os_error)),
      code_(code),
      rule_(rule),
      tensor_(std::move(tensor)),
      offset_(offset),
      detail_(std::move(detail)),
      source_(std::move(source)),
      os_error_(os_error) {}

Error Error::with_source(std::string source) const {
  if (!source_.empty()) return *this;
  return Error(code_, rule_, tensor_, offset_, detail_, std::move(source), os_error_);
}

Error Error::with_tensor(std::string tensor, std::string_view context) const {
  std::string detail = context.empty() ? detail_ : std::string(context) + ": " + detail_;
  return Error(code_, rule_, std::move(tensor), offset_, std::move(detail), source_, os_error_);
}

void throw_format(Rule rule, std::string tensor, std::string detail,
                  std::optional<uint64_t> offset) {
  throw Error(ErrorCode::format, rule, std::move(tensor), offset, std::move(detail));
}

void throw_invalid(std::string detail, std::string tensor) {
  throw Error(ErrorCode::invalid_argument, Rule::none, std::move(tensor), std::nullopt,
              std::move(detail));
}

void throw_io(std::string detail, std::string source, std::error_code os_error) {
  throw Error(ErrorCode::io, Rule::none, {}, std::nullopt, std::move(detail), std::move(source),
              os_error);
}

}  // namespace tlio

// error.cpp: tlio::Error and its message format "source: rule R: detail[: OS reason]".
#include "tlio/error.hpp"

#include <utility>

#include "tlio/version.hpp"

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
  }
  return "unknown";
}

std::string_view rule_name(Rule rule) noexcept {
  switch (rule) {
    case Rule::none:
      return "";
    case Rule::r1_length:
      return "1";
    case Rule::r2_json:
      return "2";
    case Rule::r3_metadata:
      return "3";
    case Rule::r4_entry:
      return "4";
    case Rule::r5_layout:
      return "5";
    case Rule::int4:
      return "int4";
    case Rule::bnb:
      return "bnb";
    case Rule::bnb_001:
      return "BNB-001";
    case Rule::bnb_002:
      return "BNB-002";
    case Rule::bnb_003:
      return "BNB-003";
    case Rule::bnb_004:
      return "BNB-004";
    case Rule::model:
      return "model";
    case Rule::index:
      return "index";
  }
  return "";
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

const char* version() noexcept { return TLIO_VERSION_STRING; }

}  // namespace tlio

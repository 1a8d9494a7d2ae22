// error.cpp: tlio::Error and its message format "source: rule R: detail".
#include "tlio/error.hpp"

#include <utility>

#include "tlio/version.hpp"

namespace tlio {
namespace {

std::string compose(const std::string& source, const std::string& rule, const std::string& detail) {
  std::string out;
  if (!source.empty()) out.append(source).append(": ");
  if (!rule.empty()) {
    // Reader rules are numbers ("rule 5"); named checks ("int4", "BNB-001") stand alone.
    if (rule.find_first_not_of("0123456789") == std::string::npos) out.append("rule ");
    out.append(rule).append(": ");
  }
  out.append(detail);
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

Error::Error(ErrorCode code, std::string rule, std::string tensor, std::optional<uint64_t> offset,
             std::string detail, std::string source)
    : std::runtime_error(compose(source, rule, detail)),
      code_(code),
      rule_(std::move(rule)),
      tensor_(std::move(tensor)),
      offset_(offset),
      detail_(std::move(detail)),
      source_(std::move(source)) {}

Error Error::with_source(std::string source) const {
  if (!source_.empty()) return *this;
  return Error(code_, rule_, tensor_, offset_, detail_, std::move(source));
}

void throw_format(std::string rule, std::string tensor, std::string detail,
                  std::optional<uint64_t> offset) {
  throw Error(ErrorCode::format, std::move(rule), std::move(tensor), offset, std::move(detail));
}

void throw_invalid(std::string detail, std::string tensor) {
  throw Error(ErrorCode::invalid_argument, {}, std::move(tensor), std::nullopt, std::move(detail));
}

void throw_io(std::string detail, std::string source) {
  throw Error(ErrorCode::io, {}, {}, std::nullopt, std::move(detail), std::move(source));
}

const char* version() noexcept { return TLIO_VERSION_STRING; }

}  // namespace tlio

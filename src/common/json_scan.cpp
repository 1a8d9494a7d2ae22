// common/json_scan.cpp: see json_scan.hpp. Iterative (an explicit stack), so hostile nesting
// costs a byte of memory per level and no call depth.
#include "common/json_scan.hpp"

#include <simdjson.h>

#include <cstring>

namespace tlio::detail {

namespace {

constexpr size_t kMaxJsonDepth = 1024;  // simdjson's DEFAULT_MAX_DEPTH
constexpr std::string_view kInt64MinDigits = "9223372036854775808";
constexpr std::string_view kUint64MaxDigits = "18446744073709551615";

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// Digits without leading zeros, compared as numbers.
bool digits_above(std::string_view digits, std::string_view limit) {
  if (digits.size() != limit.size()) return digits.size() > limit.size();
  return digits > limit;
}

class Scanner {
 public:
  explicit Scanner(std::string_view text) : t_(text) {}

  JsonScan run() {
    enum class Want { value, value_or_close, key_or_close, key, colon, comma_or_close };
    Want want = Want::value;
    for (;;) {
      skip_space();
      if (i_ == t_.size()) {
        if (want != Want::comma_or_close || !stack_.empty()) fail("more JSON: the text ends early");
        return out_;
      }
      const char c = t_[i_];
      switch (want) {
        case Want::value_or_close:
          if (c == ']') {
            close();
            want = Want::comma_or_close;
            continue;
          }
          [[fallthrough]];
        case Want::value:
          if (c == '{' || c == '[') {
            if (stack_.size() == kMaxJsonDepth)
              return fail("no deeper nesting (1024 levels at most)");
            stack_.push_back(c);
            ++i_;
            want = c == '{' ? Want::key_or_close : Want::value_or_close;
            continue;
          }
          if (!scalar()) return out_;
          want = Want::comma_or_close;
          continue;
        case Want::key_or_close:
          if (c == '}') {
            close();
            want = Want::comma_or_close;
            continue;
          }
          [[fallthrough]];
        case Want::key:
          if (c != '"') return fail("a key in double quotes");
          if (!string()) return out_;
          want = Want::colon;
          continue;
        case Want::colon:
          if (c != ':') return fail("':' after the key");
          ++i_;
          want = Want::value;
          continue;
        case Want::comma_or_close:
          if (stack_.empty()) return fail("the end of the text after the value");
          if (c == ',') {
            ++i_;
            want = stack_.back() == '{' ? Want::key : Want::value;
            continue;
          }
          if (c != (stack_.back() == '{' ? '}' : ']'))
            return fail(stack_.back() == '{' ? "',' or '}'" : "',' or ']'");
          close();
          continue;
      }
    }
  }

 private:
  JsonScan fail(const char* expected) {
    if (out_.valid) {
      out_.valid = false;
      out_.error_offset = i_;
      out_.error = std::string("expected ") + expected;
    }
    return out_;
  }

  void skip_space() {
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\t' || t_[i_] == '\n' || t_[i_] == '\r'))
      ++i_;
  }

  void close() {
    stack_.pop_back();
    ++i_;
  }

  bool scalar() {
    const char c = t_[i_];
    if (c == '"') return string();
    if (c == '-' || is_digit(c)) return number();
    for (std::string_view word : {"true", "false", "null"}) {
      if (t_.substr(i_, word.size()) == word) {
        i_ += word.size();
        return true;
      }
    }
    fail("a value (an object, array, string, number, true, false or null)");
    return false;
  }

  bool string() {
    ++i_;  // the opening quote
    while (i_ < t_.size()) {
      const auto c = static_cast<unsigned char>(t_[i_]);
      if (c == '"') {
        ++i_;
        return true;
      }
      if (c < 0x20) return fail("no control character inside a string (escape it)"), false;
      if (c == '\\') {
        ++i_;
        if (i_ == t_.size()) break;
        if (t_[i_] == 'u') {
          for (size_t k = 1; k <= 4; ++k) {
            if (i_ + k >= t_.size() || !is_hex(t_[i_ + k])) {
              i_ += k;
              return fail("four hexadecimal digits after \\u"), false;
            }
          }
          i_ += 5;
          continue;
        }
        if (std::strchr("\"\\/bfnrt", t_[i_]) == nullptr || t_[i_] == '\0')
          return fail("an escape such as \\n, \\\" or \\u0041"), false;
        ++i_;
        continue;
      }
      if (c >= 0x80 && !utf8_sequence()) return false;
      if (c < 0x80) ++i_;
    }
    fail("the string's closing quote");
    return false;
  }

  // One UTF-8 sequence at i_, its length from the lead byte, checked by simdjson's validator
  // (RFC 3629: no overlong forms, surrogates or values past U+10FFFF).
  bool utf8_sequence() {
    const auto c = static_cast<unsigned char>(t_[i_]);
    const size_t len = c >= 0xF0   ? 4
                       : c >= 0xE0 ? 3
                       : c >= 0xC0 ? 2
                                   : 1;  // 1: a stray continuation
    if (i_ + len > t_.size() || !simdjson::validate_utf8(t_.data() + i_, len))
      return fail("valid UTF-8"), false;
    i_ += len;
    return true;
  }

  bool number() {
    const size_t begin = i_;
    const bool negative = t_[i_] == '-';
    if (negative) ++i_;
    const size_t first_digit = i_;
    if (i_ < t_.size() && t_[i_] == '0') {
      ++i_;
    } else if (i_ < t_.size() && is_digit(t_[i_])) {
      while (i_ < t_.size() && is_digit(t_[i_])) ++i_;
    } else {
      return fail("a digit"), false;
    }
    const std::string_view digits = t_.substr(first_digit, i_ - first_digit);
    bool integer = true;
    if (i_ < t_.size() && t_[i_] == '.') {
      integer = false;
      if (!digits_after(++i_)) return fail("a digit after the decimal point"), false;
    }
    if (i_ < t_.size() && (t_[i_] == 'e' || t_[i_] == 'E')) {
      integer = false;
      ++i_;
      if (i_ < t_.size() && (t_[i_] == '+' || t_[i_] == '-')) ++i_;
      if (!digits_after(i_)) return fail("a digit in the exponent"), false;
    }
    if (integer && digits_above(digits, negative ? kInt64MinDigits : kUint64MaxDigits))
      out_.big_integers.push_back({begin, i_});
    return true;
  }

  bool digits_after(size_t at) {
    if (at >= t_.size() || !is_digit(t_[at])) return false;
    while (i_ < t_.size() && is_digit(t_[i_])) ++i_;
    return true;
  }

  std::string_view t_;
  size_t i_ = 0;
  std::string stack_;  // '{' or '[' per open container
  JsonScan out_;
};

}  // namespace

JsonScan scan_json(std::string_view text) { return Scanner(text).run(); }

TextPosition text_position(std::string_view text, size_t offset) {
  TextPosition p;
  for (size_t k = 0; k < offset && k < text.size(); ++k) {
    if (text[k] == '\n') {
      ++p.line;
      p.column = 1;
    } else {
      ++p.column;
    }
  }
  return p;
}

}  // namespace tlio::detail

// Tests for common/json_scan.hpp: the grammar walk behind JSON errors' positions and the
// integers past 64 bits.
#include "common/json_scan.hpp"

#include <gtest/gtest.h>

#include <string>

namespace tlio::detail {
namespace {

std::string error_at(std::string_view text) {
  const JsonScan s = scan_json(text);
  if (s.valid) return "valid";
  const TextPosition p = text_position(text, s.error_offset);
  return std::to_string(p.line) + ":" + std::to_string(p.column) + " " + s.error;
}

TEST(JsonScan, AcceptsWhatRfc8259Accepts) {
  for (std::string_view ok :
       {"{}", "[]", " 0 ", "-0.5e+3", "\"\\u00e9\\n\"", "true", "null",
        "{\"a\": [1, 2.5, {\"b\": false}], \"c\": \"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"}"}) {
    EXPECT_EQ(error_at(ok), "valid") << ok;
  }
}

TEST(JsonScan, NamesWhereTheTextGoesWrong) {
  EXPECT_EQ(error_at(""), "1:1 expected more JSON: the text ends early");
  EXPECT_EQ(error_at("{\"a\" 1}"), "1:6 expected ':' after the key");
  EXPECT_EQ(error_at("{\"a\": 1,}"), "1:9 expected a key in double quotes");
  EXPECT_EQ(error_at("[1 2]"), "1:4 expected ',' or ']'");
  EXPECT_EQ(error_at("{}\n x"), "2:2 expected the end of the text after the value");
  EXPECT_EQ(error_at("[01]"), "1:3 expected ',' or ']'");
  EXPECT_EQ(error_at("[1.]"), "1:4 expected a digit after the decimal point");
  EXPECT_EQ(error_at("[1e]"), "1:4 expected a digit in the exponent");
  EXPECT_EQ(error_at("[tru]"),
            "1:2 expected a value (an object, array, string, number, true, false or null)");
  EXPECT_EQ(error_at("[\"a\tb\"]"),
            "1:4 expected no control character inside a string (escape it)");
  EXPECT_EQ(error_at("[\"\\x\"]"), "1:4 expected an escape such as \\n, \\\" or \\u0041");
  EXPECT_EQ(error_at("[\"\\u12g4\"]"), "1:7 expected four hexadecimal digits after \\u");
  EXPECT_EQ(error_at("[\"\xc0\xaf\"]"), "1:3 expected valid UTF-8");      // overlong
  EXPECT_EQ(error_at("[\"\xed\xa0\x80\"]"), "1:3 expected valid UTF-8");  // a surrogate
  EXPECT_EQ(error_at("[\"abc"), "1:6 expected the string's closing quote");
  EXPECT_EQ(error_at("[1,"), "1:4 expected more JSON: the text ends early");
}

TEST(JsonScan, NestingIsBoundedWithoutRecursion) {
  EXPECT_EQ(error_at(std::string(1024, '[') + std::string(1024, ']')), "valid");
  EXPECT_EQ(error_at(std::string(1025, '[')),
            "1:1025 expected no deeper nesting (1024 levels at most)");
  EXPECT_EQ(error_at(std::string(1 << 20, '[')),
            "1:1025 expected no deeper nesting (1024 levels at most)");
}

// Hostile texts end where they break, never past the end of the text.
TEST(JsonScan, HostileTextsStopAtTheirEnd) {
  using namespace std::string_literals;
  EXPECT_EQ(error_at("[\0]"s),
            "1:2 expected a value (an object, array, string, number, true, false or null)");
  EXPECT_EQ(error_at("[\"a\0\"]"s),
            "1:4 expected no control character inside a string (escape it)");
  EXPECT_EQ(error_at("[\"\\\0\"]"s), "1:4 expected an escape such as \\n, \\\" or \\u0041");
  EXPECT_EQ(error_at("-"), "1:2 expected a digit");
  EXPECT_EQ(error_at("-0"), "valid");
  EXPECT_EQ(error_at("1.5e"), "1:5 expected a digit in the exponent");
  EXPECT_EQ(error_at("1e+"), "1:4 expected a digit in the exponent");
  EXPECT_EQ(error_at("[\"\\"), "1:4 expected the string's closing quote");
  EXPECT_EQ(error_at("[\"\\u12"), "1:7 expected four hexadecimal digits after \\u");
  EXPECT_EQ(error_at("[\"\xe2\x82"), "1:3 expected valid UTF-8");  // a sequence cut by the end
  EXPECT_EQ(error_at("[\"\x80\"]"), "1:3 expected valid UTF-8");   // a stray continuation byte
  const std::string digits(100000, '7');
  const JsonScan s = scan_json(digits);
  ASSERT_TRUE(s.valid);
  ASSERT_EQ(s.big_integers.size(), 1u);
  EXPECT_EQ(s.big_integers[0].end, digits.size());
}

TEST(JsonScan, FindsIntegersPast64Bits) {
  const std::string text =
      "[18446744073709551615, 18446744073709551616, -9223372036854775808, -9223372036854775809, "
      "1e400, 100000000000000000000.0, \"99999999999999999999\", 1000000000000000019884624838656]";
  const JsonScan s = scan_json(text);
  ASSERT_TRUE(s.valid);
  std::vector<std::string> found;
  for (const JsonSpan& n : s.big_integers) found.push_back(text.substr(n.begin, n.end - n.begin));
  EXPECT_EQ(found, (std::vector<std::string>{"18446744073709551616", "-9223372036854775809",
                                             "1000000000000000019884624838656"}));
}

}  // namespace
}  // namespace tlio::detail

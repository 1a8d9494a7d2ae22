// Tests for common/json_text.hpp: JSON string literals with the reference's escaping.
#include "common/json_text.hpp"

#include <gtest/gtest.h>

#include <string>

namespace tlio::detail {
namespace {

TEST(JsonText, ReferenceEscaping) {
  std::string out;
  append_json_string(out, std::string("a\"b\\c\b\t\n\f\r\x01\x1f\x7f/\xC3\xA9", 16));
  EXPECT_EQ(out, "\"a\\\"b\\\\c\\b\\t\\n\\f\\r\\u0001\\u001f\x7f/\xC3\xA9\"");
}

TEST(JsonText, QuoteNameKeepsHostileNamesOnOneLine) {
  EXPECT_EQ(quote_name("a\nb\"c"), "\"a\\nb\\\"c\"");
  EXPECT_EQ(quote_name(""), "\"\"");
}

TEST(JsonText, ValidUtf8ReplacesEachBadByte) {
  EXPECT_EQ(valid_utf8("plain \xC3\xA9 \xF0\x9F\x98\x80"), "plain \xC3\xA9 \xF0\x9F\x98\x80");
  // A lone continuation byte, a lead byte cut short, a truncated sequence at the end.
  EXPECT_EQ(valid_utf8("a\x80"
                       "b"),
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(valid_utf8("\xC3(x"), "\xEF\xBF\xBD(x");
  EXPECT_EQ(valid_utf8("z\xE2\x82"), "z\xEF\xBF\xBD\xEF\xBF\xBD");
}

}  // namespace
}  // namespace tlio::detail

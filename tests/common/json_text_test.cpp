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

}  // namespace
}  // namespace tlio::detail

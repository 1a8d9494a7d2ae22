// Tests for common/json_members: one top-level member removed, replaced or added, the rest of
// the text byte for byte.
#include "common/json_members.hpp"

#include <gtest/gtest.h>

#include <string>

namespace tlio::detail {
namespace {

std::string set(std::string_view json, std::string_view key, std::optional<std::string> value) {
  return set_json_member(json, key, value, "config.json", Rule::model);
}

const char* kConfig = "{\n  \"a\": {\"x\": [1, \"}\"]},\n  \"b\": 1.50,\n  \"c\": \"q\\\"\"\n}\n";

TEST(JsonMembers, RemovesFirstMiddleAndLast) {
  EXPECT_EQ(set(kConfig, "a", std::nullopt), "{\n  \"b\": 1.50,\n  \"c\": \"q\\\"\"\n}\n");
  EXPECT_EQ(set(kConfig, "b", std::nullopt),
            "{\n  \"a\": {\"x\": [1, \"}\"]},\n  \"c\": \"q\\\"\"\n}\n");
  EXPECT_EQ(set(kConfig, "c", std::nullopt),
            "{\n  \"a\": {\"x\": [1, \"}\"]},\n  \"b\": 1.50\n}\n");
  EXPECT_EQ(set("{\"only\": null}", "only", std::nullopt), "{}");
  EXPECT_EQ(set(kConfig, "absent", std::nullopt), kConfig);
}

TEST(JsonMembers, ReplacesAValueInPlace) {
  EXPECT_EQ(set(kConfig, "b", "\"bfloat16\""),
            "{\n  \"a\": {\"x\": [1, \"}\"]},\n  \"b\": \"bfloat16\",\n  \"c\": \"q\\\"\"\n}\n");
  EXPECT_EQ(set(kConfig, "a", "true"),
            "{\n  \"a\": true,\n  \"b\": 1.50,\n  \"c\": \"q\\\"\"\n}\n");
  // A key spelled with escapes is the key it stands for.
  EXPECT_EQ(set("{\"a\\u005fb\": 1}", "a_b", "2"), "{\"a\\u005fb\": 2}");
}

TEST(JsonMembers, AddsAfterTheLastMemberIndentedAsItIs) {
  EXPECT_EQ(
      set(kConfig, "d", "2"),
      "{\n  \"a\": {\"x\": [1, \"}\"]},\n  \"b\": 1.50,\n  \"c\": \"q\\\"\",\n  \"d\": 2\n}\n");
  EXPECT_EQ(set("{}", "d", "2"), "{\"d\": 2}");
  EXPECT_EQ(set("{\"a\":1}", "d", "2"), "{\"a\":1,\"d\": 2}");
}

TEST(JsonMembers, RefusesWhatIsNotAnObjectDocument) {
  EXPECT_THROW(set("[1]", "a", "1"), Error);
  EXPECT_THROW(set("{\"a\": 1,}", "a", "1"), Error);
  EXPECT_THROW(set("{\"a\": 1, \"a\": 2}", "a", std::nullopt), Error);
}

}  // namespace
}  // namespace tlio::detail

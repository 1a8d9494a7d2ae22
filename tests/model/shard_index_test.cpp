// Tests for model/shard_index: reading an index and checking it against the names its shards hold
// (the check safetensors folders and pytorch_model-*.bin folders share).
#include "model/shard_index.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tlio/error.hpp"

namespace tlio::detail {
namespace {

const char* kIndex = R"({"metadata": {"total_size": 64},
  "weight_map": {"a": "s-1.bin", "b": "s-1.bin", "c": "s-2.bin"}})";

// The message of the Error{format, index} the check throws, or "" when it passes.
std::string check(const std::vector<std::vector<std::string_view>>& names) {
  try {
    check_shard_index(parse_shard_index(kIndex, "index.json"), names, "index.json");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::format);
    EXPECT_EQ(e.rule(), Rule::index);
    return e.what();
  }
  return "";
}

TEST(ShardIndex, ReadsFilesSortedAndDistinct) {
  const ShardIndex index = parse_shard_index(kIndex, "index.json");
  EXPECT_EQ(index.files, (std::vector<std::string>{"s-1.bin", "s-2.bin"}));
  EXPECT_EQ(index.weight_map.size(), 3u);
  EXPECT_EQ(index.total_size, 64u);
}

TEST(ShardIndex, PassesShardsThatHoldWhatItLists) { EXPECT_EQ(check({{"b", "a"}, {"c"}}), ""); }

TEST(ShardIndex, RefusesATensorInTheWrongShard) {
  EXPECT_NE(
      check({{"a"}, {"b", "c"}}).find("tensor \"b\" is listed in s-1.bin but missing from it"),
      std::string::npos);
}

TEST(ShardIndex, RefusesATensorItDoesNotList) {
  EXPECT_NE(
      check({{"a", "b"}, {"c", "d"}}).find("tensor \"d\" of s-2.bin is not listed in the index"),
      std::string::npos);
}

TEST(ShardIndex, RefusesATensorInTwoShards) {
  EXPECT_NE(check({{"a", "b", "c"}, {"c"}}).find("tensor \"c\" is in s-1.bin and in s-2.bin"),
            std::string::npos);
}

TEST(ShardIndex, RefusesAListedTensorNoShardHolds) {
  EXPECT_NE(check({{"a", "b"}, {}}).find("tensor \"c\" is listed in s-2.bin but missing from it"),
            std::string::npos);
}

}  // namespace
}  // namespace tlio::detail

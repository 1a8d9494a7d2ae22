// Tests for format/name_index.hpp, including names whose hashes all collide.
#include "format/name_index.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tlio::detail {
namespace {

TEST(NameIndex, FindsEveryNameAndNoOther) {
  std::vector<std::string> names;
  for (int i = 0; i < 5000; ++i) names.push_back("layers." + std::to_string(i) + ".w");
  auto name_of = [&](uint32_t p) -> std::string_view { return names[p]; };
  std::vector<uint64_t> keys;
  name_index_build(keys, names.size(), name_of);
  EXPECT_EQ(name_index_duplicate(keys, name_of), -1);
  for (size_t i = 0; i < names.size(); ++i)
    EXPECT_EQ(name_index_find(keys, names[i], name_of), int64_t(i));
  EXPECT_EQ(name_index_find(keys, "layers.5000.w", name_of), -1);
  EXPECT_EQ(name_index_find(keys, "", name_of), -1);
}

TEST(NameIndex, FindsDuplicates) {
  std::vector<std::string> names = {"a", "b", "c", "b"};
  auto name_of = [&](uint32_t p) -> std::string_view { return names[p]; };
  std::vector<uint64_t> keys;
  name_index_build(keys, names.size(), name_of);
  int64_t dup = name_index_duplicate(keys, name_of);
  ASSERT_GE(dup, 0);
  EXPECT_EQ(names[size_t(dup)], "b");
}

TEST(NameIndex, AllHashesCollidingStaysCorrectAndFast) {
  // Every key gets hash 7: the index must still find each name (binary search by name within
  // the run) and detect duplicates, in O(n log n).
  const size_t n = 200000;
  std::vector<std::string> names;
  for (size_t i = 0; i < n; ++i) names.push_back("n" + std::to_string(i * 7919 % n));
  auto name_of = [&](uint32_t p) -> std::string_view { return names[p]; };
  std::vector<uint64_t> keys(n);
  for (size_t i = 0; i < n; ++i) keys[i] = uint64_t{7} << 32 | i;
  name_index_sort(keys, name_of);
  EXPECT_EQ(name_index_duplicate(keys, name_of), -1);
  for (size_t i = 0; i < n; i += 997)
    EXPECT_EQ(name_index_find(keys, names[i], 7, name_of), int64_t(i));
  EXPECT_EQ(name_index_find(keys, "missing", 7, name_of), -1);
  names.push_back(names[12345]);
  keys.push_back(uint64_t{7} << 32 | n);
  name_index_sort(keys, name_of);
  EXPECT_GE(name_index_duplicate(keys, name_of), 0);
}

TEST(NameIndex, HashUsesEveryByte) {
  EXPECT_NE(name_hash32("layers.1.w"), name_hash32("layers.2.w"));
  EXPECT_NE(name_hash32("abcdefgh1"), name_hash32("abcdefgh2"));
  EXPECT_NE(name_hash32(std::string("a\0", 2)), name_hash32("a"));
  EXPECT_LT(name_hash32("x"), uint64_t{1} << 32);
}

}  // namespace
}  // namespace tlio::detail

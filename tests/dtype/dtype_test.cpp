// Tests for tlio/dtype.hpp: the dtype table and name parsing.
#include "tlio/dtype.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tlio {
namespace {

TEST(Dtype, TableMatchesReferenceEnumOrderAndBits) {
  // notes/hf-reference.md 2.1: (name, bits) in declaration order.
  const std::vector<std::pair<std::string, unsigned>> expected = {
      {"BOOL", 8},        {"F4", 4},      {"F6_E2M3", 6}, {"F6_E3M2", 6}, {"U8", 8},
      {"I8", 8},          {"F8_E5M2", 8}, {"F8_E4M3", 8}, {"F8_E8M0", 8}, {"F8_E4M3FNUZ", 8},
      {"F8_E5M2FNUZ", 8}, {"I16", 16},    {"U16", 16},    {"F16", 16},    {"BF16", 16},
      {"I32", 32},        {"U32", 32},    {"F32", 32},    {"C64", 64},    {"F64", 64},
      {"I64", 64},        {"U64", 64}};
  ASSERT_EQ(all_dtypes().size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    Dtype d = all_dtypes()[i];
    EXPECT_EQ(static_cast<size_t>(d), i);
    EXPECT_EQ(dtype_name(d), expected[i].first);
    EXPECT_EQ(dtype_bits(d), expected[i].second);
    EXPECT_EQ(parse_dtype(expected[i].first), d);
  }
}

TEST(Dtype, WriteOrderIsDecisionsList) {
  const std::vector<std::string> order = {
      "U64", "I64", "F64",     "C64",         "F32",         "U32",     "I32",     "BF16",
      "F16", "U16", "I16",     "F8_E5M2FNUZ", "F8_E4M3FNUZ", "F8_E8M0", "F8_E4M3", "F8_E5M2",
      "I8",  "U8",  "F6_E3M2", "F6_E2M3",     "F4",          "BOOL"};
  for (size_t i = 0; i < order.size(); ++i) EXPECT_EQ(write_rank(*parse_dtype(order[i])), int(i));
}

TEST(Dtype, ParseIsExactAndCaseSensitive) {
  EXPECT_FALSE(parse_dtype("f32"));
  EXPECT_FALSE(parse_dtype("F8_E4M3FN"));
  EXPECT_FALSE(parse_dtype("F128"));
  EXPECT_FALSE(parse_dtype(""));
  EXPECT_FALSE(parse_dtype("F32 "));
}

TEST(Dtype, AliasesForUsers) {
  EXPECT_EQ(parse_dtype_alias("bf16"), Dtype::BF16);
  EXPECT_EQ(parse_dtype_alias("bfloat16"), Dtype::BF16);
  EXPECT_EQ(parse_dtype_alias("float32"), Dtype::F32);
  EXPECT_EQ(parse_dtype_alias("f8_e4m3"), Dtype::F8_E4M3);
  EXPECT_EQ(parse_dtype_alias("float8_e4m3fn"), Dtype::F8_E4M3);
  EXPECT_EQ(parse_dtype_alias("Float16"), Dtype::F16);
  EXPECT_FALSE(parse_dtype_alias("float128"));
}

TEST(Dtype, Classes) {
  EXPECT_TRUE(is_floating(Dtype::BF16));
  EXPECT_TRUE(is_floating(Dtype::F4));
  EXPECT_FALSE(is_floating(Dtype::C64));
  EXPECT_FALSE(is_floating(Dtype::BOOL));
  EXPECT_TRUE(is_integer(Dtype::I64));
  EXPECT_FALSE(is_integer(Dtype::BOOL));
  EXPECT_TRUE(is_sub_byte(Dtype::F6_E2M3));
  EXPECT_FALSE(is_sub_byte(Dtype::U8));
}

}  // namespace
}  // namespace tlio

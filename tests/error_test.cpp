// Tests for tlio/error.hpp: the message format, rule names, OS errors and added context.
#include "tlio/error.hpp"

#include <gtest/gtest.h>

#include <cerrno>

namespace tlio {
namespace {

TEST(Error, MessageIsSourceRuleDetail) {
  const Error e(ErrorCode::format, Rule::r5_layout, "b", 12,
                "tensor \"b\" begins at 12, expected 16", "model.safetensors");
  EXPECT_STREQ(e.what(), "model.safetensors: rule 5: tensor \"b\" begins at 12, expected 16");
  EXPECT_EQ(e.rule(), Rule::r5_layout);
  EXPECT_EQ(e.rule_name(), "5");
  EXPECT_EQ(e.tensor(), "b");
  EXPECT_EQ(e.offset(), 12u);
  EXPECT_FALSE(e.os_error());
}

TEST(Error, NamedChecksStandAloneAndNoRuleNoPrefix) {
  EXPECT_STREQ(Error(ErrorCode::format, Rule::bnb_003, "w", {}, "bad map").what(),
               "BNB-003: bad map");
  EXPECT_STREQ(Error(ErrorCode::format, Rule::int4, "w", {}, "x", "f").what(), "f: int4: x");
  EXPECT_STREQ(Error(ErrorCode::invalid_argument, Rule::none, {}, {}, "plain").what(), "plain");
}

TEST(Error, EveryRuleHasItsPrintedName) {
  const std::pair<Rule, std::string_view> names[] = {
      {Rule::none, ""},           {Rule::r1_length, "1"},     {Rule::r2_json, "2"},
      {Rule::r3_metadata, "3"},   {Rule::r4_entry, "4"},      {Rule::r5_layout, "5"},
      {Rule::int4, "int4"},       {Rule::bnb, "bnb"},         {Rule::bnb_001, "BNB-001"},
      {Rule::bnb_002, "BNB-002"}, {Rule::bnb_003, "BNB-003"}, {Rule::bnb_004, "BNB-004"},
      {Rule::model, "model"},     {Rule::index, "index"}};
  for (auto [rule, name] : names) EXPECT_EQ(rule_name(rule), name);
}

TEST(Error, OsErrorKeptAndSaid) {
  try {
    throw_io("cannot open", "x.safetensors", std::error_code(EACCES, std::generic_category()));
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::io);
    EXPECT_EQ(e.os_error().value(), EACCES);
    EXPECT_STREQ(e.what(), "x.safetensors: cannot open: Permission denied");
    EXPECT_EQ(e.detail(), "cannot open");
  }
}

TEST(Error, WithTensorKeepsEverythingElse) {
  const Error e(ErrorCode::format, Rule::bnb_001, {}, 40, "blocksize 7", "f.safetensors",
                std::error_code(EIO, std::generic_category()));
  const Error t = e.with_tensor("w.quant_state", "\"w.quant_state\"");
  EXPECT_EQ(t.tensor(), "w.quant_state");
  EXPECT_EQ(t.offset(), 40u);
  EXPECT_EQ(t.source(), "f.safetensors");
  EXPECT_EQ(t.rule(), Rule::bnb_001);
  EXPECT_EQ(t.os_error().value(), EIO);
  EXPECT_EQ(t.detail(), "\"w.quant_state\": blocksize 7");
  EXPECT_EQ(e.with_tensor("w", "").detail(), "blocksize 7");
}

TEST(Error, WithSourceKeepsAnExistingSource) {
  const Error e(ErrorCode::format, Rule::r2_json, {}, {}, "bad");
  EXPECT_STREQ(e.with_source("a").what(), "a: rule 2: bad");
  EXPECT_STREQ(e.with_source("a").with_source("b").what(), "a: rule 2: bad");
}

}  // namespace
}  // namespace tlio

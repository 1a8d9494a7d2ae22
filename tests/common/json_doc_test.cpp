// Tests for common/json_doc.hpp: strict small JSON documents and typed fields.
#include "common/json_doc.hpp"

#include <gtest/gtest.h>

#include "tlio/error.hpp"

namespace tlio::detail {
namespace {

Error error_of(std::string_view json) {
  try {
    JsonDoc doc(json, "config.json", Rule::model);
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "accepted: " << json;
  return Error(ErrorCode::format, Rule::none, {}, {}, "");
}

TEST(JsonDoc, RefusesInvalidNonObjectsAndDuplicatesAtAnyDepth) {
  EXPECT_NE(std::string(error_of("{").detail()).find("invalid JSON"), std::string::npos);
  EXPECT_EQ(error_of("[1]").detail(), "not a JSON object");
  const Error dup = error_of(R"({"a": {"b": [{"c": 1, "c": 2}]}})");
  EXPECT_EQ(dup.tensor(), "c");
  EXPECT_EQ(dup.rule(), Rule::model);
  EXPECT_EQ(dup.source(), "config.json");
  EXPECT_STREQ(dup.what(), "config.json: model: key \"c\" appears twice");
}

TEST(JsonDoc, TypedFields) {
  const JsonDoc doc(R"({"s": "x", "n": 7, "b": true, "z": null, "neg": -1})", "c", Rule::model);
  EXPECT_EQ(doc.optional_string("s"), "x");
  EXPECT_EQ(doc.optional_string("missing"), std::nullopt);
  EXPECT_EQ(doc.optional_string("z"), std::nullopt);  // null is absent
  EXPECT_EQ(doc.required_uint("n"), 7u);
  EXPECT_EQ(doc.optional_bool("b"), true);
  EXPECT_THROW(doc.optional_string("n"), Error);
  EXPECT_THROW(doc.optional_uint("neg"), Error);
  EXPECT_THROW(doc.optional_bool("s"), Error);
  try {
    doc.required_uint("missing");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.tensor(), "missing");
    EXPECT_EQ(e.detail(), "missing key missing");
  }
}

// transformers' save_pretrained writes model_max_length as int(1e30): JSON sets no integer
// limit, so the document is read, the number as the double nearest it, its neighbours intact.
TEST(JsonDoc, ReadsIntegersBeyond64Bits) {
  const JsonDoc doc(R"({"model_max_length": 1000000000000000019884624838656, "n": 7,
    "s": "1000000000000000019884624838656", "small": [-9223372036854775809, 18446744073709551615]})",
                    "tokenizer_config.json", Rule::model);
  EXPECT_EQ(doc.required_uint("n"), 7u);
  EXPECT_EQ(doc.optional_string("s"), "1000000000000000019884624838656");
  double big = 0;
  ASSERT_EQ(doc.root()["model_max_length"].get_double().get(big), simdjson::SUCCESS);
  EXPECT_EQ(big, 1e30);
  EXPECT_THROW(doc.optional_uint("model_max_length"), Error);  // not a 64-bit integer
  uint64_t top = 0;
  ASSERT_EQ(doc.root()["small"].at(1).get_uint64().get(top), simdjson::SUCCESS);
  EXPECT_EQ(top, UINT64_MAX);
}

TEST(JsonDoc, InvalidJsonNamesLineAndColumn) {
  const Error e = error_of("{\n  \"a\": 1,\n  \"b\": 01\n}");
  EXPECT_EQ(e.detail(), "invalid JSON at line 3, column 9: expected ',' or '}'");
  EXPECT_EQ(e.source(), "config.json");
  // Past a double's range: not read, and said where.
  const Error huge = error_of("{\"n\": 1,\n \"big\": " + std::string(400, '9') + "}");
  EXPECT_TRUE(huge.detail().starts_with("invalid JSON at line 2, column 9: ")) << huge.detail();
}

}  // namespace
}  // namespace tlio::detail

// Tests for gguf_convert/gguf_rope.hpp: config.json's rope_scaling read (the kinds llama.cpp has a
// place for, the others refused by name), Llama 3's factors in their three regions, linear
// scaling's keys, and the config.json member written back. (python/tests/test_gguf_export.py
// compares the factors with llama.cpp's converter's formula in torch, runs the export in llama.cpp
// against transformers' scaled RoPE, and imports it back.)
#include "gguf_convert/gguf_rope.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "tlio/error.hpp"

namespace tlio::detail {
namespace {

constexpr uint64_t kPairs = 2;  // half the rotated part of a head

RopeScaling parsed(const std::string& scaling, const std::string& more = "",
                   RopeExtras extras = {}) {
  const std::string json = "{\"rope_scaling\": " + scaling + more + "}";
  return parse_rope_scaling(JsonDoc(json, "config.json", Rule::model), "config.json", kPairs,
                            extras);
}

std::string refusal(const std::string& scaling, RopeExtras extras = {}) {
  try {
    parsed(scaling, "", extras);
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "accepted " << scaling;
  return {};
}

TEST(GgufRope, ReadsTransformers5RopeParameters) {
  // transformers 5 writes rope_parameters (rope_theta with the scaling; per kind of layer where
  // they differ, the full-attention layers' being what llama.cpp's keys hold); rope_scaling, where
  // a config has it, comes first.
  const auto from = [](const std::string& json) {
    return parse_rope_scaling(JsonDoc(json, "config.json", Rule::model), "config.json", kPairs);
  };
  EXPECT_EQ(from(R"({"rope_parameters": {"rope_theta": 1e6, "rope_type": "default"}})").kind,
            RopeScaling::Kind::none);
  const RopeScaling llama3 =
      from(R"({"rope_parameters": {"rope_theta": 5e5, "rope_type": "llama3", "factor": 8.0,)"
           R"( "low_freq_factor": 1.0, "high_freq_factor": 4.0,)"
           R"( "original_max_position_embeddings": 8192}})");
  EXPECT_EQ(llama3.kind, RopeScaling::Kind::llama3);
  EXPECT_EQ(llama3.factor, 8.0);
  EXPECT_EQ(llama3.original_context, 8192u);
  const RopeScaling per_kind = from(
      R"({"rope_parameters": {"full_attention": {"rope_theta": 1e6, "rope_type": "linear",)"
      R"( "factor": 8.0}, "sliding_attention": {"rope_theta": 1e4, "rope_type": "default"}}})");
  EXPECT_EQ(per_kind.kind, RopeScaling::Kind::linear);
  EXPECT_EQ(per_kind.factor, 8.0);
  EXPECT_EQ(from(R"({"rope_scaling": {"rope_type": "linear", "factor": 2},)"
                 R"( "rope_parameters": {"rope_type": "default"}})")
                .factor,
            2.0);
  EXPECT_THROW(from(R"({"rope_parameters": {"rope_type": "yarn", "factor": 4}})"), Error);
}

TEST(GgufRope, ReadsTheKindsLlamaCppTakes) {
  EXPECT_EQ(parsed("null").kind, RopeScaling::Kind::none);
  EXPECT_EQ(parsed("{\"rope_type\": \"default\"}").kind, RopeScaling::Kind::none);
  const RopeScaling linear = parsed("{\"type\": \"linear\", \"factor\": 2}");
  EXPECT_EQ(linear.kind, RopeScaling::Kind::linear);
  EXPECT_EQ(linear.factor, 2.0);
  // Llama 3.1's config, and one leaving everything to the defaults (the original context from
  // the top level, as older configs put it).
  const RopeScaling llama31 = parsed(
      "{\"factor\": 8.0, \"high_freq_factor\": 4.0, \"low_freq_factor\": 1.0, "
      "\"original_max_position_embeddings\": 8192, \"rope_type\": \"llama3\"}");
  EXPECT_EQ(llama31.kind, RopeScaling::Kind::llama3);
  EXPECT_EQ(llama31.original_context, 8192u);
  const RopeScaling bare =
      parsed("{\"rope_type\": \"llama3\"}", ", \"original_max_position_embeddings\": 4096");
  EXPECT_EQ(bare.factor, 8.0);
  EXPECT_EQ(bare.high_freq_factor, 4.0);
  EXPECT_EQ(bare.original_context, 4096u);

  // gpt-oss's YaRN; its truncate false is taken for its row (the converter drops the key).
  const std::string oss =
      "{\"beta_fast\": 32.0, \"beta_slow\": 1.0, \"factor\": 32.0, "
      "\"original_max_position_embeddings\": 4096, \"rope_type\": \"yarn\", \"truncate\": false}";
  const RopeScaling yarn = parsed(oss, "", {.untruncated = true});
  EXPECT_NE(refusal(oss).find("truncate false"), std::string::npos);  // another row's
  // DeepSeek's mscale: taken where it equals mscale_all_dim, as llama.cpp's graph computes it.
  const std::string ds =
      "{\"rope_type\": \"yarn\", \"factor\": 40, \"original_max_position_embeddings\": 4096, "
      "\"mscale\": 1.0, \"mscale_all_dim\": ";
  EXPECT_EQ(parsed(ds + "1.0}", "", {.mscale = true}).mscale_all_dim, 1.0);
  EXPECT_NE(refusal(ds + "0.707}", {.mscale = true}).find("mscale differs"), std::string::npos);
  EXPECT_EQ(yarn.kind, RopeScaling::Kind::yarn);
  EXPECT_EQ(yarn.original_context, 4096u);
  EXPECT_EQ(yarn.beta_fast, 32.0);
  EXPECT_EQ(yarn.beta_slow, 1.0);
  EXPECT_FALSE(yarn.attention_factor.has_value());
  EXPECT_FALSE(yarn.truncate);
  EXPECT_NE(refusal("{\"rope_type\": \"yarn\", \"factor\": 4}").find("original_max_position"),
            std::string::npos);
  // DeepSeek's mscale_all_dim is a key of its own architecture, not yet exported.
  EXPECT_NE(
      refusal("{\"rope_type\": \"yarn\", \"factor\": 4, \"original_max_position_embeddings\": "
              "4096, \"mscale_all_dim\": 1}")
          .find("mscale_all_dim"),
      std::string::npos);
  EXPECT_NE(refusal("{\"rope_type\": \"longrope\", \"factor\": 4}").find("\"longrope\""),
            std::string::npos);  // outside Phi-3's row
  EXPECT_NE(refusal("{\"type\": \"dynamic\", \"factor\": 2}").find("dynamic"), std::string::npos);
  EXPECT_NE(refusal("{\"rope_type\": \"linear\", \"factor\": 2, \"beta\": 1}").find("beta"),
            std::string::npos);
  EXPECT_NE(refusal("{\"rope_type\": \"linear\"}").find("factor"), std::string::npos);
  EXPECT_NE(refusal("{\"rope_type\": \"llama3\", \"low_freq_factor\": 4, \"high_freq_factor\": 1}")
                .find("exceed"),
            std::string::npos);
  EXPECT_NE(refusal("[1]").find("not an object"), std::string::npos);
}

TEST(GgufRope, LongRopeIsPhi3sFactorsAndAttentionFactor) {
  // Phi-3.5's shape: the original context at the top level, the attention factor transformers
  // computes from the contexts' ratio (sqrt(1 + ln 32 / ln 4096)).
  const std::string phi35 =
      R"({"long_factor": [1.0, 2.5], "short_factor": [1, 1.25], "type": "longrope"})";
  const std::string contexts =
      R"(, "max_position_embeddings": 131072, "original_max_position_embeddings": 4096)";
  const RopeScaling r = parsed(phi35, contexts, {.longrope = true});
  EXPECT_EQ(r.kind, RopeScaling::Kind::longrope);
  EXPECT_EQ(r.long_factor, (std::vector<float>{1.0f, 2.5f}));
  EXPECT_EQ(r.short_factor, (std::vector<float>{1.0f, 1.25f}));
  EXPECT_EQ(r.original_context, 4096u);
  EXPECT_DOUBLE_EQ(*r.attention_factor, std::sqrt(1 + std::log(32.0) / std::log(4096.0)));
  const std::vector<GgufKeyValue> keys = rope_scaling_keys("phi3", r);
  ASSERT_EQ(keys.size(), 2u);
  EXPECT_EQ(keys[0].key, "phi3.rope.scaling.original_context_length");
  EXPECT_EQ(keys[0].value.as_uint(), 4096u);
  EXPECT_EQ(keys[1].key, "phi3.rope.scaling.attn_factor");
  const auto tensors = rope_tensors(r, 10000.0, 4);
  ASSERT_EQ(tensors.size(), 2u);
  EXPECT_EQ(tensors[0].first, kRopeLongName);
  EXPECT_EQ(tensors[1].second, r.short_factor);
  EXPECT_TRUE(is_rope_tensor(r, kRopeShortName));
  EXPECT_FALSE(is_rope_tensor(r, kRopeFreqsName));
  // transformers' own attention_factor where config.json gives one; written back where it is not
  // the one transformers computes.
  RopeScaling given =
      parsed(R"({"long_factor": [1, 2], "short_factor": [1, 1], "rope_type": "longrope",)"
             R"( "attention_factor": 1.5, "original_max_position_embeddings": 2048})",
             R"(, "max_position_embeddings": 8192)", {.longrope = true});
  EXPECT_EQ(given.attention_factor, 1.5);
  EXPECT_EQ(given.original_context, 2048u);
  EXPECT_EQ(rope_scaling_json(given),
            ",\n  \"rope_scaling\": {\"attention_factor\": 1.5, \"long_factor\": [1.0, 2.0], "
            "\"original_max_position_embeddings\": 2048, \"rope_type\": \"longrope\", "
            "\"short_factor\": [1.0, 1.0]}");
  given.attention_factor.reset();
  EXPECT_EQ(rope_scaling_json(given).find("attention_factor"), std::string::npos);
  // A list of the wrong length, a value that is no positive float, and the kind elsewhere.
  for (const std::string& bad :
       {R"({"long_factor": [1, 2, 3], "short_factor": [1, 1], "rope_type": "longrope"})",
        R"({"long_factor": [1, -2], "short_factor": [1, 1], "rope_type": "longrope"})",
        R"({"long_factor": [1, 1e300], "short_factor": [1, 1], "rope_type": "longrope"})",
        R"({"long_factor": [1, "x"], "short_factor": [1, 1], "rope_type": "longrope"})",
        R"({"short_factor": [1, 1], "rope_type": "longrope"})"})
    EXPECT_THROW(parsed(bad, contexts, {.longrope = true}), Error) << bad;
  EXPECT_NE(refusal(phi35).find("longrope for Phi-3"), std::string::npos);
  // transformers reads config.json's original context, the converter rope_scaling's: refused
  // where they differ; a fraction or a negative number is no context length.
  for (const char* own : {"2048", "4096.5", "-1", "1e30"})
    EXPECT_THROW(
        parsed(R"({"long_factor": [1, 2], "short_factor": [1, 1], "rope_type": "longrope",)"
               R"( "original_max_position_embeddings": )" +
                   std::string(own) + "}",
               contexts, {.longrope = true}),
        Error)
        << own;
}

TEST(GgufRope, Llama3FactorsKeepShortWavesScaleLongOnesAndSmoothBetween) {
  RopeScaling r;
  r.kind = RopeScaling::Kind::llama3;
  r.factor = 8;
  r.original_context = 8192;
  const std::vector<float> f = llama3_rope_factors(r, 500000.0, 128);  // Llama 3.1 8B
  ASSERT_EQ(f.size(), 64u);
  EXPECT_EQ(f.front(), 1.0f);  // wavelength 2 pi: kept
  EXPECT_EQ(f.back(), 8.0f);   // wavelengths past 8192: divided by the factor
  size_t band = 0;
  for (size_t i = 1; i < f.size(); ++i) {
    EXPECT_GE(f[i], f[i - 1]) << i;  // longer waves, larger factors
    band += f[i] > 1.0f && f[i] < 8.0f;
  }
  EXPECT_GT(band, 2u);
}

TEST(GgufRope, LinearIsKeysAndEveryKindIsAConfigMember) {
  RopeScaling r;
  EXPECT_TRUE(rope_scaling_keys("llama", r).empty());
  EXPECT_EQ(rope_scaling_json(r), "");
  r.kind = RopeScaling::Kind::linear;
  r.factor = 4;
  const std::vector<GgufKeyValue> keys = rope_scaling_keys("llama", r);
  ASSERT_EQ(keys.size(), 2u);
  EXPECT_EQ(keys[0].key, "llama.rope.scaling.type");
  EXPECT_EQ(*keys[0].value.as_string(), "linear");
  EXPECT_EQ(keys[1].value.as_double(), 4.0);
  EXPECT_EQ(rope_scaling_json(r),
            ",\n  \"rope_scaling\": {\"factor\": 4.0, \"rope_type\": \"linear\"}");
  r.kind = RopeScaling::Kind::llama3;
  r.factor = 8;
  r.low_freq_factor = 0.5;
  r.original_context = 8192;
  EXPECT_EQ(
      rope_scaling_json(r),
      ",\n  \"rope_scaling\": {\"factor\": 8.0, \"high_freq_factor\": 4.0, \"low_freq_factor\": 0.5, "
      "\"original_max_position_embeddings\": 8192, \"rope_type\": \"llama3\"}");
  // YaRN: the keys llama.cpp reads, and back.
  r = RopeScaling{};
  r.kind = RopeScaling::Kind::yarn;
  r.factor = 32;
  r.original_context = 4096;
  r.beta_fast = 32;
  r.beta_slow = 1;
  std::vector<std::string> names;
  for (const GgufKeyValue& k : rope_scaling_keys("gpt-oss", r)) names.push_back(k.key);
  EXPECT_EQ(names,
            (std::vector<std::string>{"gpt-oss.rope.scaling.type", "gpt-oss.rope.scaling.factor",
                                      "gpt-oss.rope.scaling.original_context_length",
                                      "gpt-oss.rope.scaling.yarn_beta_fast",
                                      "gpt-oss.rope.scaling.yarn_beta_slow"}));
  EXPECT_EQ(rope_scaling_json(r),
            ",\n  \"rope_scaling\": {\"factor\": 32.0, \"beta_fast\": 32.0, \"beta_slow\": 1.0, "
            "\"original_max_position_embeddings\": 4096, \"rope_type\": \"yarn\"}");
  r.truncate = false;  // gpt-oss's, written back on import
  EXPECT_NE(rope_scaling_json(r).find("\"rope_type\": \"yarn\", \"truncate\": false}"),
            std::string::npos);
}

}  // namespace
}  // namespace tlio::detail

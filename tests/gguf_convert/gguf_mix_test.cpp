// Tests for gguf_convert/gguf_mix.hpp: the layer and kind rules of llama.cpp's mixes written out
// for models of 8 and 32 layers, and the row fallbacks. (python/tests/test_gguf_export.py compares
// whole exports with what libllama's llama_model_quantize writes.)
#include "gguf_convert/gguf_mix.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tlio/error.hpp"
#include "tlio/ggml.hpp"

namespace tlio::detail {
namespace {

std::string type_name(uint32_t id) { return std::string(ggml_type(id)->name); }

std::string mixed(std::string_view mix, const MixModel& m, const std::string& name,
                  uint64_t row = 4096) {
  return type_name(gguf_mix_type(*gguf_mix_named(mix), m, name, row));
}

// The layers whose `kind` gets `type` under `mix`.
std::vector<int> layers_with(std::string_view mix, const MixModel& m, const std::string& kind,
                             std::string_view type) {
  std::vector<int> out;
  for (int i = 0; i < static_cast<int>(m.layers); ++i)
    if (mixed(mix, m, "blk." + std::to_string(i) + "." + kind) == type) out.push_back(i);
  return out;
}

TEST(GgufMix, NamesFileTypesAndBases) {
  ASSERT_EQ(gguf_mixes().size(), 14u);
  EXPECT_EQ(gguf_mix_named("q4_k_m")->file_type, 15u);
  EXPECT_EQ(type_name(gguf_mix_named("Q3_K_L")->base), "Q3_K");
  EXPECT_EQ(gguf_mix_named("Q5_K_M")->file_type, 17u);
  EXPECT_EQ(gguf_mix_named("Q4_K")->name, "Q4_K_M");  // llama-quantize's own alias
  EXPECT_EQ(gguf_mix_named("q3_k")->name, "Q3_K_M");
  EXPECT_FALSE(gguf_mix_named("Q2_K_S"));  // made with an importance matrix only
  EXPECT_EQ(gguf_mix_named("Q4_0")->file_type, 2u);
  EXPECT_EQ(gguf_mix_named("Q6_K")->file_type, 18u);
  EXPECT_FALSE(gguf_mix_named("F16"));
  EXPECT_FALSE(gguf_mix_named("IQ2_XXS"));
}

TEST(GgufMix, PlainFileTypesGiveTheOutputSixBits) {
  const MixModel m{8, 8, false, false};
  EXPECT_EQ(mixed("Q4_0", m, "output.weight"), "Q6_K");
  EXPECT_EQ(mixed("Q8_0", m, "output.weight"), "Q8_0");
  EXPECT_EQ(mixed("Q4_0", m, "output.weight", 4016), "Q8_0");  // rows not whole blocks of 32
  EXPECT_EQ(mixed("Q4_0", m, "blk.0.ffn_down.weight"), "Q4_0");
  EXPECT_EQ(mixed("Q6_K", m, "blk.3.attn_v.weight"), "Q6_K");
}

TEST(GgufMix, Q2KAndEightExperts) {
  EXPECT_THROW(asked_types("q2_k_s"), Error);
  MixModel m{16, 16, false, false};
  EXPECT_EQ(mixed("Q2_K", m, "blk.5.attn_v.weight"), "Q3_K");  // 1 head per KV head
  m.gqa = 4;
  EXPECT_EQ(mixed("Q2_K", m, "blk.5.attn_v.weight"), "Q4_K");
  EXPECT_EQ(mixed("Q2_K", m, "blk.5.ffn_down.weight"), "Q3_K");
  EXPECT_EQ(mixed("Q2_K", m, "blk.5.attn_output.weight"), "Q3_K");
  EXPECT_EQ(mixed("Q2_K", m, "blk.5.ffn_up.weight"), "Q2_K");
  m.experts = 8;  // Mixtral's rules
  EXPECT_EQ(mixed("Q4_K_M", m, "blk.5.attn_v.weight"), "Q8_0");
  EXPECT_EQ(mixed("Q4_K_M", m, "blk.5.attn_k.weight"), "Q8_0");
  EXPECT_EQ(mixed("Q4_K_M", m, "blk.5.attn_output.weight"), "Q5_K");
  EXPECT_EQ(mixed("Q5_K_M", m, "blk.5.attn_output.weight"), "Q5_K");  // its base already
  EXPECT_EQ(mixed("Q4_K_M", m, "blk.5.attn_qkv.weight"), "Q8_0");     // counts as attn_v
}

TEST(GgufMix, MoreBitsLayersOfQ4KM) {
  const MixModel eight{8, 8, false, false}, thirty_two{32, 32, false, false};
  EXPECT_EQ(layers_with("Q4_K_M", eight, "attn_v.weight", "Q6_K"), (std::vector<int>{0, 3, 6, 7}));
  EXPECT_EQ(layers_with("Q4_K_M", eight, "ffn_down.weight", "Q6_K"),
            (std::vector<int>{0, 3, 6, 7}));
  // Layers 0-3 and 28-31, and every third from 4 + 2.
  EXPECT_EQ(layers_with("Q5_K_M", thirty_two, "ffn_down.weight", "Q6_K"),
            (std::vector<int>{0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31}));
  EXPECT_EQ(mixed("Q4_K_M", eight, "blk.1.attn_q.weight"), "Q4_K");
  EXPECT_EQ(mixed("Q4_K_M", eight, "blk.0.attn_output.weight"), "Q4_K");
  EXPECT_EQ(mixed("Q4_K_M", eight, "blk.0.ffn_gate.weight"), "Q4_K");
}

TEST(GgufMix, OtherMixes) {
  const MixModel m{32, 32, false, false};
  EXPECT_EQ(layers_with("Q3_K_M", m, "attn_v.weight", "Q5_K"), (std::vector<int>{0, 1}));
  EXPECT_EQ(mixed("Q3_K_M", m, "blk.9.attn_v.weight"), "Q4_K");
  EXPECT_EQ(layers_with("Q3_K_M", m, "ffn_down.weight", "Q5_K"), (std::vector<int>{0, 1}));
  EXPECT_EQ(mixed("Q3_K_M", m, "blk.9.ffn_down.weight"), "Q4_K");
  EXPECT_EQ(mixed("Q3_K_M", m, "blk.9.attn_output.weight"), "Q4_K");
  EXPECT_EQ(mixed("Q3_K_L", m, "blk.9.attn_output.weight"), "Q5_K");
  EXPECT_EQ(mixed("Q3_K_S", m, "blk.0.attn_v.weight"), "Q3_K");
  EXPECT_EQ(layers_with("Q4_K_S", m, "attn_v.weight", "Q5_K"), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(layers_with("Q4_K_S", m, "ffn_down.weight", "Q5_K"), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(layers_with("Q5_K_S", m, "ffn_down.weight", "Q5_K").size(), 32u);
}

TEST(GgufMix, OutputAndTiedEmbeddings) {
  const MixModel untied{8, 8, false, false}, tied{8, 8, true, false};
  EXPECT_EQ(mixed("Q3_K_S", untied, "output.weight"), "Q6_K");
  EXPECT_EQ(mixed("Q4_K_M", untied, "token_embd.weight"), "Q4_K");
  EXPECT_EQ(mixed("Q4_K_M", tied, "token_embd.weight"), "Q6_K");
  EXPECT_EQ(mixed("Q4_K_M", untied, "output.weight", 4000), "Q8_0");  // rows not whole super-blocks
}

TEST(GgufMix, SeventyBGivesValuesQ5K) {
  const MixModel big{80, 80, false, true};
  EXPECT_EQ(mixed("Q4_K_M", big, "blk.11.attn_v.weight"),
            "Q5_K");  // not a more-bits layer (10, 12 are)
  EXPECT_EQ(mixed("Q4_K_M", big, "blk.12.attn_v.weight"), "Q6_K");
  EXPECT_EQ(mixed("Q4_K_M", big, "blk.0.attn_v.weight"), "Q6_K");
  EXPECT_EQ(mixed("Q3_K_S", big, "blk.40.attn_v.weight"), "Q5_K");
  EXPECT_EQ(mixed("Q3_K_S", big, "blk.40.ffn_down.weight"), "Q3_K");
}

TEST(GgufMix, RowFallbacks) {
  const auto fallback = [](std::string_view type, uint64_t row) {
    return type_name(gguf_row_fallback(ggml_type_named(type)->id, row));
  };
  EXPECT_EQ(fallback("Q4_K", 4096), "Q4_K");
  EXPECT_EQ(fallback("Q4_K", 352), "Q5_0");
  EXPECT_EQ(fallback("Q5_K", 352), "Q5_1");
  EXPECT_EQ(fallback("Q6_K", 352), "Q8_0");
  EXPECT_EQ(fallback("Q3_K", 352), "Q4_0");
  EXPECT_EQ(fallback("Q2_K", 352), "Q4_0");
  EXPECT_EQ(fallback("Q6_K", 100), "F16");
  EXPECT_EQ(fallback("Q8_0", 100), "F16");
  EXPECT_EQ(fallback("F32", 7), "F32");
}

}  // namespace
}  // namespace tlio::detail

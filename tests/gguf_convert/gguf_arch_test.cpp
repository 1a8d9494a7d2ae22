// Tests for gguf_convert/gguf_arch.hpp: the architecture table's rows (names of their own,
// experts, keys, which optional keys llama.cpp's converter writes), config.json read for export
// (transformers 5's rope_parameters, hostile counts refused), and the names a GGUF's stacked
// experts are imported under. (python/tests/test_gguf_archs.py judges whole exports against
// llama.cpp's converter and llama.cpp itself.)
#include "gguf_convert/gguf_arch.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "tlio/error.hpp"

namespace tlio::detail {
namespace {

std::string config(const std::string& cls, const std::string& more = "") {
  return R"({"architectures": [")" + cls +
         R"("], "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,)"
         R"( "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 128,)"
         R"( "vocab_size": 320, "rms_norm_eps": 1e-6)" +
         more + "}";
}

// The hyperparameter keys of a config.json, by name.
std::map<std::string, GgufValue> keys_of(const std::string& json) {
  const HfConfig c = parse_hf_config(json, "config.json");
  std::map<std::string, GgufValue> out;
  for (GgufKeyValue& kv : gguf_hyperparameters(gguf_arch_for(c.hf_class), c))
    out.emplace(kv.key, kv.value);
  return out;
}

std::string refusal(const std::string& json) {
  try {
    (void)parse_hf_config(json, "config.json");
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "accepted " << json;
  return {};
}

TEST(GgufArch, ExpertsAreNamedByTheirStackAndIndex) {
  const HfConfig c = parse_hf_config(
      config("MixtralForCausalLM", R"(, "num_local_experts": 8, "num_experts_per_tok": 2)"),
      "config.json");
  const GgufArch& mixtral = gguf_arch_for("MixtralForCausalLM");
  const auto w2 = gguf_name_for(mixtral, c, "model.layers.1.block_sparse_moe.experts.7.w2.weight");
  ASSERT_TRUE(w2.has_value());
  EXPECT_EQ(w2->name, "blk.1.ffn_down_exps.weight");
  EXPECT_EQ(w2->expert, 7u);
  EXPECT_EQ(gguf_name_for(mixtral, c, "model.layers.0.block_sparse_moe.gate.weight")->name,
            "blk.0.ffn_gate_inp.weight");
  EXPECT_EQ(gguf_name_for(mixtral, c, "model.layers.0.self_attn.q_proj.weight")->permute_heads, 4u);
  // An expert past the count, or a layer past the model's, is no name of the table.
  EXPECT_THROW(gguf_name_for(mixtral, c, "model.layers.0.block_sparse_moe.experts.8.w1.weight"),
               Error);
  // The import's way back: a stack's experts in order, nothing for another tensor.
  const auto experts = gguf_expert_names_of(mixtral, c, "blk.1.ffn_up_exps.weight");
  ASSERT_EQ(experts.size(), 8u);
  EXPECT_EQ(experts[5].first, "model.layers.1.block_sparse_moe.experts.5.w3.weight");
  EXPECT_TRUE(gguf_expert_names_of(mixtral, c, "blk.2.ffn_up_exps.weight").empty());
  EXPECT_TRUE(gguf_expert_names_of(mixtral, c, "blk.1.ffn_up.weight").empty());
}

TEST(GgufArch, NamesOfTheirOwnComeBeforeTheCommonOnes) {
  const HfConfig c = parse_hf_config(config("Olmo2ForCausalLM"), "config.json");
  const GgufArch& olmo2 = gguf_arch_for("Olmo2ForCausalLM");
  EXPECT_EQ(gguf_name_for(olmo2, c, "model.layers.0.post_attention_layernorm.weight")->name,
            "blk.0.post_attention_norm.weight");  // the llama family's ffn_norm elsewhere
  EXPECT_EQ(gguf_name_for(olmo2, c, "model.layers.0.self_attn.q_proj.weight")->permute_heads, 0u);
  const GgufArch& llama = gguf_arch_for("LlamaForCausalLM");
  EXPECT_EQ(gguf_name_for(llama, c, "model.layers.0.post_attention_layernorm.weight")->name,
            "blk.0.ffn_norm.weight");
}

TEST(GgufArch, KeysAreTheOnesTheConverterWrites) {
  // The llama family writes vocab_size and rope.dimension_count, and key_length always (its
  // transformers config fills head_dim in); qwen2 only when config.json has a head_dim.
  auto llama = keys_of(config("LlamaForCausalLM"));
  EXPECT_EQ(llama.at("llama.vocab_size").as_uint(), 320u);
  EXPECT_EQ(llama.at("llama.rope.dimension_count").as_uint(), 16u);
  EXPECT_EQ(llama.at("llama.attention.key_length").as_uint(), 16u);
  auto qwen2 = keys_of(config("Qwen2ForCausalLM"));
  EXPECT_FALSE(qwen2.contains("qwen2.vocab_size") || qwen2.contains("qwen2.attention.key_length"));
  EXPECT_EQ(keys_of(config("Qwen2ForCausalLM", R"(, "head_dim": 32)"))
                .at("qwen2.attention.key_length")
                .as_uint(),
            32u);
  // transformers 5 keeps rope_theta in rope_parameters.
  auto moe =
      keys_of(config("Qwen3MoeForCausalLM",
                     R"(, "num_local_experts": 4, "num_experts_per_tok": 2,)"
                     R"( "moe_intermediate_size": 32, "head_dim": 16,)"
                     R"( "rope_parameters": {"rope_theta": 1000000, "rope_type": "default"})"));
  EXPECT_EQ(moe.at("qwen3moe.expert_count").as_uint(), 4u);
  EXPECT_EQ(moe.at("qwen3moe.expert_used_count").as_uint(), 2u);
  EXPECT_EQ(moe.at("qwen3moe.expert_feed_forward_length").as_uint(), 32u);
  EXPECT_EQ(moe.at("qwen3moe.rope.freq_base").as_double(), 1e6);
  auto granite = keys_of(config("GraniteForCausalLM",
                                R"(, "embedding_multiplier": 12, "logits_scaling": 8,)"
                                R"( "residual_multiplier": 0.22, "attention_multiplier": 0.5)"));
  EXPECT_EQ(granite.at("granite.embedding_scale").type, GgufValueType::FLOAT32);
  EXPECT_EQ(granite.at("granite.attention.scale").as_double(), 0.5);
  EXPECT_EQ(granite.at("granite.residual_scale").as_double(), static_cast<double>(0.22f));
}

TEST(GgufArch, GemmaNormsAreShiftedAndItsKeysAreItsOwn) {
  const std::string json =
      config("Gemma2ForCausalLM",
             R"(, "head_dim": 16, "attn_logit_softcapping": 50.0,)"
             R"( "final_logit_softcapping": 30.0, "sliding_window": 4096,)"
             R"( "rope_parameters": {"rope_theta": 10000.0, "rope_type": "default"})");
  const HfConfig c = parse_hf_config(json, "config.json");
  const GgufArch& gemma2 = gguf_arch_for("Gemma2ForCausalLM");
  EXPECT_EQ(gguf_name_for(gemma2, c, "model.layers.0.pre_feedforward_layernorm.weight")->name,
            "blk.0.ffn_norm.weight");
  EXPECT_EQ(gguf_name_for(gemma2, c, "model.layers.0.pre_feedforward_layernorm.weight")->shift,
            1.0f);
  EXPECT_EQ(gguf_name_for(gemma2, c, "model.norm.weight")->shift, 1.0f);
  EXPECT_EQ(gguf_name_for(gemma2, c, "model.layers.0.mlp.up_proj.weight")->shift, 0.0f);
  const auto keys = keys_of(json);
  EXPECT_EQ(keys.at("gemma2.attention.sliding_window").as_uint(), 4096u);
  EXPECT_EQ(keys.at("gemma2.attn_logit_softcapping").as_double(), 50.0);
  EXPECT_FALSE(keys.contains("gemma2.rope.freq_base"));  // the converter writes none
  // Gemma 3: each kind of layer's RoPE base.
  const auto gemma3 =
      keys_of(config("Gemma3ForCausalLM",
                     R"(, "head_dim": 16, "sliding_window": 512, "rope_parameters":)"
                     R"( {"full_attention": {"rope_theta": 1e6, "rope_type": "default"},)"
                     R"( "sliding_attention": {"rope_theta": 1e4, "rope_type": "default"}})"));
  EXPECT_EQ(gemma3.at("gemma3.rope.freq_base").as_double(), 1e6);
  EXPECT_EQ(gemma3.at("gemma3.rope.freq_base_swa").as_double(), 1e4);
  // Imported back: Gemma's activation, the attention scale llama.cpp takes from the size.
  EXPECT_EQ(gguf_arch_named("gemma3", false).model_type, "gemma3_text");
  EXPECT_EQ(gguf_arch_named("gemma2", false).hidden_act, "gelu_pytorch_tanh");
  EXPECT_EQ(gguf_arch_named("gemma2", false).layers_27b, 46u);
  // DeepSeek: V2's row unless the file has V3's router bias (gguf_arch_of).
  EXPECT_EQ(gguf_arch_named("deepseek2", true).hf_class, "DeepseekV2ForCausalLM");
}

TEST(GgufArch, Phi3KeepsItsFusedProjectionsAndWritesItsOwnKeys) {
  const std::string json = config(
      "Phi3ForCausalLM", R"(, "original_max_position_embeddings": 4096, "sliding_window": null,)"
                         R"( "rope_parameters": {"partial_rotary_factor": 0.75, "rope_theta": 1e4,)"
                         R"( "rope_type": "default"})");
  const HfConfig c = parse_hf_config(json, "config.json");
  const GgufArch& phi3 = gguf_arch_for("Phi3ForCausalLM");
  EXPECT_EQ(gguf_name_for(phi3, c, "model.layers.0.self_attn.qkv_proj.weight")->name,
            "blk.0.attn_qkv.weight");
  EXPECT_EQ(gguf_name_for(phi3, c, "model.layers.0.mlp.gate_up_proj.weight")->name,
            "blk.0.ffn_up.weight");
  const auto keys = keys_of(json);
  EXPECT_EQ(keys.at("phi3.rope.dimension_count").as_uint(), 12u);  // 0.75 of 64 over 4 heads
  EXPECT_EQ(keys.at("phi3.rope.scaling.original_context_length").as_uint(), 4096u);
  EXPECT_EQ(keys.at("phi3.attention.sliding_window").as_uint(), 0u);  // none: 0, as the converter
  EXPECT_FALSE(keys.contains("phi3.attention.key_length") || keys.contains("phi3.vocab_size"));
  // A partial rotary factor elsewhere is refused, not dropped.
  EXPECT_NE(refusal(config("LlamaForCausalLM", R"(, "partial_rotary_factor": 0.5)"))
                .find("partial_rotary_factor of 0.5 is not exported"),
            std::string::npos);
}

TEST(GgufArch, GptOssExpertsHeldStackedAreSplitAndItsKeysAreItsOwn) {
  const std::string json = config(
      "GptOssForCausalLM",
      R"(, "head_dim": 16, "num_local_experts": 4, "num_experts_per_tok": 2, "sliding_window": 8,)"
      R"( "rope_parameters": {"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0,)"
      R"( "beta_slow": 1.0, "original_max_position_embeddings": 4096, "rope_theta": 150000.0,)"
      R"( "truncate": false})");
  const HfConfig c = parse_hf_config(json, "config.json");
  const GgufArch& oss = gguf_arch_for("GptOssForCausalLM");
  EXPECT_EQ(oss.name, "gpt-oss");
  EXPECT_EQ(c.experts, 4u);
  // gate and up interleaved in one tensor: two GGUF tensors, every other column each.
  const auto gate_up = gguf_stacked_names_for(oss, c, "model.layers.1.mlp.experts.gate_up_proj");
  ASSERT_EQ(gate_up.size(), 2u);
  EXPECT_EQ(gate_up[0].first.name, "blk.1.ffn_gate_exps.weight");
  EXPECT_EQ(gate_up[1].first.name, "blk.1.ffn_up_exps.weight");
  EXPECT_EQ(gate_up[0].second->every, 2);
  EXPECT_EQ(gate_up[1].second->first, 1);
  EXPECT_TRUE(gate_up[0].second->transposed);
  const auto bias = gguf_stacked_names_for(oss, c, "model.layers.0.mlp.experts.down_proj_bias");
  ASSERT_EQ(bias.size(), 1u);
  EXPECT_FALSE(bias[0].second->transposed);
  EXPECT_TRUE(gguf_stacked_names_for(oss, c, "model.layers.2.mlp.experts.down_proj").empty());
  EXPECT_TRUE(gguf_stacked_names_for(oss, c, "model.layers.0.mlp.router.weight").empty());
  EXPECT_EQ(gguf_name_for(oss, c, "model.layers.0.self_attn.sinks")->name,
            "blk.0.attn_sinks.weight");
  EXPECT_EQ(gguf_name_for(oss, c, "model.layers.0.mlp.router.bias")->name,
            "blk.0.ffn_gate_inp.bias");
  const auto keys = keys_of(json);
  EXPECT_EQ(keys.at("gpt-oss.expert_feed_forward_length").as_uint(), 128u);
  EXPECT_EQ(keys.at("gpt-oss.attention.sliding_window").as_uint(), 8u);
  EXPECT_EQ(*keys.at("gpt-oss.rope.scaling.type").as_string(), "yarn");
  EXPECT_EQ(keys.at("gpt-oss.rope.scaling.original_context_length").as_uint(), 4096u);
  EXPECT_EQ(keys.at("gpt-oss.rope.freq_base").as_double(), 150000.0);
  EXPECT_FALSE(keys.contains("gpt-oss.vocab_size"));  // not written by the converter either
}

TEST(GgufArch, DeepSeekWritesMlaAsOneKvHeadAndSplitsKvB) {
  const std::string json = config(
      "DeepseekV3ForCausalLM",
      R"(, "n_routed_experts": 4, "num_experts_per_tok": 2,)"
      R"( "moe_intermediate_size": 32, "n_shared_experts": 1, "first_k_dense_replace": 1,)"
      R"( "kv_lora_rank": 32, "q_lora_rank": 48, "qk_rope_head_dim": 16, "qk_nope_head_dim": 16,)"
      R"( "v_head_dim": 16, "n_group": 2, "topk_group": 1, "norm_topk_prob": true,)"
      R"( "routed_scaling_factor": 2.5, "scoring_func": "sigmoid", "rope_parameters":)"
      R"( {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 40.0, "mscale": 1.0,)"
      R"( "mscale_all_dim": 1.0, "original_max_position_embeddings": 4096})");
  const auto keys = keys_of(json);
  EXPECT_EQ(keys.at("deepseek2.attention.head_count_kv").as_uint(), 1u);
  EXPECT_EQ(keys.at("deepseek2.attention.key_length").as_uint(), 48u);  // kv_lora + rope
  EXPECT_EQ(keys.at("deepseek2.attention.value_length").as_uint(), 32u);
  EXPECT_EQ(keys.at("deepseek2.attention.key_length_mla").as_uint(), 32u);  // nope + rope
  EXPECT_EQ(keys.at("deepseek2.attention.value_length_mla").as_uint(), 16u);
  EXPECT_EQ(keys.at("deepseek2.expert_gating_func").as_uint(), 2u);  // sigmoid
  EXPECT_EQ(keys.at("deepseek2.expert_weights_norm").as_uint(), 1u);
  EXPECT_EQ(keys.at("deepseek2.leading_dense_block_count").as_uint(), 1u);
  EXPECT_FLOAT_EQ(
      static_cast<float>(*keys.at("deepseek2.rope.scaling.yarn_log_multiplier").as_double()), 0.1f);
  const HfConfig c = parse_hf_config(json, "config.json");
  const auto kv_b = gguf_stacked_names_for(gguf_arch_for("DeepseekV3ForCausalLM"), c,
                                           "model.layers.0.self_attn.kv_b_proj.weight");
  ASSERT_EQ(kv_b.size(), 2u);
  EXPECT_EQ(kv_b[0].first.name, "blk.0.attn_k_b.weight");
  EXPECT_EQ(kv_b[1].first.name, "blk.0.attn_v_b.weight");
  // A gating function llama.cpp's converter does not write is refused by name; so is mscale
  // outside DeepSeek's rows.
  EXPECT_NE(refusal(config("DeepseekV3ForCausalLM",
                           R"(, "n_routed_experts": 4, "kv_lora_rank": 32, "qk_rope_head_dim": 16,)"
                           R"( "qk_nope_head_dim": 16, "v_head_dim": 16, "scoring_func": "relu")"))
                .find("relu"),
            std::string::npos);
}

TEST(GgufArch, HostileCountsAndValuesAreRefused) {
  EXPECT_NE(refusal(config("Qwen3MoeForCausalLM", R"(, "num_local_experts": 0)"))
                .find("num_local_experts is not between 1 and 4096"),
            std::string::npos);
  EXPECT_NE(refusal(config("Qwen3MoeForCausalLM", R"(, "num_local_experts": 5000)")), "");
  // Within the per-layer cap, past the model's (each expert part is a tensor named up front).
  EXPECT_NE(refusal(R"({"architectures": ["Qwen3MoeForCausalLM"], "num_hidden_layers": 1000,)"
                    R"( "num_attention_heads": 4, "num_local_experts": 4096})"),
            "");
  EXPECT_NE(refusal(config("MixtralForCausalLM"))
                .find("num_local_experts"),  // no count: no stacks to make
            std::string::npos);
  EXPECT_NE(refusal(config("GraniteForCausalLM", R"(, "logits_scaling": 1e300)"))
                .find("logits_scaling is not a finite float32"),
            std::string::npos);
  EXPECT_NE(refusal(config("LlamaForCausalLM", R"(, "rope_parameters": {"rope_theta": "x"})")), "");
}

TEST(GgufArch, ImportFindsTheRowByNameAndExperts) {
  EXPECT_EQ(gguf_arch_named("llama", false).hf_class, "LlamaForCausalLM");
  EXPECT_EQ(gguf_arch_named("llama", true).hf_class, "MixtralForCausalLM");
  EXPECT_EQ(gguf_arch_named("qwen3moe", true).model_type, "qwen3_moe");
  // gpt-oss: its YaRN goes back untruncated, as its class computes it.
  EXPECT_EQ(gguf_arch_named("gpt-oss", true).model_type, "gpt_oss");
  EXPECT_FALSE(gguf_arch_named("gpt-oss", true).yarn_truncate);
  try {
    (void)gguf_arch_named("qwen3moe", false);
    ADD_FAILURE() << "a qwen3moe without experts was taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("qwen3moe is not imported"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("qwen3moe with experts"), std::string::npos);
  }
}

}  // namespace
}  // namespace tlio::detail

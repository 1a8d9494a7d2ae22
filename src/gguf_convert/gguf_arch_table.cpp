// gguf_convert/gguf_arch_table.cpp: the architecture table (one row per Hugging Face class) and
// the names and keys llama.cpp expects (llama-arch.cpp's tensor names, convert_hf_to_gguf.py's
// keys); gguf_arch.cpp reads it.
#include <array>

#include "gguf_convert/gguf_arch.hpp"

namespace tlio::detail {

namespace {

using Key = GgufConfigKey;
using KeyType = GgufConfigKey::Type;

// Keys the converter writes for any architecture whose config.json has them.
constexpr Key kCommonKeys[] = {
    {"expert_count", {"num_local_experts", "num_experts"}, KeyType::u32},
    {"expert_used_count", {"num_experts_per_tok", ""}, KeyType::u32},
};

constexpr GgufNamePair kMixtralNames[] = {{"block_sparse_moe.gate.weight", "ffn_gate_inp.weight"}};
constexpr GgufNamePair kQwen2MoeNames[] = {
    {"mlp.gate.weight", "ffn_gate_inp.weight"},
    {"mlp.shared_expert.gate_proj.weight", "ffn_gate_shexp.weight"},
    {"mlp.shared_expert.up_proj.weight", "ffn_up_shexp.weight"},
    {"mlp.shared_expert.down_proj.weight", "ffn_down_shexp.weight"},
    {"mlp.shared_expert_gate.weight", "ffn_gate_inp_shexp.weight"},
};
constexpr GgufNamePair kQwen3MoeNames[] = {{"mlp.gate.weight", "ffn_gate_inp.weight"}};
constexpr GgufNamePair kOlmo2Names[] = {
    {"post_attention_layernorm.weight", "post_attention_norm.weight"},
    {"post_feedforward_layernorm.weight", "post_ffw_norm.weight"},
};

constexpr GgufExperts kMixtralExperts{"block_sparse_moe.experts.",
                                      {{{"w1.weight", "ffn_gate_exps.weight"},
                                        {"w2.weight", "ffn_down_exps.weight"},
                                        {"w3.weight", "ffn_up_exps.weight"}}},
                                      {"num_local_experts", "num_experts"}};
constexpr std::array<GgufNamePair, 3> kQwenExpertParts = {
    {{"gate_proj.weight", "ffn_gate_exps.weight"},
     {"up_proj.weight", "ffn_up_exps.weight"},
     {"down_proj.weight", "ffn_down_exps.weight"}}};
constexpr GgufExperts kQwen2MoeExperts{
    "mlp.experts.", kQwenExpertParts, {"num_experts", "num_local_experts"}};
constexpr GgufExperts kQwen3MoeExperts{
    "mlp.experts.", kQwenExpertParts, {"num_local_experts", "num_experts"}};

constexpr Key kQwen2MoeKeys[] = {
    {"expert_feed_forward_length", {"moe_intermediate_size", ""}, KeyType::u32},
    {"expert_shared_feed_forward_length", {"shared_expert_intermediate_size", ""}, KeyType::u32},
};
constexpr Key kQwen3MoeKeys[] = {
    {"expert_feed_forward_length", {"moe_intermediate_size", ""}, KeyType::u32}};
constexpr Key kGemma2Keys[] = {
    {"attn_logit_softcapping", {"attn_logit_softcapping", ""}, KeyType::f32},
    {"final_logit_softcapping", {"final_logit_softcapping", ""}, KeyType::f32},
    {"attention.sliding_window", {"sliding_window", ""}, KeyType::u32},
};
constexpr Key kGemma3Keys[] = {
    {"final_logit_softcapping", {"final_logit_softcapping", ""}, KeyType::f32},
    {"attention.sliding_window", {"sliding_window", ""}, KeyType::u32},
};
constexpr GgufNamePair kGemmaNames[] = {
    {"post_attention_layernorm.weight", "post_attention_norm.weight"},
    {"pre_feedforward_layernorm.weight", "ffn_norm.weight"},
    {"post_feedforward_layernorm.weight", "post_ffw_norm.weight"},
};
constexpr Key kPhi3Keys[] = {
    {"rope.scaling.original_context_length",
     {"original_max_position_embeddings", ""},
     KeyType::u32},
    {"attention.sliding_window", {"sliding_window", ""}, KeyType::u32, true, true},
};
constexpr GgufNamePair kPhi3Names[] = {
    {"self_attn.qkv_proj.weight", "attn_qkv.weight"},
    {"mlp.gate_up_proj.weight", "ffn_up.weight"},
};
// DeepSeek-V2/V3 (llama.cpp's deepseek2): MLA's low-rank projections and norms, kv_b_proj split
// per head into k_b (transposed) and v_b as the converter splits it; a router with a score
// correction bias, shared experts, dense layers first.
constexpr GgufNamePair kDeepseek2Names[] = {
    {"self_attn.q_a_proj.weight", "attn_q_a.weight"},
    {"self_attn.q_a_layernorm.weight", "attn_q_a_norm.weight"},
    {"self_attn.q_b_proj.weight", "attn_q_b.weight"},
    {"self_attn.kv_a_proj_with_mqa.weight", "attn_kv_a_mqa.weight"},
    {"self_attn.kv_a_layernorm.weight", "attn_kv_a_norm.weight"},
    {"mlp.gate.weight", "ffn_gate_inp.weight"},
    {"mlp.gate.e_score_correction_bias", "exp_probs_b.bias"},
    {"mlp.shared_experts.gate_proj.weight", "ffn_gate_shexp.weight"},
    {"mlp.shared_experts.up_proj.weight", "ffn_up_shexp.weight"},
    {"mlp.shared_experts.down_proj.weight", "ffn_down_shexp.weight"},
};
constexpr GgufStackedPart kDeepseek2Split[] = {
    {"self_attn.kv_b_proj.weight", "attn_k_b.weight", 1, 0, true,
     GgufStackedPart::HeadRows::mla_nope},
    {"self_attn.kv_b_proj.weight", "attn_v_b.weight", 1, 0, false,
     GgufStackedPart::HeadRows::mla_value},
};
constexpr GgufExperts kDeepseek2Experts{"mlp.experts.", kQwenExpertParts, {"n_routed_experts", ""}};
constexpr Key kDeepseek2Keys[] = {
    {"leading_dense_block_count", {"first_k_dense_replace", ""}, KeyType::u32, true},
    {"vocab_size", {"vocab_size", ""}, KeyType::u32},
    {"attention.q_lora_rank", {"q_lora_rank", ""}, KeyType::u32},
    {"attention.kv_lora_rank", {"kv_lora_rank", ""}, KeyType::u32},
    {"expert_feed_forward_length", {"moe_intermediate_size", ""}, KeyType::u32},
    {"expert_shared_count", {"n_shared_experts", ""}, KeyType::u32, true},
    {"expert_weights_scale", {"routed_scaling_factor", ""}, KeyType::f32},
    {"expert_weights_norm", {"norm_topk_prob", ""}, KeyType::bool_true},
    {"expert_group_count", {"n_group", ""}, KeyType::u32},
    {"expert_group_used_count", {"topk_group", ""}, KeyType::u32},
    {"expert_gating_func", {"scoring_func", ""}, KeyType::gating},
    {"rope.dimension_count", {"qk_rope_head_dim", ""}, KeyType::u32},
};

// gpt-oss: experts held stacked [experts, in, out], gate and up interleaved in one; biases,
// attention sinks and a router with a bias.
constexpr GgufStackedPart kGptOssStacked[] = {
    {"mlp.experts.gate_up_proj", "ffn_gate_exps.weight", 2, 0, true},
    {"mlp.experts.gate_up_proj", "ffn_up_exps.weight", 2, 1, true},
    {"mlp.experts.down_proj", "ffn_down_exps.weight", 1, 0, true},
    {"mlp.experts.gate_up_proj_bias", "ffn_gate_exps.bias", 2, 0},
    {"mlp.experts.gate_up_proj_bias", "ffn_up_exps.bias", 2, 1},
    {"mlp.experts.down_proj_bias", "ffn_down_exps.bias"},
};
constexpr GgufExperts kGptOssExperts{
    "mlp.experts.", {}, {"num_local_experts", "num_experts"}, kGptOssStacked};
constexpr GgufNamePair kGptOssNames[] = {
    {"self_attn.o_proj.bias", "attn_output.bias"},
    {"self_attn.sinks", "attn_sinks.weight"},
    {"mlp.router.weight", "ffn_gate_inp.weight"},
    {"mlp.router.bias", "ffn_gate_inp.bias"},
    {"post_attention_layernorm.weight", "post_attention_norm.weight"},
};
constexpr Key kGptOssKeys[] = {
    {"attention.sliding_window", {"sliding_window", ""}, KeyType::u32},
    {"expert_feed_forward_length", {"intermediate_size", ""}, KeyType::u32},
};
constexpr Key kGraniteKeys[] = {
    {"attention.scale", {"attention_multiplier", ""}, KeyType::f32},
    {"embedding_scale", {"embedding_multiplier", ""}, KeyType::f32},
    {"residual_scale", {"residual_multiplier", ""}, KeyType::f32},
    {"logit_scale", {"logits_scaling", ""}, KeyType::f32},
};

using S70 = GgufArch::Size70B;
using HD = GgufArch::HeadDimKeys;
// clang-format off
const GgufArch kArchs[] = {
    {.hf_class = "LlamaForCausalLM", .name = "llama", .permute_qk = true,
     .size_70b = S70::at_80_layers_with_gqa, .llama_keys = true, .head_dim_keys = HD::always,
     .model_type = "llama"},
    {.hf_class = "MistralForCausalLM", .name = "llama", .permute_qk = true,
     .size_70b = S70::at_80_layers_with_gqa, .llama_keys = true, .head_dim_keys = HD::always,
     .model_type = "mistral"},
    {.hf_class = "MixtralForCausalLM", .name = "llama", .permute_qk = true,
     .size_70b = S70::at_80_layers_with_gqa, .llama_keys = true,
     .head_dim_keys = HD::when_in_config, .layer_names = kMixtralNames,
     .experts = kMixtralExperts, .model_type = "mixtral"},
    {.hf_class = "Qwen2ForCausalLM", .name = "qwen2", .permute_qk = false,
     .size_70b = S70::at_80_layers, .llama_keys = false, .head_dim_keys = HD::when_in_config,
     .model_type = "qwen2"},
    // llama.cpp's qwen2moe weighs the chosen experts by their softmax as they are.
    {.hf_class = "Qwen2MoeForCausalLM", .name = "qwen2moe", .permute_qk = false,
     .size_70b = S70::never, .llama_keys = false, .head_dim_keys = HD::when_in_config,
     .layer_names = kQwen2MoeNames, .experts = kQwen2MoeExperts, .keys = kQwen2MoeKeys,
     .model_type = "qwen2_moe", .import_config = R"("norm_topk_prob": false)"},
    {.hf_class = "Qwen3ForCausalLM", .name = "qwen3", .permute_qk = false,
     .size_70b = S70::never, .llama_keys = false, .head_dim_keys = HD::always,
     .model_type = "qwen3"},
    // llama.cpp's qwen3moe normalizes the chosen experts' weights to sum to 1.
    {.hf_class = "Qwen3MoeForCausalLM", .name = "qwen3moe", .permute_qk = false,
     .size_70b = S70::never, .llama_keys = false, .head_dim_keys = HD::always,
     .layer_names = kQwen3MoeNames, .experts = kQwen3MoeExperts, .keys = kQwen3MoeKeys,
     .model_type = "qwen3_moe", .import_config = R"("norm_topk_prob": true)"},
    {.hf_class = "Olmo2ForCausalLM", .name = "olmo2", .permute_qk = false,
     .size_70b = S70::never, .llama_keys = false, .head_dim_keys = HD::when_in_config,
     .layer_names = kOlmo2Names, .model_type = "olmo2"},
    {.hf_class = "GraniteForCausalLM", .name = "granite", .permute_qk = true,
     .size_70b = S70::never, .llama_keys = true, .head_dim_keys = HD::when_in_config,
     .keys = kGraniteKeys, .model_type = "granite"},
    // Phi-3: q/k/v and gate/up fused as they are stored.
    {.hf_class = "Phi3ForCausalLM", .name = "phi3", .permute_qk = false, .size_70b = S70::never,
     .llama_keys = false, .head_dim_keys = HD::never, .rope_dimension_key = true,
     .layer_names = kPhi3Names, .keys = kPhi3Keys, .model_type = "phi3", .longrope = true},
    // Gemma: norms written as 1 + w (and back); the attention scale llama.cpp takes from the
    // model's size goes back as config.json's query_pre_attn_scalar.
    {.hf_class = "Gemma2ForCausalLM", .name = "gemma2", .permute_qk = false,
     .size_70b = S70::never, .llama_keys = false, .head_dim_keys = HD::always,
     .layer_names = kGemmaNames, .keys = kGemma2Keys, .rope_base_key = false,
     .norm_plus_one = true, .no_space_prefix = true, .model_type = "gemma2",
     .hidden_act = "gelu_pytorch_tanh", .layers_27b = 46},
    {.hf_class = "Gemma3ForCausalLM", .name = "gemma3", .permute_qk = false,
     .size_70b = S70::never, .llama_keys = false, .head_dim_keys = HD::always,
     .layer_names = kGemmaNames, .keys = kGemma3Keys, .norm_plus_one = true,
     .no_space_prefix = true, .model_type = "gemma3_text", .hidden_act = "gelu_pytorch_tanh",
     .layers_27b = 62},
    // gpt-oss: llama.cpp's openai-moe; MXFP4 experts copied as they are, both ways. Its
    // sliding and full layers alternate, the first sliding, in llama.cpp and transformers alike.
    {.hf_class = "GptOssForCausalLM", .name = "gpt-oss", .permute_qk = false,
     .size_70b = S70::never, .llama_keys = false, .head_dim_keys = HD::always,
     .layer_names = kGptOssNames, .experts = kGptOssExperts, .keys = kGptOssKeys,
     .model_type = "gpt_oss", .yarn_truncate = false},
    // DeepSeek-V2 and V3: one GGUF architecture; V3 (its sigmoid router's score correction bias)
    // imported as V3.
    {.hf_class = "DeepseekV2ForCausalLM", .name = "deepseek2", .permute_qk = false,
     .size_70b = S70::never, .llama_keys = false, .head_dim_keys = HD::never,
     .layer_names = kDeepseek2Names, .experts = kDeepseek2Experts, .keys = kDeepseek2Keys,
     .model_type = "deepseek_v2", .split = kDeepseek2Split, .mla = true},
    {.hf_class = "DeepseekV3ForCausalLM", .name = "deepseek2", .permute_qk = false,
     .size_70b = S70::never, .llama_keys = false, .head_dim_keys = HD::never,
     .layer_names = kDeepseek2Names, .experts = kDeepseek2Experts, .keys = kDeepseek2Keys,
     .model_type = "deepseek_v3", .imported_when = "exp_probs_b.bias", .split = kDeepseek2Split,
     .mla = true},
};
// clang-format on

// Per-layer tensors: the part after "model.layers.N." and the part after "blk.N.".
constexpr GgufNamePair kLayerNames[] = {
    {"input_layernorm.weight", "attn_norm.weight"},
    {"self_attn.q_proj.weight", "attn_q.weight"},
    {"self_attn.q_proj.bias", "attn_q.bias"},
    {"self_attn.k_proj.weight", "attn_k.weight"},
    {"self_attn.k_proj.bias", "attn_k.bias"},
    {"self_attn.v_proj.weight", "attn_v.weight"},
    {"self_attn.v_proj.bias", "attn_v.bias"},
    {"self_attn.o_proj.weight", "attn_output.weight"},
    {"self_attn.q_norm.weight", "attn_q_norm.weight"},
    {"self_attn.k_norm.weight", "attn_k_norm.weight"},
    {"post_attention_layernorm.weight", "ffn_norm.weight"},
    {"mlp.gate_proj.weight", "ffn_gate.weight"},
    {"mlp.up_proj.weight", "ffn_up.weight"},
    {"mlp.down_proj.weight", "ffn_down.weight"},
};
constexpr GgufNamePair kModelNames[] = {
    {"model.embed_tokens.weight", "token_embd.weight"},
    {"model.norm.weight", "output_norm.weight"},
    {"lm_head.weight", "output.weight"},
};

}  // namespace

std::span<const GgufArch> gguf_archs() { return kArchs; }
std::span<const GgufNamePair> gguf_layer_names() { return kLayerNames; }
std::span<const GgufNamePair> gguf_model_names() { return kModelNames; }
std::span<const GgufConfigKey> gguf_common_keys() { return kCommonKeys; }

}  // namespace tlio::detail

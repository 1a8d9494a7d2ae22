// Tests for quant/tensor_selection: quantize's default selection of linear layers' weights, and
// tie records ({alias: tensor} metadata) following a selection.
#include "quant/tensor_selection.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tlio/writer.hpp"

namespace tlio::detail {
namespace {

// quantize's default selection, on the names real models give their layers.
TEST(DefaultSelection, TakesEveryLinearWeightButEmbeddingsAndHeads) {
  auto linear = [](std::string name, std::vector<uint64_t> shape = {8, 8}) {
    TensorInfo t;
    t.name = std::move(name);
    t.dtype = Dtype::F16;
    t.shape = Shape(shape);
    return is_linear_weight(t);
  };
  for (const char* name :
       {"model.layers.0.self_attn.q_proj.weight", "transformer.h.0.attn.c_attn.weight",
        "gpt_neox.layers.0.attention.query_key_value.weight",
        "model.layers.0.block_sparse_moe.experts.3.w1.weight", "model.layers.0.mlp.fc1.weight",
        "0.weight", "weight", "encoder.block.0.layer.0.SelfAttention.q.weight"})
    EXPECT_TRUE(linear(name)) << name;
  for (const char* name :
       {"model.embed_tokens.weight", "transformer.wte.weight", "transformer.wpe.weight",
        "gpt_neox.embed_in.weight", "embed_out.weight", "shared.weight", "lm_head.weight",
        "output.weight", "score.weight", "classifier.weight",
        "bert.embeddings.word_embeddings.weight", "model.layers.0.mlp.fc1.bias",
        "model.layers.0.mlp.fc1.weight_scale", "model.layers.0.self_attn.q_proj.qweight"})
    EXPECT_FALSE(linear(name)) << name;
  EXPECT_FALSE(linear("model.norm.weight", {8}));                                // 1-D
  EXPECT_FALSE(linear("model.vision.patch_embed.proj.weight", {8, 3, 14, 14}));  // a convolution
  EXPECT_TRUE(linear("model.layers.0.output.dense.weight"));  // BERT's: not the head
}

}  // namespace
}  // namespace tlio::detail

namespace tlio::detail {
namespace {

// A tied pair as save_model writes it: emb.weight stored, head.weight recorded as its alias.
File tied_file() {
  static const std::vector<float> w(12, 0.5f);
  static const std::vector<float> b(4, 1.0f);
  const std::vector<TensorData> tensors{
      {"emb.weight", Dtype::F32, {4, 3}, std::as_bytes(std::span(w))},
      {"head.bias", Dtype::F32, {4}, std::as_bytes(std::span(b))}};
  return File::from_bytes(
      serialize(tensors, Metadata{{"head.weight", "emb.weight"}, {"format", "pt"}}), "tied");
}

TEST(TieRecords, FollowRenames) {
  TensorSelection s;
  s.rename = {{"^emb\\.", "embed."}, {"^head\\.", "lm_head."}};
  const File f = tied_file();  // the plan points into it
  const SelectionPlan plan = plan_selection(f, s);
  EXPECT_EQ(plan.metadata, (Metadata{{"lm_head.weight", "embed.weight"}, {"format", "pt"}}));
  EXPECT_EQ(plan.ties_removed + plan.ties_repointed, 0u);
}

TEST(TieRecords, GoWithADroppedAlias) {
  TensorSelection s;
  s.drop = {"^head\\."};
  const File f = tied_file();  // the plan points into it
  const SelectionPlan plan = plan_selection(f, s);
  EXPECT_EQ(plan.metadata, (Metadata{{"format", "pt"}}));
  EXPECT_EQ(plan.ties_removed, 1u);
  ASSERT_EQ(plan.tensors.size(), 1u);
  EXPECT_EQ(plan.tensors[0].name, "emb.weight");
}

TEST(TieRecords, ADroppedTensorIsWrittenUnderItsKeptAlias) {
  TensorSelection s;
  s.drop = {"^emb\\."};
  const File f = tied_file();  // the plan points into it
  const SelectionPlan plan = plan_selection(f, s);
  EXPECT_EQ(plan.metadata, (Metadata{{"format", "pt"}}));
  EXPECT_EQ(plan.ties_repointed, 1u);
  ASSERT_EQ(plan.tensors.size(), 2u);
  EXPECT_EQ(plan.tensors[0].source->name, "emb.weight");
  EXPECT_EQ(plan.tensors[0].name, "head.weight");
}

}  // namespace
}  // namespace tlio::detail

// Tests for any folder of weights (folder_contents, check_folder_item): model directories,
// shard indexes with their shards, lone files, config.json of other libraries, hidden folders.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_util.hpp"
#include "tlio/error.hpp"
#include "tlio/model.hpp"
#include "tlio/writer.hpp"

namespace tlio {
namespace {

namespace fs = std::filesystem;

void write_text(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  test::write_bytes(p, test::to_bytes(text));
}

void write_weights(const fs::path& p) {
  fs::create_directories(p.parent_path());
  const std::vector<float> w(64, 0.5f);
  save_file(
      p, std::vector<TensorData>{{"layers.0.w", Dtype::F32, {8, 8}, std::as_bytes(std::span(w))},
                                 {"layers.1.w", Dtype::F32, {8, 8}, std::as_bytes(std::span(w))}});
}

std::vector<std::string> described(const std::vector<FolderItem>& items) {
  std::vector<std::string> out;
  for (const FolderItem& i : items) {
    const char* kind = i.kind == FolderItem::Kind::model   ? "model"
                       : i.kind == FolderItem::Kind::index ? "index"
                                                           : "file";
    std::string files;
    for (const std::string& f : i.files) files += " " + f;
    out.push_back(std::string(kind) + " " + i.path + ":" + files);
  }
  return out;
}

TEST(Folder, EveryKindOfFolderIsSeenWhole) {
  test::TempDir dir;
  const fs::path root = dir.path();
  // A transformers model directory, sharded, in a subfolder.
  fs::copy(test::data_dir() / "models" / "sharded", root / "llm");
  // A PEFT adapter: its config is not a model's.
  write_text(root / "adapter" / "adapter_config.json", R"({"peft_type": "LORA", "r": 8})");
  write_weights(root / "adapter" / "adapter_model.safetensors");
  // A diffusers pipeline: components with _class_name configs, one of them sharded by tlio.
  write_text(root / "pipe" / "model_index.json", R"({"_class_name": "StableDiffusionPipeline"})");
  write_text(root / "pipe" / "unet" / "config.json", R"({"_class_name": "UNet2DConditionModel"})");
  write_weights(root / "pipe" / "unet" / "diffusion_pytorch_model.safetensors");
  write_text(root / "pipe" / "vae" / "config.json", R"({"_class_name": "AutoencoderKL"})");
  write_weights(root / "src.safetensors");
  shard_file(File::open(root / "src.safetensors"), root / "pipe" / "vae", 300);
  // Plain files, and what hidden folders hold (never looked at).
  write_weights(root / "plain" / "b10.safetensors");
  write_weights(root / "plain" / "b2.safetensors");
  write_weights(root / ".cache" / "x.safetensors");
  write_text(root / "plain" / ".b3.safetensors.tlio-tmp-1-2-abc", "partial");

  const std::vector<FolderItem> items = folder_contents(root);
  EXPECT_EQ(
      described(items),
      (std::vector<std::string>{
          "file adapter/adapter_model.safetensors: adapter/adapter_model.safetensors",
          "model llm: llm/model-00001-of-00004.safetensors llm/model-00002-of-00004.safetensors "
          "llm/model-00003-of-00004.safetensors llm/model-00004-of-00004.safetensors",
          "file pipe/unet/diffusion_pytorch_model.safetensors: pipe/unet/diffusion_pytorch_model.safetensors",
          "index pipe/vae/model.safetensors.index.json: pipe/vae/model-00001-of-00002.safetensors "
          "pipe/vae/model-00002-of-00002.safetensors",
          "file plain/b2.safetensors: plain/b2.safetensors",
          "file plain/b10.safetensors: plain/b10.safetensors",
          "file src.safetensors: src.safetensors"}));
  for (const FolderItem& item : items) EXPECT_NO_THROW(check_folder_item(root, item)) << item.path;
  // The folder a model directory is, alone: one item, the folder itself.
  const std::vector<FolderItem> llm = folder_contents(root / "llm");
  ASSERT_EQ(llm.size(), 1u);
  EXPECT_EQ(llm[0].kind, FolderItem::Kind::model);
  EXPECT_EQ(llm[0].path, "");
}

TEST(Folder, ProblemsAreTheItemsOwn) {
  test::TempDir dir;
  const fs::path root = dir.path();
  write_weights(root / "src.safetensors");
  shard_file(File::open(root / "src.safetensors"), root / "sharded", 300);
  fs::remove(root / "sharded" / "model-00002-of-00002.safetensors");
  write_text(root / "bad.safetensors", "not a safetensors file at all");
  const std::vector<FolderItem> items = folder_contents(root);
  ASSERT_EQ(items.size(), 3u);
  EXPECT_THROW(check_folder_item(root, items[0]), Error);  // bad.safetensors
  EXPECT_THROW(check_folder_item(root, items[1]), Error);  // the index misses a shard
  EXPECT_NO_THROW(check_folder_item(root, items[2]));      // src.safetensors
  // A config.json of a model that is broken is reported as that model's problem.
  write_text(root / "m" / "config.json", "{\"model_type\": ");
  write_weights(root / "m" / "model.safetensors");
  const std::vector<FolderItem> with_model = folder_contents(root);
  const auto m = std::find_if(with_model.begin(), with_model.end(),
                              [](const FolderItem& i) { return i.path == "m"; });
  ASSERT_NE(m, with_model.end());
  EXPECT_EQ(m->kind, FolderItem::Kind::model);
  EXPECT_THROW(check_folder_item(root, *m), Error);
  EXPECT_THROW(folder_contents(root / "src.safetensors"), Error);  // not a directory
}

}  // namespace
}  // namespace tlio

// Tests for model/folder_rewrite and the folder rewrites of tlio/folder_rewrite.hpp: a sharded
// folder in, a folder out with the same shards, a new index, config.json edited, the other files
// carried over; a failure publishes nothing; quantized weights whose parts a sharder split;
// outputs re-sharded by a size, each module whole, the data written once.
#include "tlio/folder_rewrite.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "model/folder_rewrite.hpp"
#include "test_util.hpp"
#include "tlio/error.hpp"
#include "tlio/model.hpp"
#include "tlio/writer.hpp"

namespace tlio {
namespace {

namespace fs = std::filesystem;

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_text(const fs::path& p, const std::string& text) {
  test::write_bytes(p, test::to_bytes(text));
}

std::vector<std::string> listing(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// Six F32 tensors (4 projections, an embedding, a norm) sharded in 3 files, with config.json and
// tokenizer.json: the layout transformers saves ({"format": "pt"} too).
void write_model(const fs::path& dir) {
  std::vector<std::vector<float>> data;
  std::vector<TensorData> tensors;
  auto add = [&](std::string name, std::vector<uint64_t> shape) {
    uint64_t n = 1;
    for (uint64_t d : shape) n *= d;
    std::vector<float> v(n);
    for (uint64_t i = 0; i < n; ++i)
      v[i] = static_cast<float>((i * 7919 + data.size() * 31) % 1000) / 250.0f - 2.0f;
    data.push_back(std::move(v));
    tensors.push_back(
        {std::move(name), Dtype::F32, Shape(shape), std::as_bytes(std::span(data.back()))});
  };
  for (int i = 0; i < 4; ++i)
    add("model.layers." + std::to_string(i) + ".mlp.up_proj.weight", {64, 64});
  add("model.embed_tokens.weight", {100, 64});
  add("model.norm.weight", {64});
  const test::TempDir tmp;
  save_file(tmp / "one.safetensors", tensors, {{"format", "pt"}});
  shard_file(File::open(tmp / "one.safetensors"), dir, 40000);
  write_text(dir / "config.json",
             "{\n  \"model_type\": \"mistral\",\n  \"torch_dtype\": \"float32\",\n"
             "  \"quantization_config\": {\"quant_method\": \"x\"},\n  \"vocab_size\": 100\n}\n");
  write_text(dir / "tokenizer.json", "{\"model\": {}}");
}

TEST(FolderRewrite, ConvertKeepsShardsWritesIndexAndCarriesFiles) {
  const test::TempDir tmp;
  write_model(tmp / "src");
  ConvertFileOptions o;
  o.dtype = Dtype::BF16;
  FolderFiles files;
  FolderOptions folder;
  folder.files = &files;
  const ConvertFileReport r =
      convert_folder((tmp / "src").string(), (tmp / "out").string(), o, folder);
  EXPECT_EQ(r.converted, 6u);
  EXPECT_EQ(files,
            (FolderFiles{"model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors",
                         "model-00003-of-00003.safetensors", "model.safetensors.index.json",
                         "config.json", "tokenizer.json"}));
  EXPECT_EQ(listing(tmp / "out"), listing(tmp / "src"));
  EXPECT_EQ(read_text(tmp / "out/tokenizer.json"), read_text(tmp / "src/tokenizer.json"));
  // Only the dtype changed in config.json, the rest byte for byte.
  std::string config = read_text(tmp / "src/config.json");
  config.replace(config.find("float32"), 7, "bfloat16");
  EXPECT_EQ(read_text(tmp / "out/config.json"), config);
  // Each shard as convert_file makes it; the index checked against them when the folder opens.
  for (int i = 1; i <= 3; ++i) {
    const std::string name = "model-0000" + std::to_string(i) + "-of-00003.safetensors";
    convert_file(File::open(tmp / "src" / name), tmp / "expected.safetensors", o);
    EXPECT_EQ(test::read_bytes(tmp / "out" / name), test::read_bytes(tmp / "expected.safetensors"))
        << name;
  }
  const Model m = Model::open(tmp / "out");
  EXPECT_EQ(m.tensor_names().size(), 6u);
  EXPECT_NE(read_text(tmp / "out/model.safetensors.index.json").find("\"total_size\": 45696"),
            std::string::npos);
}

TEST(FolderRewrite, ReplacesAnOutputFolderWhole) {
  const test::TempDir tmp;
  write_model(tmp / "src");
  // The output holds a previous model of 4 shards and a file of its own.
  fs::create_directories(tmp / "out");
  merge_shards(tmp / "src", tmp / "one.safetensors");
  const ShardReport previous = shard_file(File::open(tmp / "one.safetensors"), tmp / "out", 20000);
  ASSERT_EQ(previous.files.size(), 6u);  // 5 shards and their index
  write_text(tmp / "out/notes.txt", "mine");
  copy_folder((tmp / "src").string(), (tmp / "out").string(), {});
  EXPECT_EQ(listing(tmp / "out"),
            (std::vector<std::string>{
                "config.json", "model-00001-of-00003.safetensors",
                "model-00002-of-00003.safetensors", "model-00003-of-00003.safetensors",
                "model.safetensors.index.json", "notes.txt", "tokenizer.json"}));
  // In place: the folder is its own output.
  TensorSelection drop_norm;
  drop_norm.drop = {"norm"};
  const ConvertFileReport r =
      copy_folder((tmp / "out").string(), (tmp / "out").string(), drop_norm);
  EXPECT_EQ(r.dropped, 1u);
  EXPECT_EQ(Model::open(tmp / "out").tensor_names().size(), 5u);
}

TEST(FolderRewrite, AFailurePublishesNothing) {
  const test::TempDir tmp;
  write_model(tmp / "src");
  TensorSelection none;
  none.keep = {"^nothing$"};
  EXPECT_THROW(copy_folder((tmp / "src").string(), (tmp / "out").string(), none), Error);
  EXPECT_TRUE(!fs::exists(tmp / "out") || fs::is_empty(tmp / "out"));
  QuantizeOptions q;
  q.scheme = QuantScheme::parse("nf4");
  q.include = "^nothing$";
  EXPECT_THROW(quantize_folder((tmp / "src").string(), (tmp / "src").string(), q), Error);
  EXPECT_EQ(listing(tmp / "src").size(), 6u);  // the source, its own output, unchanged
  EXPECT_EQ(Model::open(tmp / "src").quantized().size(), 0u);
}

// A sharder may put a quantized weight's parts in different files: dequantize restores it whole,
// as dequantize_file does from the unsharded file.
TEST(FolderRewrite, DequantizesWeightsSplitAcrossShards) {
  const test::TempDir tmp;
  write_model(tmp / "src");
  QuantizeOptions q;
  q.scheme = QuantScheme::parse("nf4");
  q.scheme.set_option("nested", "true");
  const QuantizeReport qr = quantize_folder((tmp / "src").string(), (tmp / "q").string(), q);
  EXPECT_EQ(
      std::count_if(qr.items.begin(), qr.items.end(), [](const auto& i) { return i.quantized; }),
      4);
  // transformers' BitsAndBytesConfig replaces the source's, naming the modules left plain.
  const std::string config = read_text(tmp / "q/config.json");
  for (const char* member :
       {R"("quant_method": "bitsandbytes")", R"("load_in_4bit": true)",
        R"("bnb_4bit_use_double_quant": true)", R"("bnb_4bit_compute_dtype": "float32")",
        R"("llm_int8_skip_modules": ["model.embed_tokens", "model.norm", "lm_head"])"})
    EXPECT_NE(config.find(member), std::string::npos) << member << " in " << config;
  // Merged, then sharded in the canonical order (by dtype): a weight's parts split.
  merge_shards(tmp / "q", tmp / "merged.safetensors");
  shard_file(File::open(tmp / "merged.safetensors"), tmp / "split", 9000);
  write_text(tmp / "split/config.json", read_text(tmp / "src/config.json"));
  size_t split_weights = 0;
  const Model split = Model::open(tmp / "split");
  for (const QuantizedWeight& w : split.quantized())
    split_weights += split.find(w.stored.front())->file != split.find(w.stored.back())->file;
  ASSERT_GE(split_weights, 1u);
  dequantize_file(File::open(tmp / "merged.safetensors"), tmp / "expected.safetensors",
                  Dtype::BF16);
  const DequantizeReport r =
      dequantize_folder((tmp / "split").string(), (tmp / "dq").string(), Dtype::BF16);
  EXPECT_EQ(r.restored, 4u);
  const File expected = File::open(tmp / "expected.safetensors");
  const Model m = Model::open(tmp / "dq");
  ASSERT_EQ(m.tensor_names().size(), expected.tensors().size());
  for (const TensorInfo& t : expected.tensors()) {
    const TensorView v = m.view(t.name);
    ASSERT_EQ(v.info().dtype, t.dtype) << t.name;
    const auto want = expected.view(t.name).bytes();
    EXPECT_TRUE(std::equal(v.bytes().begin(), v.bytes().end(), want.begin(), want.end())) << t.name;
  }
  // config.json: quantization_config gone, the dtype asked for.
  EXPECT_EQ(
      read_text(tmp / "dq/config.json"),
      "{\n  \"model_type\": \"mistral\",\n  \"torch_dtype\": \"bfloat16\",\n  \"vocab_size\": 100\n}\n");
}

TEST(FolderRewrite, ModuleOfATensor) {
  EXPECT_EQ(detail::module_of("model.layers.0.mlp.down_proj.weight"),
            "model.layers.0.mlp.down_proj");
  EXPECT_EQ(detail::module_of("model.layers.0.mlp.down_proj.weight.absmax"),
            "model.layers.0.mlp.down_proj");
  EXPECT_EQ(detail::module_of("m.q.weight.quant_state.bitsandbytes__nf4"), "m.q");
  EXPECT_EQ(detail::module_of("m.q.weight_format"), "m.q");
  EXPECT_EQ(detail::module_of("m.q.SCB"), "m.q");
  EXPECT_EQ(detail::module_of("m.q.bias"), "m.q");
  EXPECT_EQ(detail::module_of("m.weight_norm.layers.0.weight"), "m.weight_norm.layers.0");
  EXPECT_EQ(detail::module_of("lm_head.weight"), "lm_head");
  EXPECT_EQ(detail::module_of("scale"), "scale");
}

// --max-size: the same tensors, bytes and config as without it, in new shards of at most that
// size with every module whole; one shard is model.safetensors with no index; counted once.
TEST(FolderRewrite, ReshardsByMaxSizeKeepingModulesWhole) {
  const test::TempDir tmp;
  write_model(tmp / "src");
  QuantizeOptions q;
  q.scheme = QuantScheme::parse("nf4");
  q.scheme.set_option("nested", "true");
  quantize_folder((tmp / "src").string(), (tmp / "q").string(), q);
  FolderFiles files;
  FolderOptions folder;
  folder.max_shard_size = 4000;
  folder.files = &files;
  const QuantizeReport r =
      quantize_folder((tmp / "src").string(), (tmp / "resharded").string(), q, folder);
  EXPECT_EQ(
      std::count_if(r.items.begin(), r.items.end(), [](const auto& i) { return i.quantized; }), 4);
  EXPECT_EQ(r.kept.size(), 1u);  // the embedding and the norm, listed once
  const Model expected = Model::open(tmp / "q"), got = Model::open(tmp / "resharded");
  ASSERT_EQ(got.tensor_names(), expected.tensor_names());
  for (std::string_view name : expected.tensor_names()) {
    const auto a = expected.view(name).bytes(), b = got.view(name).bytes();
    EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin(), b.end())) << name;
  }
  ASSERT_EQ(got.quantized().size(), 4u);
  for (const QuantizedWeight& w : got.quantized())
    for (const std::string& part : w.stored)
      EXPECT_EQ(got.find(part)->file, got.find(w.stored.front())->file) << part;
  size_t shards = 0;
  for (const std::string& f : files) {
    if (!f.starts_with("model-")) continue;
    ++shards;
    const File shard = File::open(tmp / "resharded" / f);
    std::set<std::string_view> modules;
    for (const TensorInfo& t : shard.tensors()) modules.insert(detail::module_of(t.name));
    EXPECT_TRUE(shard.header().data_size() <= 4000u || modules.size() == 1)
        << f;  // a module over 4000 alone
  }
  EXPECT_GE(shards, 5u);
  EXPECT_EQ(files.back(), "tokenizer.json");
  EXPECT_EQ(read_text(tmp / "resharded/config.json"), read_text(tmp / "q/config.json"));

  // Into one file, over the folder itself: its old shards and index go.
  ConvertFileOptions o;
  o.dtype = Dtype::F32;
  folder.max_shard_size = uint64_t{1} << 30;
  const DequantizeReport d = dequantize_folder(
      (tmp / "resharded").string(), (tmp / "resharded").string(), Dtype::F32, {}, folder);
  EXPECT_EQ(d.restored, 4u);
  EXPECT_EQ(listing(tmp / "resharded"),
            (std::vector<std::string>{"config.json", "model.safetensors", "tokenizer.json"}));
  const ConvertFileReport c =
      convert_folder((tmp / "src").string(), (tmp / "one").string(), o, folder);
  EXPECT_EQ(c.kept, 6u);  // counted once, not once per pass
  EXPECT_EQ(test::read_bytes(tmp / "one/model.safetensors"),
            (merge_shards(tmp / "src", tmp / "merged.safetensors"),
             test::read_bytes(tmp / "merged.safetensors")));
  // And back into shards over itself: the old model.safetensors goes (transformers would read
  // it before the index).
  folder.max_shard_size = 20000;
  convert_folder((tmp / "one").string(), (tmp / "one").string(), o, folder);
  EXPECT_FALSE(fs::exists(tmp / "one/model.safetensors"));
  EXPECT_TRUE(fs::exists(tmp / "one/model.safetensors.index.json"));
  EXPECT_EQ(Model::open(tmp / "one").tensor_names().size(), 6u);
  // A selection that leaves nothing is the whole folder's error, re-sharded or not.
  ConvertFileOptions drop_all = o;
  drop_all.tensors.drop = {"."};
  EXPECT_THROW(convert_folder((tmp / "src").string(), (tmp / "none").string(), drop_all, folder),
               Error);
  EXPECT_FALSE(fs::exists(tmp / "none/model.safetensors"));
}

}  // namespace
}  // namespace tlio

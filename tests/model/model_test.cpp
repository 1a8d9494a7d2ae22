// Tests for tlio/model.hpp: model directories, architecture checks, shards, the bigram tracer.
#include "tlio/model.hpp"

#include <fmt/core.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>

#include "test_util.hpp"
#include "tlio/bigram.hpp"
#include "tlio/error.hpp"
#include "tlio/file.hpp"
#include "tlio/interrupt.hpp"
#include "tlio/quant.hpp"
#include "tlio/writer.hpp"

namespace tlio {
namespace {

void write_text(const std::filesystem::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

std::string read_text(const std::filesystem::path& p) {
  auto b = test::read_bytes(p);
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

// Expects Model::open(dir).check() to fail with `rule` naming `tensor`.
void expect_rejected(const std::filesystem::path& dir, const std::string& rule,
                     const std::string& tensor) {
  try {
    Model::open(dir).check();
    ADD_FAILURE() << "accepted " << dir;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::format) << e.what();
    EXPECT_EQ(e.rule_name(), rule) << e.what();
    EXPECT_EQ(e.tensor(), tensor) << e.what();
  }
}

using TensorList = std::vector<std::pair<std::string, Shape>>;

void write_weights(const std::filesystem::path& file, const TensorList& list,
                   const Metadata& meta) {
  std::vector<std::vector<float>> data;
  data.reserve(list.size());
  std::vector<TensorData> td;
  for (const auto& [name, shape] : list) {
    data.emplace_back(*tensor_bytes(Dtype::F32, shape) / 4, 0.01f);
    td.push_back({name, Dtype::F32, shape, std::as_bytes(std::span(data.back()))});
  }
  save_file(file, td, meta);
}

// ---- llama ------------------------------------------------------------------------------------

struct Llama {
  uint64_t vocab = 32, hidden = 16, inter = 24, layers = 2, heads = 4, kv = 2;
  bool tie = false;
  std::string extra_config;

  std::string config() const {
    return fmt::format(
        "{{\"model_type\": \"llama\", \"vocab_size\": {}, \"hidden_size\": {}, "
        "\"intermediate_size\": {}, \"num_hidden_layers\": {}, \"num_attention_heads\": {}, "
        "\"num_key_value_heads\": {}, \"tie_word_embeddings\": {}{}}}",
        vocab, hidden, inter, layers, heads, kv, tie ? "true" : "false", extra_config);
  }
  TensorList tensors(uint64_t hd) const {
    TensorList t = {{"model.embed_tokens.weight", {vocab, hidden}},
                    {"model.norm.weight", {hidden}}};
    if (!tie) t.push_back({"lm_head.weight", {vocab, hidden}});
    for (uint64_t i = 0; i < layers; ++i) {
      const std::string p = "model.layers." + std::to_string(i) + ".";
      t.push_back({p + "self_attn.q_proj.weight", {heads * hd, hidden}});
      t.push_back({p + "self_attn.k_proj.weight", {kv * hd, hidden}});
      t.push_back({p + "self_attn.v_proj.weight", {kv * hd, hidden}});
      t.push_back({p + "self_attn.o_proj.weight", {hidden, heads * hd}});
      t.push_back({p + "mlp.gate_proj.weight", {inter, hidden}});
      t.push_back({p + "mlp.up_proj.weight", {inter, hidden}});
      t.push_back({p + "mlp.down_proj.weight", {hidden, inter}});
      t.push_back({p + "input_layernorm.weight", {hidden}});
      t.push_back({p + "post_attention_layernorm.weight", {hidden}});
    }
    return t;
  }
  void write(const std::filesystem::path& dir, const std::function<void(TensorList&)>& edit = {},
             uint64_t hd = 0) const {
    std::filesystem::create_directories(dir);
    write_text(dir / "config.json", config());
    TensorList list = tensors(hd ? hd : hidden / heads);
    if (edit) edit(list);
    write_weights(dir / "model.safetensors", list, {{"format", "pt"}});
  }
};

TEST(Llama, ValidDirectoriesPass) {
  test::TempDir dir;
  Llama l;
  l.write(dir / "a");
  Model m = Model::open(dir / "a");
  EXPECT_EQ(m.config().arch, "llama");
  EXPECT_EQ(m.config().head_dim, 4u);
  EXPECT_FALSE(m.sharded());
  EXPECT_NO_THROW(m.check());
  EXPECT_EQ(m.tensor_names().size(), 3 + 9 * 2u);
  EXPECT_EQ(m.view("model.norm.weight").shape(), (std::vector<uint64_t>{16}));
  l.tie = true;
  l.write(dir / "tied");
  EXPECT_NO_THROW(Model::open(dir / "tied").check());
  Llama g;  // explicit head_dim different from hidden / heads
  g.extra_config = ", \"head_dim\": 8";
  g.write(dir / "hd", {}, 8);
  EXPECT_NO_THROW(Model::open(dir / "hd").check());
}

TEST(Llama, BrokenVariantsNameTheTensor) {
  test::TempDir dir;
  Llama l;
  l.write(dir / "missing", [](TensorList& t) { t.erase(t.begin() + 4); });
  expect_rejected(dir / "missing", "model", "model.layers.0.self_attn.k_proj.weight");
  l.write(dir / "extra", [](TensorList& t) {
    t.push_back({"model.layers.9.mlp.up_proj.weight", {24, 16}});
  });
  expect_rejected(dir / "extra", "model", "model.layers.9.mlp.up_proj.weight");
  l.write(dir / "shape", [](TensorList& t) { t[3].second = Shape{17, 16}; });
  expect_rejected(dir / "shape", "model", "model.layers.0.self_attn.q_proj.weight");
  l.write(dir / "nohead", [](TensorList& t) { t.erase(t.begin() + 2); });
  expect_rejected(dir / "nohead", "model", "lm_head.weight");
  Llama tied;
  tied.tie = true;
  tied.write(dir / "tiedhead", [](TensorList& t) { t.push_back({"lm_head.weight", {32, 16}}); });
  expect_rejected(dir / "tiedhead", "model", "lm_head.weight");
}

TEST(Llama, ConfigErrorsNameTheKey) {
  test::TempDir dir;
  Llama l;
  l.write(dir / "m");
  auto with_config = [&](const std::string& text) {
    write_text(dir / "m" / "config.json", text);
    try {
      Model::open(dir / "m");
      return std::string("accepted");
    } catch (const Error& e) {
      EXPECT_EQ(e.rule_name(), "model") << e.what();
      EXPECT_NE(std::string(e.what()).find("config.json"), std::string::npos) << e.what();
      return e.tensor();
    }
  };
  EXPECT_EQ(with_config("{"), "");
  EXPECT_EQ(with_config("[]"), "");
  EXPECT_EQ(with_config(R"({"vocab_size": 3})"), "");
  EXPECT_EQ(with_config(R"({"model_type": "llama", "vocab_size": 32})"), "hidden_size");
  EXPECT_EQ(with_config(R"({"model_type": "llama", "vocab_size": "32"})"), "vocab_size");
  EXPECT_EQ(with_config(R"({"model_type": "llama", "vocab_size": 1, "vocab_size": 2})"),
            "vocab_size");
  EXPECT_EQ(with_config(R"({"model_type": "gpt2", "vocab_size": 32})"), "accepted");  // not checked
  // A vision-language model keeps vocab_size in text_config: only checked architectures need it.
  EXPECT_EQ(with_config(R"({"model_type": "qwen2_5_vl", "text_config": {"vocab_size": 32}})"),
            "accepted");
  EXPECT_EQ(with_config(R"({"model_type": "llama"})"), "vocab_size");
  // No config.json: the weights alone make a model of no architecture.
  std::filesystem::remove(dir / "m" / "config.json");
  const Model bare = Model::open(dir / "m");
  EXPECT_EQ(bare.config().arch, "");
  EXPECT_NO_THROW(bare.check());
  EXPECT_FALSE(bare.tensor_names().empty());
}

TEST(Llama, Int4QuantizedLayersCountAsTheirLogicalWeight) {
  test::TempDir dir;
  Llama l;
  l.write(dir / "m");
  File src = File::open(dir / "m" / "model.safetensors");
  std::filesystem::create_directories(dir / "q");
  quantize_file(src, dir / "q" / "model.safetensors",
                {QuantScheme::parse("int4-g8-sym"), "", "", {}});
  std::filesystem::copy_file(dir / "m" / "config.json", dir / "q" / "config.json");
  Model q = Model::open(dir / "q");
  EXPECT_EQ(q.quantized().size(), 14u);
  EXPECT_NO_THROW(q.check());
}

TEST(Llama, BnbQuantizedLayersCountAsTheirLogicalWeight) {
  test::TempDir dir;
  Llama l;
  l.write(dir / "m");
  File src = File::open(dir / "m" / "model.safetensors");
  for (const char* scheme : {"nf4", "int8"}) {
    const auto out = dir / scheme;
    std::filesystem::create_directories(out);
    QuantizeOptions o;
    o.scheme = QuantScheme::parse(scheme);
    if (o.scheme.kind() == SchemeKind::bnb_4bit) {
      o.scheme.set_option("blocksize", "32");
      o.scheme.set_option("nested", "true");
    }
    quantize_file(src, out / "model.safetensors", o);
    std::filesystem::copy_file(dir / "m" / "config.json", out / "config.json");
    Model q = Model::open(out);
    EXPECT_EQ(q.quantized().size(), 14u) << scheme;
    EXPECT_NO_THROW(q.check()) << scheme;
  }
}

TEST(Llama, QuantizedWeightsSplitAcrossShardsAreFoundWhole) {
  // Small shards put a weight's parts (bnb state, int4 scales) in different files, as any
  // size-based sharder (transformers' too) may.
  test::TempDir dir;
  Llama l;
  l.write(dir / "m");
  File src = File::open(dir / "m" / "model.safetensors");
  for (const char* scheme : {"nf4", "int4-g8-sym"}) {
    QuantizeOptions o;
    o.scheme = QuantScheme::parse(scheme);
    if (o.scheme.kind() == SchemeKind::bnb_4bit) {
      o.scheme.set_option("blocksize", "32");
      o.scheme.set_option("nested", "true");
    }
    quantize_file(src, dir / "q.safetensors", o);
    const auto out = dir / (std::string("sharded-") + scheme);
    shard_file(File::open(dir / "q.safetensors"), out, 1000);
    std::filesystem::copy_file(dir / "m" / "config.json", out / "config.json");
    Model q = Model::open(out);
    EXPECT_GT(q.files().size(), 3u) << scheme;
    EXPECT_EQ(q.quantized().size(), 14u) << scheme;
    EXPECT_NO_THROW(q.check()) << scheme;
  }
  // A part missing from every shard is still an error, naming the tensor and its file: two
  // shards made by hand, tensors alternating, one quant_state left out.
  quantize_file(src, dir / "q.safetensors", {QuantScheme::parse("nf4"), "", "", {}});
  const File nf4 = File::open(dir / "q.safetensors");
  const auto broken = dir / "broken";
  std::filesystem::create_directories(broken);
  std::filesystem::copy_file(dir / "m" / "config.json", broken / "config.json");
  const std::string dropped = "model.layers.0.mlp.up_proj.weight.quant_state.bitsandbytes__nf4";
  std::vector<TensorData> parts[2];
  std::string weight_map;
  size_t k = 0;
  for (const TensorInfo& t : nf4.tensors()) {
    if (t.name == dropped) continue;
    const size_t shard = k++ % 2;
    parts[shard].push_back({t.name, t.dtype, t.shape, nf4.view(t.name).bytes()});
    weight_map += (weight_map.empty() ? "" : ", ") + std::string("\"") + t.name + "\": \"s" +
                  std::to_string(shard) + ".safetensors\"";
  }
  for (int i = 0; i < 2; ++i)
    save_file(broken / ("s" + std::to_string(i) + ".safetensors"), parts[i]);
  {
    std::ofstream index(broken / "model.safetensors.index.json");
    index << "{\"weight_map\": {" << weight_map << "}}";
  }
  try {
    Model::open(broken);
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.rule_name(), "bnb") << e.what();
    EXPECT_NE(std::string(e.what()).find("up_proj.weight.quant_map"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find(".safetensors"), std::string::npos) << e.what();
  }
}

// ---- course directories: bigram, tokenizer rule -------------------------------------------------

TEST(Bigram, TrainWeightsEqualTheDirectComputation) {
  test::TempDir dir;
  const std::string text = "abracadabra\nabc\n";
  bigram_train(text, dir / "m");
  EXPECT_EQ(
      read_text(dir / "m" / "config.json"),
      "{\n  \"tl_arch\": \"bigram\",\n  \"tl_tokenizer\": \"bytes\",\n  \"vocab_size\": 256\n}\n");
  Model m = Model::open(dir / "m");
  EXPECT_NO_THROW(m.check());
  EXPECT_EQ(m.files()[0].metadata().at("format"), "tinyllm");
  auto w = m.files()[0].copy_as<float>("bigram.weight");
  ASSERT_EQ(w.size(), 256u * 256u);
  std::vector<double> count(256 * 256, 0.0), row(256, 0.0);
  for (size_t i = 0; i + 1 < text.size(); ++i) {
    count[uint8_t(text[i]) * 256 + uint8_t(text[i + 1])] += 1;
    row[uint8_t(text[i])] += 1;
  }
  for (int i = 0; i < 256; ++i)
    for (int j = 0; j < 256; ++j)
      ASSERT_EQ(w[i * 256 + j],
                static_cast<float>(std::log((count[i * 256 + j] + 1) / (row[i] + 256))));
  EXPECT_GT(w['a' * 256 + 'b'], w['a' * 256 + 'z']);
}

TEST(Bigram, GenerationIsDeterministicForASeed) {
  test::TempDir dir;
  bigram_train("the cat sat on the mat\nthe dog sat on the log\n", dir / "m");
  Model m = Model::open(dir / "m");
  BigramSampling s;
  s.prompt = "the ";
  s.tokens = 200;
  s.seed = 42;
  const std::string a = bigram_generate(m, s), b = bigram_generate(m, s);
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.size(), 200u);
  s.seed = 43;
  EXPECT_NE(bigram_generate(m, s), a);
  // Temperature 0 follows the most likely byte: after "t" comes "h" in this text.
  s.temperature = 0;
  s.prompt = "t";
  s.tokens = 2;
  EXPECT_EQ(bigram_generate(m, s), "he");
  s.prompt.clear();  // starts after '\n': "the" follows newlines here
  s.tokens = 1;
  EXPECT_EQ(bigram_generate(m, s), "t");
  s.temperature = -1;
  EXPECT_THROW(bigram_generate(m, s), Error);
}

TEST(Bigram, BrokenDirectories) {
  test::TempDir dir;
  bigram_train("abc", dir / "m");
  write_text(dir / "m" / "tokenizer.json", "{}");
  expect_rejected(dir / "m", "model", "tokenizer.json");  // bytes tokenizer with a tokenizer file
  write_text(dir / "m" / "config.json",
             R"({"tl_arch": "bigram", "vocab_size": 256, "tl_tokenizer": "file"})");
  EXPECT_NO_THROW(Model::open(dir / "m").check());
  std::filesystem::remove(dir / "m" / "tokenizer.json");
  expect_rejected(dir / "m", "model", "tokenizer.json");  // file tokenizer without the file
  write_text(dir / "m" / "config.json", R"({"tl_arch": "bigram", "vocab_size": 300})");
  expect_rejected(dir / "m", "model", "vocab_size");  // bytes tokenizer: 256
  write_text(dir / "m" / "config.json",
             R"({"tl_arch": "bigram", "vocab_size": 256, "tl_tokenizer": "bpe"})");
  expect_rejected(dir / "m", "model", "tl_tokenizer");
  write_text(dir / "m" / "config.json", R"({"tl_arch": "bigram", "vocab_size": 256})");
  write_weights(dir / "m" / "model.safetensors", {{"bigram.weight", {256, 255}}}, {});
  expect_rejected(dir / "m", "model", "bigram.weight");
  write_weights(dir / "m" / "model.safetensors", {{"bigram.weight", {256, 256}}, {"extra", {1}}},
                {});
  expect_rejected(dir / "m", "model", "extra");
}

// ---- shards ------------------------------------------------------------------------------------

TEST(Shard, ParseSizeLikeTransformers) {
  EXPECT_EQ(parse_size("5GB"), 5'000'000'000u);
  EXPECT_EQ(parse_size("40KB"), 40'000u);
  EXPECT_EQ(parse_size("5GiB"), uint64_t{5} << 30);
  EXPECT_EQ(parse_size("123"), 123u);
  EXPECT_EQ(parse_size("1.5MB"), 1'500'000u);
  EXPECT_EQ(parse_size("2mib"), uint64_t{2} << 20);
  for (const char* bad : {"", "GB", "5XB", "-1", "0", "1e3", "5 GB"})
    EXPECT_THROW(parse_size(bad), Error) << bad;
}

TEST(Shard, RoundTripAtSeveralSizes) {
  test::TempDir dir;
  Llama l;
  l.write(dir / "m");
  const auto original = test::read_bytes(dir / "m" / "model.safetensors");
  File src = File::open(dir / "m" / "model.safetensors");
  const uint64_t total = src.header().data_size();
  for (uint64_t max : {uint64_t{1}, uint64_t{1000}, uint64_t{2048}, total / 2, total, total * 10}) {
    SCOPED_TRACE(max);
    const auto out = dir / ("s" + std::to_string(max));
    ShardReport r = shard_file(src, out, max);
    EXPECT_EQ(r.total_size, total);
    if (max >= total) {
      EXPECT_EQ(r.files, std::vector<std::string>{"model.safetensors"});
      EXPECT_FALSE(std::filesystem::exists(out / "model.safetensors.index.json"));
    } else {
      EXPECT_EQ(r.files.back(), "model.safetensors.index.json");
      const size_t n = r.files.size() - 1;
      EXPECT_EQ(r.files[0], fmt::format("model-00001-of-{:05}.safetensors", n));
      for (size_t i = 0; i + 1 < r.files.size(); ++i) {
        File shard = File::open(out / r.files[i]);
        EXPECT_EQ(shard.metadata(), src.metadata());
        if (shard.tensors().size() > 1) {
          EXPECT_LE(shard.header().data_size(), max);
        }
      }
    }
    std::filesystem::copy_file(dir / "m" / "config.json", out / "config.json",
                               std::filesystem::copy_options::overwrite_existing);
    Model m = Model::open(out);
    EXPECT_NO_THROW(m.check());
    EXPECT_EQ(m.tensor_names().size(), src.tensors().size());
    merge_shards(out, out / "merged.safetensors");
    EXPECT_EQ(test::read_bytes(out / "merged.safetensors"), original);
  }
}

std::vector<std::string> folder_names(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

// A Llama source file and an output folder holding its config.json, for shard_file.
struct ShardScene {
  test::TempDir dir;
  File src;
  uint64_t total;
  std::filesystem::path out;
  ShardScene() : src(make_source(dir)), total(src.header().data_size()), out(dir / "out") {
    std::filesystem::create_directories(out);
    write_text(out / "config.json", read_text(dir / "m" / "config.json"));
  }
  static File make_source(const test::TempDir& d) {
    Llama().write(d / "m");
    return File::open(d / "m" / "model.safetensors");
  }
};

TEST(Shard, ANewSetReplacesThePreviousOneWhole) {
  ShardScene scene;
  const File& src = scene.src;
  const uint64_t total = scene.total;
  const auto& out = scene.out;
  write_text(out / "README.md", "mine");
  const auto small = shard_file(src, out, total / 6);
  ASSERT_GT(small.files.size(), 4u);
  const auto big = shard_file(src, out, total / 2);
  ASSERT_LT(big.files.size(), small.files.size());
  std::vector<std::string> expected = big.files;
  expected.push_back("README.md");
  expected.push_back("config.json");
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(folder_names(out), expected);  // no shard of the first set is left
  EXPECT_NO_THROW(Model::open(out).check());
  // Sharded -> one file: the index and the shards go, model.safetensors stays alone.
  shard_file(src, out, total * 2);
  EXPECT_EQ(folder_names(out),
            (std::vector<std::string>{"README.md", "config.json", "model.safetensors"}));
  // One file -> sharded: model.safetensors goes too (transformers reads it before an index).
  const auto sharded = shard_file(src, out, total / 3);
  expected = sharded.files;
  for (const char* kept : {"README.md", "config.json"}) expected.push_back(kept);
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(folder_names(out), expected);
  EXPECT_EQ(Model::open(out).file_names().size(), sharded.files.size() - 1);
}

TEST(Shard, OnlyTheOldIndexsSafetensorsFilesAreRemoved) {
  ShardScene scene;
  // An index that names more than shards: its config.json and notes are not weights.
  write_text(scene.out / "notes.txt", "mine");
  write_text(scene.out / "old-00001.safetensors", "old shard");
  write_text(
      scene.out / "model.safetensors.index.json",
      R"({"metadata": {}, "weight_map": {"a": "config.json", "b": "notes.txt", "c": "old-00001.safetensors"}})");
  shard_file(scene.src, scene.out, scene.total * 2);
  EXPECT_EQ(folder_names(scene.out),
            (std::vector<std::string>{"config.json", "model.safetensors", "notes.txt"}));
  EXPECT_EQ(read_text(scene.out / "notes.txt"), "mine");
}

bool stop_after(void* context) { return --*static_cast<int*>(context) < 0; }

TEST(Shard, AnInterruptedRunLeavesThePreviousSetWhole) {
  ShardScene scene;
  const File& src = scene.src;
  const uint64_t total = scene.total;
  const auto& out = scene.out;
  shard_file(src, out, total / 3);
  const auto before = folder_names(out);
  std::vector<std::vector<std::byte>> bytes;
  for (const auto& n : before) bytes.push_back(test::read_bytes(out / n));
  for (int polls : {0, 2, 5, 9}) {
    SCOPED_TRACE(polls);
    int left = polls;
    try {
      const InterruptScope scope(stop_after, &left);
      shard_file(src, out, total / 5);
      ADD_FAILURE() << "not interrupted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::interrupted);
    }
    EXPECT_EQ(folder_names(out), before);
    for (size_t i = 0; i < before.size(); ++i)
      EXPECT_EQ(test::read_bytes(out / before[i]), bytes[i]) << before[i];
  }
  EXPECT_NO_THROW(Model::open(out).check());
}

TEST(Shard, OutputsThatAreNotFilesAreRefused) {
  test::TempDir dir;
  Llama l;
  l.write(dir / "m");
  File src = File::open(dir / "m" / "model.safetensors");
  const auto out = dir / "out";
  std::filesystem::create_directories(out);
  ASSERT_EQ(::mkfifo((out / "model.safetensors").c_str(), 0644), 0);
  EXPECT_THROW(shard_file(src, out, src.header().data_size() * 2), Error);
  EXPECT_EQ(folder_names(out), std::vector<std::string>{"model.safetensors"});
  EXPECT_TRUE(std::filesystem::is_fifo(out / "model.safetensors"));
}

TEST(Shard, IndexTextIsWhatTransformersWrites) {
  test::TempDir dir;
  std::vector<float> a(4, 1.0f), b(4, 2.0f);
  std::vector<TensorData> t = {{"b\xC3\xA9", Dtype::F32, {4}, std::as_bytes(std::span(b))},
                               {"a", Dtype::F32, {4}, std::as_bytes(std::span(a))}};
  save_file(dir / "in.safetensors", t);
  shard_file(File::open(dir / "in.safetensors"), dir / "out", 16);
  EXPECT_EQ(read_text(dir / "out" / "model.safetensors.index.json"),
            "{\n  \"metadata\": {\n    \"total_size\": 32\n  },\n  \"weight_map\": {\n"
            "    \"a\": \"model-00001-of-00002.safetensors\",\n"
            "    \"b\\u00e9\": \"model-00002-of-00002.safetensors\"\n  }\n}\n");
}

TEST(Shard, EvilAndInconsistentIndexes) {
  test::TempDir dir;
  Llama l;
  l.layers = 1;
  l.write(dir / "m");
  File src = File::open(dir / "m" / "model.safetensors");
  shard_file(src, dir / "s", 1000);
  std::filesystem::copy_file(dir / "m" / "config.json", dir / "s" / "config.json");
  const auto index_path = dir / "s" / "model.safetensors.index.json";
  const std::string good = read_text(index_path);
  EXPECT_NO_THROW(Model::open(dir / "s").check());
  auto with_index = [&](const std::string& text, const std::string& tensor) {
    SCOPED_TRACE(text);
    write_text(index_path, text);
    expect_rejected(dir / "s", "index", tensor);
    write_text(index_path, good);
  };
  // The index line of model.norm.weight, whatever shard holds it.
  const size_t at = good.find("\"model.norm.weight\": ");
  ASSERT_NE(at, std::string::npos) << good;
  const std::string norm = good.substr(at, good.find('\n', at) - at);
  const std::string other_shard = norm.find("model-00001-") == std::string::npos
                                      ? "model-00001-of-00010.safetensors"
                                      : "model-00002-of-00010.safetensors";
  auto replaced = [&](const std::string& by) {
    std::string t = good;
    t.replace(t.find(norm), norm.size(), by);
    return t;
  };
  for (const char* evil : {"../model-00001-of-00004.safetensors", "/etc/passwd",
                           "sub/x.safetensors", "", "..", "a\\\\b"})
    with_index(replaced(std::string("\"model.norm.weight\": \"") + evil + "\""),
               "model.norm.weight");
  with_index(replaced(norm + ",\n    " + norm), "model.norm.weight");  // listed twice
  with_index(replaced("\"model.norm.weight\": \"" + other_shard + "\""), "model.norm.weight");
  with_index(replaced("\"model.nope\": \"" + other_shard + "\""), "model.nope");
  std::string wrong_total = good;
  const size_t total_at = wrong_total.find("\"total_size\": ") + 14;
  wrong_total.replace(total_at, wrong_total.find('\n', total_at) - total_at, "1");
  with_index(wrong_total, "total_size");
}

TEST(Shard, MergeRefusesDisagreeingMetadata) {
  test::TempDir dir;
  std::vector<float> a(4, 1.0f);
  std::vector<TensorData> t = {{"a", Dtype::F32, {4}, std::as_bytes(std::span(a))},
                               {"b", Dtype::F32, {4}, std::as_bytes(std::span(a))}};
  save_file(dir / "in.safetensors", t, {{"format", "pt"}});
  shard_file(File::open(dir / "in.safetensors"), dir / "s", 16);
  std::vector<TensorData> b = {{"b", Dtype::F32, {4}, std::as_bytes(std::span(a))}};
  save_file(dir / "s" / "model-00002-of-00002.safetensors", b, {{"format", "tf"}});
  try {
    merge_shards(dir / "s", dir / "merged.safetensors");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.tensor(), "format");
    EXPECT_NE(std::string(e.what()).find("\"tf\""), std::string::npos) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "merged.safetensors"));
}

}  // namespace
}  // namespace tlio

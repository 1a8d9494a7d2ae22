// Tests for jobs of units (tlio/folder_job.hpp): a folder rewrite run as plan, units in any order
// (one run twice) and commit is the single-process folder byte for byte, with the same report;
// re-sharded outputs too; a commit before every unit is done, a changed source, a bad id, a unit
// past the plan and a file source are refused, nothing published; abort leaves the output as
// it was.
#include "tlio/folder_job.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <bit>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.hpp"
#include "tlio/convert_file.hpp"
#include "tlio/error.hpp"
#include "tlio/folder_rewrite.hpp"
#include "tlio/model.hpp"
#include "tlio/rewrite.hpp"
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

// Every file of a folder by name, with its bytes (the job's staging folder would show here).
std::vector<std::pair<std::string, std::string>> contents(const fs::path& dir) {
  std::vector<std::pair<std::string, std::string>> files;
  for (const auto& e : fs::directory_iterator(dir))
    files.emplace_back(e.path().filename().string(),
                       e.is_regular_file() ? read_text(e.path()) : "<folder>");
  std::sort(files.begin(), files.end());
  return files;
}

// Eight projections, an embedding and a norm, F32, in 5 shards, with config.json and a tokenizer.
void write_model(const fs::path& dir) {
  std::vector<std::vector<float>> data;
  std::vector<TensorData> tensors;
  auto add = [&](std::string name, std::vector<uint64_t> shape) {
    uint64_t n = 1;
    for (uint64_t d : shape) n *= d;
    std::vector<float> v(n);
    for (uint64_t i = 0; i < n; ++i)
      v[i] = static_cast<float>((i * 7919 + data.size() * 131) % 997) / 199.0f - 2.5f;
    data.push_back(std::move(v));
    tensors.push_back(
        {std::move(name), Dtype::F32, Shape(shape), std::as_bytes(std::span(data.back()))});
  };
  for (int i = 0; i < 4; ++i) {
    add("model.layers." + std::to_string(i) + ".mlp.up_proj.weight", {64, 64});
    add("model.layers." + std::to_string(i) + ".mlp.down_proj.weight", {64, 64});
  }
  add("model.embed_tokens.weight", {100, 64});
  add("model.norm.weight", {64});
  const test::TempDir tmp;
  save_file(tmp / "one.safetensors", tensors, {{"format", "pt"}});
  shard_file(File::open(tmp / "one.safetensors"), dir, 40000);
  std::ofstream(dir / "config.json") << "{\n  \"model_type\": \"llama\",\n  \"torch_dtype\": "
                                        "\"float32\",\n  \"vocab_size\": 100\n}\n";
  std::ofstream(dir / "tokenizer.json") << "{\"model\": {}}";
}

FolderOptions step(FolderJob& job, FolderJob::Step s, uint64_t unit = 0, uint64_t max_size = 0) {
  job.step = s;
  job.unit = unit;
  FolderOptions o;
  o.job = &job;
  o.max_shard_size = max_size;
  return o;
}

TEST(FolderJob, ConvertAsUnitsIsTheSingleProcessFolder) {
  const test::TempDir tmp;
  write_model(tmp / "src");
  ConvertFileOptions o;
  o.dtype = Dtype::BF16;
  const ConvertFileReport whole =
      convert_weights((tmp / "src").string(), (tmp / "whole").string(), o);

  uint64_t units = 0;
  FolderJob job;
  job.id = "convert-1";
  job.units = &units;
  const std::string src = (tmp / "src").string(), out = (tmp / "units").string();
  convert_weights(src, out, o, step(job, FolderJob::Step::plan));
  ASSERT_EQ(units, 5u);  // a unit per source shard
  EXPECT_TRUE(fs::is_directory(tmp / "units/.tlio-job-convert-1"));
  for (const uint64_t k : {2u, 0u, 4u, 3u, 1u, 2u})  // any order; unit 2 again, as a retry would
    convert_weights(src, out, o, step(job, FolderJob::Step::unit, k));
  FolderFiles files;
  FolderOptions commit = step(job, FolderJob::Step::commit);
  commit.files = &files;
  const ConvertFileReport r = convert_weights(src, out, o, commit);
  EXPECT_EQ(contents(tmp / "units"), contents(tmp / "whole"));  // the staging folder gone too
  EXPECT_EQ(files.size(), 8u);  // 5 shards, the index, config.json, tokenizer.json
  EXPECT_EQ(r.converted, whole.converted);
  EXPECT_EQ(r.data_bytes_in, whole.data_bytes_in);
  EXPECT_EQ(r.data_bytes_out, whole.data_bytes_out);
}

TEST(FolderJob, ResharedQuantizeAsUnitsIsTheSingleProcessFolder) {
  const test::TempDir tmp;
  write_model(tmp / "src");
  QuantizeOptions o;
  o.scheme = QuantScheme::parse("int4-g32-sym");
  FolderOptions once;
  once.max_shard_size = 9000;  // output shards that cut across the source's
  const QuantizeReport whole =
      quantize_weights((tmp / "src").string(), (tmp / "whole").string(), o, once);

  uint64_t units = 0;
  FolderJob job;
  job.id = "q";
  job.units = &units;
  const std::string src = (tmp / "src").string(), out = (tmp / "units").string();
  quantize_weights(src, out, o, step(job, FolderJob::Step::plan, 0, 9000));
  ASSERT_GT(units, 1u);
  for (uint64_t k = units; k-- > 0;)
    quantize_weights(src, out, o, step(job, FolderJob::Step::unit, k, 9000));
  const QuantizeReport r =
      quantize_weights(src, out, o, step(job, FolderJob::Step::commit, 0, 9000));
  EXPECT_EQ(contents(tmp / "units"), contents(tmp / "whole"));
  ASSERT_EQ(r.items.size(), whole.items.size());
  for (size_t i = 0; i < r.items.size(); ++i) {
    EXPECT_EQ(r.items[i].name, whole.items[i].name);
    EXPECT_EQ(std::bit_cast<uint64_t>(r.items[i].rmse),
              std::bit_cast<uint64_t>(whole.items[i].rmse));
  }
  ASSERT_EQ(r.kept.size(), whole.kept.size());
  for (size_t i = 0; i < r.kept.size(); ++i) EXPECT_EQ(r.kept[i].names, whole.kept[i].names);
}

TEST(FolderJob, ACommitBeforeEveryUnitPublishesNothingAndAbortLeavesTheOutputAsItWas) {
  const test::TempDir tmp;
  write_model(tmp / "src");
  fs::create_directories(tmp / "out");
  std::ofstream(tmp / "out/notes.txt") << "mine";
  ConvertFileOptions o;
  o.dtype = Dtype::F16;
  FolderJob job;
  job.id = "j";
  const std::string src = (tmp / "src").string(), out = (tmp / "out").string();
  convert_weights(src, out, o, step(job, FolderJob::Step::plan));
  convert_weights(src, out, o, step(job, FolderJob::Step::unit, 0));
  try {
    convert_weights(src, out, o, step(job, FolderJob::Step::commit));
    FAIL() << "committed with units missing";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::io);
    EXPECT_NE(std::string(e.what()).find("unit 1 of job j has not finished"), std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(fs::exists(tmp / "out/config.json"));
  // Abort needs no source.
  fs::remove_all(tmp / "src");
  convert_weights(src, out, o, step(job, FolderJob::Step::abort));
  const std::vector<std::pair<std::string, std::string>> left{{"notes.txt", "mine"}};
  EXPECT_EQ(contents(tmp / "out"), left);
}

TEST(FolderJob, RefusesAChangedSourceABadIdAUnitPastThePlanAndAFile) {
  const test::TempDir tmp;
  write_model(tmp / "src");
  ConvertFileOptions o;
  o.dtype = Dtype::BF16;
  FolderJob job;
  job.id = "j";
  const std::string src = (tmp / "src").string(), out = (tmp / "out").string();
  auto code_of = [&](FolderOptions how, const std::string& from = {}) {
    try {
      convert_weights(from.empty() ? src : from, out, o, how);
    } catch (const Error& e) {
      return std::pair(e.code(), std::string(e.what()));
    }
    return std::pair(ErrorCode{}, std::string("no error"));
  };
  EXPECT_EQ(code_of(step(job, FolderJob::Step::unit, 0)).first, ErrorCode::io);  // no plan
  convert_weights(src, out, o, step(job, FolderJob::Step::plan));
  EXPECT_EQ(code_of(step(job, FolderJob::Step::unit, 5)).first, ErrorCode::invalid_argument);
  // A shard rewritten in another dtype after the plan: its data size changed.
  const fs::path shard = tmp / "src/model-00002-of-00005.safetensors";
  convert_file(File::open(shard), tmp / "bf16.safetensors", o);
  fs::rename(tmp / "bf16.safetensors", shard);
  uint64_t total = 0;  // the index made to match, as a writer of the source would
  for (const auto& e : fs::directory_iterator(tmp / "src"))
    if (e.path().extension() == ".safetensors") {
      const File f = File::open(e.path());
      total += f.header().data_size();
    }
  const fs::path index = tmp / "src/model.safetensors.index.json";
  const std::string text =
      std::regex_replace(read_text(index), std::regex("\"total_size\": [0-9]+"),
                         "\"total_size\": " + std::to_string(total));
  std::ofstream(index) << text;
  const auto [code, message] = code_of(step(job, FolderJob::Step::unit, 1));
  EXPECT_EQ(code, ErrorCode::invalid_argument) << message;
  EXPECT_NE(message.find("not what job j planned"), std::string::npos) << message;
  EXPECT_FALSE(fs::exists(tmp / "out/.tlio-job-j/model-00002-of-00005.safetensors"));

  FolderJob bad;
  bad.id = "../escape";
  EXPECT_EQ(code_of(step(bad, FolderJob::Step::plan)).first, ErrorCode::invalid_argument);
  EXPECT_EQ(code_of(step(job, FolderJob::Step::plan),
                    (tmp / "src/model-00001-of-00005.safetensors").string())
                .first,
            ErrorCode::invalid_argument);
}

TEST(FolderJob,
     TheCommitRefusesUnitsOfOtherOptionsLinksAndFifosAndALinkPlantedIsNotWrittenThrough) {
  const test::TempDir tmp;
  write_model(tmp / "src");
  ConvertFileOptions bf16, f16;
  bf16.dtype = Dtype::BF16;
  f16.dtype = Dtype::F16;
  FolderJob job;
  job.id = "j";
  uint64_t units = 0;
  job.units = &units;
  const std::string src = (tmp / "src").string(), out = (tmp / "out").string();
  const fs::path staging = tmp / "out/.tlio-job-j";
  convert_weights(src, out, bf16, step(job, FolderJob::Step::plan));
  // A link left where unit 0 writes: removed, the file it names untouched.
  std::ofstream(tmp / "victim") << "keep";
  fs::create_symlink(tmp / "victim", staging / "model-00001-of-00005.safetensors");
  for (uint64_t k = 0; k < units; ++k)
    convert_weights(src, out, bf16, step(job, FolderJob::Step::unit, k));
  EXPECT_EQ(read_text(tmp / "victim"), "keep");
  EXPECT_FALSE(fs::is_symlink(staging / "model-00001-of-00005.safetensors"));

  auto commit_error = [&](const ConvertFileOptions& o) {
    try {
      convert_weights(src, out, o, step(job, FolderJob::Step::commit));
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("committed");
  };
  // The units wrote BF16: a commit asking for F16 is not the folder they make.
  EXPECT_NE(commit_error(f16).find("otherwise than this call would"), std::string::npos);
  EXPECT_TRUE(fs::exists(staging / "plan"));  // given back for the next commit
  // A unit's file swapped for a link to a valid file, then a receipt for a FIFO: refused.
  const fs::path shard = staging / "model-00002-of-00005.safetensors";
  fs::rename(shard, tmp / "moved.safetensors");
  fs::create_symlink(tmp / "moved.safetensors", shard);
  EXPECT_NE(commit_error(bf16).find("not a file a job wrote"), std::string::npos);
  fs::remove(shard);
  fs::rename(tmp / "moved.safetensors", shard);
  fs::remove(staging / "unit-3.done");
  ASSERT_EQ(::mkfifo((staging / "unit-3.done").c_str(), 0600), 0);
  EXPECT_NE(commit_error(bf16).find("not a file a job wrote"), std::string::npos);
  EXPECT_FALSE(fs::exists(tmp / "out/config.json"));
  // The unit run again, the commit goes through.
  convert_weights(src, out, bf16, step(job, FolderJob::Step::unit, 3));
  EXPECT_EQ(commit_error(bf16), "committed");
  EXPECT_FALSE(fs::exists(staging));
  EXPECT_TRUE(fs::exists(tmp / "out/config.json"));
}

}  // namespace
}  // namespace tlio

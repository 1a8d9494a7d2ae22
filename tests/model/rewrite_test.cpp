// Tests for model/rewrite: weights_kind (what a location holds, asked once) and the rewrites by
// location (tlio/rewrite.hpp): a file goes to the file's operation, a folder to the folder's,
// and what one kind cannot take is refused by name with nothing written.
#include "tlio/rewrite.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_util.hpp"
#include "tlio/error.hpp"
#include "tlio/file.hpp"
#include "tlio/model.hpp"
#include "tlio/writer.hpp"

namespace tlio {
namespace {

namespace fs = std::filesystem;

const fs::path kSharded = test::data_dir() / "models" / "sharded";

// The code and message of the error `f` throws (code 0 when it throws none).
template <typename F>
std::pair<ErrorCode, std::string> error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return {e.code(), e.what()};
  }
  return {ErrorCode{}, ""};
}

void write_plain(const fs::path& p) {
  const std::vector<float> w(64, 0.25f), b(8, 1.0f);
  save_file(
      p, std::vector<TensorData>{{"layer.weight", Dtype::F32, {8, 8}, std::as_bytes(std::span(w))},
                                 {"layer.bias", Dtype::F32, {8}, std::as_bytes(std::span(b))}});
}

TEST(WeightsKind, AsksOnceWhatALocationHolds) {
  test::TempDir dir;
  write_plain(dir / "a.safetensors");
  EXPECT_EQ(weights_kind((dir / "a.safetensors").string()), WeightsKind::safetensors);
  EXPECT_EQ(weights_kind(kSharded.string()), WeightsKind::model_folder);
  EXPECT_EQ(weights_kind((test::data_dir() / "gguf" / "two_tensors.gguf").string()),
            WeightsKind::gguf);
  EXPECT_EQ(weights_kind((test::data_dir() / "gguf" / "no_extension").string()),
            WeightsKind::gguf);  // its magic
  EXPECT_EQ(weights_kind("-"), WeightsKind::safetensors);
  // What is not there is a file whose open says so, not an error here.
  EXPECT_EQ(weights_kind((dir / "missing.safetensors").string()), WeightsKind::safetensors);
  EXPECT_EQ(weights_kind_name(WeightsKind::model_folder), "model folder");
}

TEST(RewriteByLocation, AFileGoesToTheFilesOperation) {
  test::TempDir dir;
  write_plain(dir / "a.safetensors");
  FolderFiles files;
  FolderOptions how;
  how.files = &files;
  ConvertFileOptions o;
  o.dtype = Dtype::BF16;
  const ConvertFileReport r =
      convert_weights((dir / "a.safetensors").string(), (dir / "b.safetensors").string(), o, how);
  EXPECT_EQ(r.converted, 2u);
  EXPECT_TRUE(files.empty());  // a file's rewrite publishes no folder
  const File b = File::open(dir / "b.safetensors");
  EXPECT_EQ(b.header().find("layer.weight")->dtype, Dtype::BF16);

  TensorSelection keep;
  keep.keep = {"weight$"};
  const ConvertFileReport c =
      copy_weights((dir / "a.safetensors").string(), (dir / "c.safetensors").string(), keep);
  EXPECT_EQ(c.kept, 1u);
  EXPECT_EQ(c.dropped, 1u);
  EXPECT_EQ(c.converted, 0u);

  EditOptions e;
  e.set_metadata["note"] = "x";
  const EditReport er = edit_weights((dir / "c.safetensors").string(), "", e);  // in place
  const File edited = File::open(dir / "c.safetensors");
  EXPECT_EQ(edited.metadata().at("note"), "x");
  EXPECT_EQ(edited.tensors().size(), 1u);
  EXPECT_EQ(er.kept, 1u);
}

TEST(RewriteByLocation, AFolderGoesToTheFoldersOperation) {
  test::TempDir dir;
  FolderFiles files;
  FolderOptions how;
  how.files = &files;
  ConvertFileOptions o;
  o.dtype = Dtype::F16;
  const std::string out = (dir / "out").string();
  convert_weights(kSharded.string(), out, o, how);
  EXPECT_FALSE(files.empty());
  const Model m = Model::open(out);
  EXPECT_EQ(m.files().size(), Model::open(kSharded.string()).files().size());
  for (const File& f : m.files())
    for (const TensorInfo& t : f.tensors())
      if (t.dtype == Dtype::F32) ADD_FAILURE() << t.name << " not converted";
}

TEST(RewriteByLocation, WhatAKindCannotTakeIsRefusedWithNothingWritten) {
  test::TempDir dir;
  write_plain(dir / "a.safetensors");
  ConvertFileOptions o;
  FolderOptions sharded;
  sharded.max_shard_size = 1000;
  auto [code, message] = error_of(
      [&] { convert_weights((dir / "a.safetensors").string(), (dir / "b").string(), o, sharded); });
  EXPECT_EQ(code, ErrorCode::invalid_argument);
  EXPECT_NE(message.find("one file"), std::string::npos) << message;
  EXPECT_FALSE(fs::exists(dir / "b"));

  std::tie(code, message) =
      error_of([&] { copy_weights(kSharded.string(), (dir / "m.safetensors").string(), {}); });
  EXPECT_EQ(code, ErrorCode::invalid_argument);
  EXPECT_NE(message.find("merging its shards"), std::string::npos) << message;
  EXPECT_FALSE(fs::exists(dir / "m.safetensors"));
  std::tie(code, message) = error_of([&] { dequantize_weights(kSharded.string(), "-"); });
  EXPECT_EQ(code, ErrorCode::invalid_argument);
  EXPECT_NE(message.find("standard output"), std::string::npos) << message;

  const std::string gguf = (test::data_dir() / "gguf" / "two_tensors.gguf").string();
  std::tie(code, message) =
      error_of([&] { convert_weights(gguf, (dir / "g.safetensors").string(), o); });
  EXPECT_EQ(code, ErrorCode::invalid_argument);
  EXPECT_NE(message.find("GGUF's import"), std::string::npos) << message;
  EXPECT_FALSE(fs::exists(dir / "g.safetensors"));
}

}  // namespace
}  // namespace tlio

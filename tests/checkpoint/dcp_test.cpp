// Tests for DCP folders through tlio/checkpoint.hpp: tests/data/dcp/two_ranks (written by two
// ranks with torchrun, see make_dcp.py) imports to exactly what torch's dcp_to_torch_save reads
// back; damaged metadata and files are refused with nothing written, never a crash.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "test_util.hpp"
#include "tlio/checkpoint.hpp"
#include "tlio/error.hpp"
#include "tlio/file.hpp"
#include "tlio/model.hpp"

namespace tlio {
namespace {

std::filesystem::path fixture() { return test::data_dir() / "dcp" / "two_ranks"; }
File expected() { return File::open(test::data_dir() / "dcp" / "two_ranks.expected.safetensors"); }

// Every tensor of `got` equals the expected tensor named `prefix` + its name, bit for bit.
void expect_as_torch_reads(const File& got, const std::string& prefix) {
  const File want = expected();
  for (const TensorInfo& t : got.tensors()) {
    const TensorView g = got.view(t.name), w = want.view(prefix + t.name);
    EXPECT_EQ(g.dtype(), w.dtype()) << t.name;
    EXPECT_EQ(g.shape(), w.shape()) << t.name;
    EXPECT_TRUE(std::equal(g.bytes().begin(), g.bytes().end(), w.bytes().begin(), w.bytes().end()))
        << t.name;
  }
}

// A copy of the fixture to damage.
std::filesystem::path copy_fixture(const test::TempDir& dir) {
  const auto to = dir / "ckpt";
  std::filesystem::copy(fixture(), to);
  return to;
}

TEST(Dcp, ImportsEveryTensorAsTorchReadsItBack) {
  test::TempDir dir;
  ImportOptions o;
  o.import_all = true;
  const ImportReport r = import_checkpoint(fixture(), dir / "all", o);
  const File want = expected();
  EXPECT_EQ(r.contents.format, "dcp");
  EXPECT_EQ(r.tensors_written, want.tensors().size());
  EXPECT_EQ(r.contents.dropped_values, 13u);  // "step" and the param groups' 12 values
  const File got = File::open(dir / "all" / "model.safetensors");
  EXPECT_EQ(got.tensors().size(), want.tensors().size());
  EXPECT_EQ(got.metadata().at("format"), "pt");
  expect_as_torch_reads(got, "");
  EXPECT_TRUE(is_dcp_checkpoint(fixture()));
  EXPECT_FALSE(is_dcp_checkpoint(dir / "all"));
}

TEST(Dcp, TakesTheModelPartOrAKey) {
  const CheckpointContents c = read_checkpoint(fixture());
  EXPECT_EQ(c.chosen_key, "model");
  ASSERT_EQ(c.tensors.size(), 6u);
  EXPECT_EQ(c.tensors[0].name, "embed.weight");
  EXPECT_EQ(c.tensors[0].shape, (Shape{11, 6}));
  EXPECT_EQ(c.tensors[0].chunks, 2u);  // rows 0-5 and 6-10 (a padded shard)
  test::TempDir dir;
  ImportOptions o;
  o.key = "tp";
  o.max_shard_size = 300;  // shards and an index
  import_checkpoint(fixture(), dir / "tp", o);
  const Model m = Model::open((dir / "tp").string());
  EXPECT_GT(m.files().size(), 1u);
  for (const File& f : m.files()) expect_as_torch_reads(f, "tp.");
  o.key = "nothing";
  EXPECT_THROW(read_checkpoint(fixture(), o), Error);
}

TEST(Dcp, ConvertsFloatingTensorsOnly) {
  test::TempDir dir;
  ImportOptions o;
  o.import_all = true;
  o.dtype = Dtype::F64;
  const ImportReport r = import_checkpoint(fixture(), dir / "f64", o);
  const File got = File::open(dir / "f64" / "model.safetensors");
  EXPECT_EQ(got.view("rep").dtype(), Dtype::I64);  // integers as they are
  EXPECT_EQ(got.view("model.up.weight").dtype(), Dtype::F64);
  const File source = expected();
  const auto want = source.view("model.up.weight").bytes();
  const auto g = got.view("model.up.weight").bytes();
  for (size_t i = 0; i < want.size() / 4; ++i) {  // F32 -> F64 is exact
    float f;
    double d;
    std::memcpy(&f, want.data() + 4 * i, 4);
    std::memcpy(&d, g.data() + 8 * i, 8);
    EXPECT_EQ(static_cast<double>(f), d);
  }
  EXPECT_GT(r.tensors_converted, 0u);
}

TEST(Dcp, DamagedFilesAreRefusedAndNothingIsWritten) {
  test::TempDir dir;
  const auto ckpt = copy_fixture(dir);
  std::filesystem::resize_file(ckpt / "__1_0.distcp", 1000);  // chunks past its end
  try {
    import_checkpoint(ckpt, dir / "out");
    FAIL() << "imported";
  } catch (const Error& e) {
    EXPECT_EQ(e.rule(), Rule::checkpoint);
    EXPECT_NE(std::string(e.what()).find("past the end of __1_0.distcp"), std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "out"));
  std::filesystem::remove(ckpt / "__1_0.distcp");
  EXPECT_THROW(import_checkpoint(ckpt, dir / "out"), Error);
  EXPECT_FALSE(std::filesystem::exists(dir / "out"));
}

// DCP's safetensors layout (HuggingFaceStorageWriter(save_distributed=True), two ranks): each
// rank's chunks in its own shard, their places in DCP_SHARDING_INFO.
TEST(Dcp, SafetensorsShardsImportAsTheWholeTensors) {
  const auto shards = test::data_dir() / "dcp" / "hf_shards";
  EXPECT_TRUE(is_dcp_checkpoint(shards));
  const CheckpointContents c = read_checkpoint(shards);
  EXPECT_EQ(c.format, "dcp");
  ASSERT_EQ(c.tensors.size(), 5u);
  EXPECT_EQ(c.tensors[0].name, "a.weight");
  EXPECT_EQ(c.tensors[0].shape, (Shape{5, 7}));  // columns 0-3 in one shard, 4-6 in the other
  EXPECT_EQ(c.tensors[0].chunks, 2u);
  test::TempDir dir;
  import_checkpoint(shards, dir / "out");
  const File got = File::open(dir / "out" / "model.safetensors");
  const File want = File::open(test::data_dir() / "dcp" / "hf_shards.expected.safetensors");
  EXPECT_EQ(got.tensors().size(), want.tensors().size());
  for (const TensorInfo& t : want.tensors()) {
    const TensorView g = got.view(t.name), w = want.view(t.name);
    EXPECT_EQ(g.shape(), w.shape()) << t.name;
    EXPECT_TRUE(std::equal(g.bytes().begin(), g.bytes().end(), w.bytes().begin(), w.bytes().end()))
        << t.name;
  }
  // The first rank's shard lost: refused by its number, nothing written.
  const auto broken = dir / "broken";
  std::filesystem::copy(shards, broken);
  std::filesystem::remove(broken / "shard-00001-model-00001-of-00001.safetensors");
  EXPECT_THROW(import_checkpoint(broken, dir / "out2"), Error);
  EXPECT_FALSE(std::filesystem::exists(dir / "out2"));
}

// A .metadata that is not DCP's, or beside safetensors weights, does not make a folder one.
TEST(Dcp, AStrayMetadataFileIsNotACheckpoint) {
  test::TempDir dir;
  test::write_bytes(dir / ".metadata", test::to_bytes("{\"note\": \"an editor's\"}"));
  EXPECT_FALSE(is_dcp_checkpoint(dir.path()));
  const auto ckpt = copy_fixture(dir);
  EXPECT_TRUE(is_dcp_checkpoint(ckpt));
  std::filesystem::copy_file(test::data_dir() / "dcp" / "two_ranks.expected.safetensors",
                             ckpt / "model.safetensors");
  EXPECT_FALSE(is_dcp_checkpoint(ckpt));  // the folder's weights are the safetensors file
}

// Every truncation of the metadata, and bytes flipped through it: an Error or a checked import,
// never a crash (the sanitizer builds run this too).
TEST(Dcp, DamagedMetadataNeverCrashes) {
  test::TempDir dir;
  const auto ckpt = copy_fixture(dir);
  const std::vector<std::byte> meta = test::read_bytes(fixture() / ".metadata");
  size_t refused = 0, tries = 0;
  const auto attempt = [&](const std::vector<std::byte>& bytes) {
    test::write_bytes(ckpt / ".metadata", bytes);
    ++tries;
    try {
      ImportOptions o;
      o.import_all = o.skip_unsupported = o.allow_empty = true;
      (void)read_checkpoint(ckpt, o);
    } catch (const Error&) {
      ++refused;
    }
  };
  for (size_t n = 0; n < meta.size(); n += 97) attempt({meta.begin(), meta.begin() + n});
  for (size_t i = 0; i < meta.size(); i += 13) {
    std::vector<std::byte> bytes = meta;
    bytes[i] ^= std::byte{0x5a};
    attempt(bytes);
  }
  EXPECT_GT(refused, tries / 2);  // most damage is noticed
}

}  // namespace
}  // namespace tlio

// Tests for tlio/checkpoint.hpp: checkpoints made by torch (tests/data/checkpoints) import to
// exactly what torch.load returns; refused and malformed ones leave nothing behind.
#include "tlio/checkpoint.hpp"

#include <gtest/gtest.h>

#include "test_util.hpp"
#include "tlio/error.hpp"
#include "tlio/file.hpp"

namespace tlio {
namespace {

std::filesystem::path ckpt(const char* name) { return test::data_dir() / "checkpoints" / name; }

void expect_same_tensors(const File& got, const File& expected) {
  ASSERT_EQ(got.tensors().size(), expected.tensors().size());
  for (const TensorInfo& e : expected.tensors()) {
    const TensorView g = got.view(e.name);
    EXPECT_EQ(g.dtype(), e.dtype) << e.name;
    EXPECT_EQ(g.shape(), e.shape) << e.name;
    const TensorView ev = expected.view(e.name);
    EXPECT_TRUE(
        std::equal(g.bytes().begin(), g.bytes().end(), ev.bytes().begin(), ev.bytes().end()))
        << e.name;
  }
}

TEST(Checkpoint, ImportsWhatTorchLoadReturns) {
  test::TempDir dir;
  for (const char* name : {"small_zip", "small_legacy"}) {
    const auto out = dir / (std::string(name) + ".safetensors");
    const ImportReport r = import_checkpoint(ckpt((std::string(name) + ".pt").c_str()), out);
    EXPECT_EQ(r.contents.format, std::string(name) == "small_zip" ? "zip" : "legacy");
    EXPECT_EQ(r.tensors_written, 7u);
    const File got = File::open(out);
    expect_same_tensors(got,
                        File::open(ckpt((std::string(name) + ".expected.safetensors").c_str())));
    EXPECT_EQ(got.metadata().at("format"), "pt");
    EXPECT_TRUE(got.is_canonical());
  }
}

TEST(Checkpoint, ListsWithoutConverting) {
  const CheckpointContents c = read_checkpoint(ckpt("small_zip.pt"));
  ASSERT_EQ(c.tensors.size(), 7u);
  EXPECT_EQ(c.tensors[0].name, "weight");
  EXPECT_EQ(c.tensors[1].name, "weight_t");
  EXPECT_FALSE(c.tensors[1].contiguous);
  EXPECT_EQ(c.tensors[1].shape, (Shape{4, 3}));
  EXPECT_EQ(c.tensors[4].dtype, Dtype::BF16);
  EXPECT_EQ(c.tensors[6].shape, Shape{});
  // The top level ("state_dict" and "epoch") is another object under --key.
  ImportOptions o;
  o.key = "state_dict.ids";
  EXPECT_EQ(read_checkpoint(ckpt("small_zip.pt"), o).tensors.size(), 1u);
  o.key = "state_dict.nope";
  EXPECT_THROW(read_checkpoint(ckpt("small_zip.pt"), o), Error);
  EXPECT_TRUE(looks_like_checkpoint(ckpt("small_zip.pt")));
  EXPECT_TRUE(looks_like_checkpoint(ckpt("small_legacy.pt")));
  EXPECT_FALSE(looks_like_checkpoint(ckpt("small_zip.expected.safetensors")));
}

TEST(Checkpoint, CodeRunningPickleIsRefusedAndNothingIsWritten) {
  test::TempDir dir;
  try {
    import_checkpoint(ckpt("evil_os_system.pt"), dir / "out.safetensors");
    FAIL() << "imported";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::format);
    EXPECT_EQ(e.rule(), Rule::pickle);
    EXPECT_NE(std::string(e.what()).find("posix.system"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST(Checkpoint, NotACheckpoint) {
  test::TempDir dir;
  try {
    import_checkpoint(ckpt("small_zip.expected.safetensors"), dir / "out.safetensors");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.rule(), Rule::checkpoint);
    EXPECT_NE(std::string(e.what()).find("not a PyTorch checkpoint"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(import_checkpoint(dir / "missing.pt", dir / "out.safetensors"), Error);
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

// A folder's weights are its checkpoint only when it has no safetensors weights.
TEST(Checkpoint, FoundInAFolderWithoutSafetensorsWeights) {
  test::TempDir dir;
  EXPECT_EQ(checkpoint_in_directory(dir.path()), std::nullopt);
  std::filesystem::copy_file(ckpt("small_zip.pt"), dir / "pytorch_model.bin");
  EXPECT_EQ(checkpoint_in_directory(dir.path()), dir / "pytorch_model.bin");
  EXPECT_EQ(checkpoint_in_directory(dir / "pytorch_model.bin"), std::nullopt);  // not a folder
  std::filesystem::copy_file(ckpt("small_zip.expected.safetensors"), dir / "model.safetensors");
  EXPECT_EQ(checkpoint_in_directory(dir.path()), std::nullopt);
  test::TempDir other;
  test::write_bytes(other / "pytorch_model.bin", test::to_bytes("not a checkpoint"));
  EXPECT_EQ(checkpoint_in_directory(other.path()), std::nullopt);
}

}  // namespace
}  // namespace tlio

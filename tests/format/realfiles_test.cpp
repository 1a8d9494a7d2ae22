// Files written by other tools (tests/data/realfiles, see SOURCES.md there): every one outside
// invalid/ loads; those with canonical headers re-write byte-identical.
#include <gtest/gtest.h>

#include "test_util.hpp"
#include "tlio/error.hpp"
#include "tlio/file.hpp"
#include "tlio/writer.hpp"

namespace tlio {
namespace {

std::vector<std::filesystem::path> files_in(const std::filesystem::path& dir, bool recursive) {
  std::vector<std::filesystem::path> out;
  auto add = [&](const std::filesystem::directory_entry& e) {
    if (e.is_regular_file() && e.path().extension() == ".safetensors" &&
        e.path().parent_path().filename() != "invalid")
      out.push_back(e.path());
  };
  if (recursive)
    for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) add(e);
  else
    for (const auto& e : std::filesystem::directory_iterator(dir)) add(e);
  std::sort(out.begin(), out.end());
  return out;
}

TEST(RealFiles, AllLoadAndReadWithBothBackends) {
  auto files = files_in(test::data_dir() / "realfiles", true);
  ASSERT_EQ(files.size(), 16u);
  for (const auto& p : files) {
    SCOPED_TRACE(p.string());
    File a = File::open(p);
    File b = File::open(p, {Backend::pread});
    ASSERT_EQ(a.tensors().size(), b.tensors().size());
    EXPECT_GT(a.tensors().size(), 0u);
    for (const auto& t : a.tensors()) {
      auto va = a.view(t.name), vb = b.view(t.name);
      EXPECT_TRUE(
          std::equal(va.bytes().begin(), va.bytes().end(), vb.bytes().begin(), vb.bytes().end()));
    }
  }
}

TEST(RealFiles, CanonicalOnesRewriteByteIdentical) {
  // SOURCES.md: the candle, PEFT and syoyo files carry headers equal to the current writer's;
  // the 2022 samples do not (unpadded, sorted by name only).
  test::TempDir dir;
  size_t canonical = 0;
  for (const auto& p : files_in(test::data_dir() / "realfiles", true)) {
    SCOPED_TRACE(p.string());
    File f = File::open(p);
    bool old_sample = p.parent_path().filename() == "hf-safetensors-pr84-samples";
    EXPECT_EQ(f.is_canonical(), !old_sample);
    rewrite_canonical(f, dir / "out.safetensors");
    File out = File::open(dir / "out.safetensors");
    EXPECT_TRUE(out.is_canonical());
    for (const auto& t : f.tensors()) {
      auto a = f.view(t.name), b = out.view(t.name);
      EXPECT_TRUE(
          std::equal(a.bytes().begin(), a.bytes().end(), b.bytes().begin(), b.bytes().end()));
    }
    if (!old_sample) {
      EXPECT_EQ(test::read_bytes(dir / "out.safetensors"), test::read_bytes(p));
      ++canonical;
    }
  }
  EXPECT_EQ(canonical, 6u);
}

TEST(RealFiles, MisalignedF64InUnpaddedSampleReadsCorrectly) {
  File f = File::open(test::data_dir() / "realfiles" / "hf-safetensors-pr84-samples" /
                      "overall.safetensors");
  EXPECT_NE(f.header_size() % 8, 0u);
  auto d = f.copy_as<double>("d");  // typed copy of data at a misaligned file offset
  EXPECT_EQ(d.size(), f.header().at("d").element_count());
}

TEST(RealFiles, AbuseAttemptRejectedByRule1) {
  try {
    File::open(test::data_dir() / "realfiles" / "invalid" /
               "syoyo-safetensors-cpp__safetensors_abuse_attempt_1.safetensors");
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.rule_name(), "1");
  }
}

}  // namespace
}  // namespace tlio

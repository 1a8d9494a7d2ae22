// Tests for io/os_file.hpp: atomic replacement and in-kernel copies.
#include "io/os_file.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>

#include "test_util.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {
namespace {

TEST(AtomicFile, TemporaryIsHiddenAndRemovedOnAbort) {
  test::TempDir dir;
  {
    AtomicFile f(dir / "x.bin");
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir.path()))
      names.push_back(e.path().filename());
    ASSERT_EQ(names.size(), 1u);
    EXPECT_EQ(names[0].rfind(".x.bin.tlio-tmp-", 0), 0u);
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST(AtomicFile, CommitPublishes) {
  test::TempDir dir;
  AtomicFile f(dir / "x.bin");
  std::byte b[3] = {std::byte{1}, std::byte{2}, std::byte{3}};
  pwrite_all(f.fd(), 0, b, "x");
  f.commit();
  EXPECT_EQ(test::read_bytes(dir / "x.bin").size(), 3u);
  EXPECT_THROW(f.commit(), Error);
}

TEST(AtomicFile, MissingDirectoryIsIoError) {
  test::TempDir dir;
  try {
    AtomicFile f(dir / "no" / "x.bin");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::io);
  }
}

TEST(CopyRange, CopiesAtOffsets) {
  test::TempDir dir;
  std::vector<std::byte> src(3 << 20);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::byte>(i % 251);
  test::write_bytes(dir / "src", src);
  Fd in = open_read(dir / "src");
  AtomicFile out(dir / "dst");
  copy_range(in.get(), 5, out.fd(), 2, src.size() - 5, "dst");
  out.commit();
  auto dst = test::read_bytes(dir / "dst");
  ASSERT_EQ(dst.size(), src.size() - 3);
  EXPECT_TRUE(std::equal(dst.begin() + 2, dst.end(), src.begin() + 5));
}

TEST(PreadExact, ShortReadIsAnError) {
  test::TempDir dir;
  test::write_bytes(dir / "f", std::vector<std::byte>(10));
  Fd in = open_read(dir / "f");
  std::vector<std::byte> buf(20);
  EXPECT_THROW(pread_exact(in.get(), 0, buf, "f"), Error);
}

}  // namespace
}  // namespace tlio::detail

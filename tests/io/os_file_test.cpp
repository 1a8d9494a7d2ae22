// Tests for io/os_file.hpp: in-kernel copies and positional reads.
#include "io/os_file.hpp"

#include "io/atomic_file.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>

#include "test_util.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {
namespace {

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

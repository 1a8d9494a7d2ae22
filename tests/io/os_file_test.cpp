// Tests for io/os_file.hpp: in-kernel copies and positional reads.
#include "io/os_file.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "io/atomic_file.hpp"
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

// Pages of [p, p + size) in memory, by mincore.
size_t resident_pages(void* p, size_t size) {
  std::vector<unsigned char> in((size + 4095) / 4096);
  EXPECT_EQ(mincore(p, size, in.data()), 0);
  return static_cast<size_t>(
      std::count_if(in.begin(), in.end(), [](unsigned char c) { return c & 1; }));
}

TEST(PopulateForWrite, FaultsInTheWholePagesOfABuffer) {
  constexpr size_t kSize = size_t{4} << 20;
  void* p = mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  if (madvise(p, 4096, 23 /* MADV_POPULATE_WRITE */) != 0 && errno == EINVAL) {
    munmap(p, kSize);
    GTEST_SKIP() << "kernel before 5.14";
  }
  munmap(p, kSize);
  p = mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  madvise(p, kSize, MADV_NOHUGEPAGE);  // a huge page would bring the first and last pages in too
  auto* bytes = static_cast<std::byte*>(p);
  populate_for_write({bytes + 1, kSize - 2});  // the whole pages only: not the first or last
  EXPECT_EQ(resident_pages(p, kSize), kSize / 4096 - 2);
  EXPECT_EQ(resident_pages(p, 4096), 0u);
  munmap(p, kSize);
}

TEST(PopulateForWrite, ReadOnlyMemoryIsLeftToTheRead) {
  constexpr size_t kSize = size_t{2} << 20;
  void* p = mmap(nullptr, kSize, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  populate_for_write({static_cast<std::byte*>(p), kSize});  // no throw, no crash
  test::TempDir dir;
  test::write_bytes(dir / "f", std::vector<std::byte>(kSize));
  Fd in = open_read(dir / "f");
  EXPECT_THROW(pread_exact(in.get(), 0, {static_cast<std::byte*>(p), kSize}, "f"), Error);
  munmap(p, kSize);
}

TEST(RangeCached, SaysWhetherTheBytesAreInThePageCache) {
  test::TempDir dir;
  test::write_bytes(dir / "f", std::vector<std::byte>(size_t{3} << 20, std::byte{7}));
  Fd in = open_read(dir / "f");
  ASSERT_EQ(fdatasync(in.get()), 0);  // clean pages, so that they can be dropped
  std::vector<std::byte> all(size_t{3} << 20);
  pread_exact(in.get(), 0, all, "f");
  if (!range_cached(in.get(), 0, all.size())) GTEST_SKIP() << "no cachestat (Linux 6.5)";
  ASSERT_EQ(posix_fadvise(in.get(), 0, 0, POSIX_FADV_DONTNEED), 0);
  if (range_cached(in.get(), 0, 4096)) GTEST_SKIP() << "pages not dropped";
  ASSERT_EQ(posix_fadvise(in.get(), 0, 0, POSIX_FADV_RANDOM), 0);  // no read-ahead
  std::span<std::byte> first(all.data(), size_t{1} << 20);
  std::fill(first.begin(), first.end(), std::byte{0});
  pread_into_new_memory(in.get(), 0, first, "f");  // from the disk
  EXPECT_TRUE(range_cached(in.get(), 0, first.size()));
  EXPECT_FALSE(range_cached(in.get(), 0, all.size()));
  EXPECT_FALSE(range_cached(in.get(), size_t{2} << 20, size_t{1} << 20));
  pread_into_new_memory(in.get(), 0, all, "f");  // part from the cache, part from the disk
  EXPECT_TRUE(std::all_of(all.begin(), all.end(), [](std::byte b) { return b == std::byte{7}; }));
}

}  // namespace
}  // namespace tlio::detail

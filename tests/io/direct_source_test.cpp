// Tests for io/direct_source.hpp: every read gives the file's bytes whatever the alignment of
// its offset, size and destination (straight into the caller's buffer, through bounce
// buffers, ranges split into windows and read many at once), with O_DIRECT on a disk's file
// system through io_uring and through worker threads (where io_uring is refused), and through
// the page cache where O_DIRECT is refused; a file that shrank under its source is Error{io},
// never bytes from past its end.
#include "io/direct_source.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <vector>

#include "test_util.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {
namespace {

constexpr uint64_t kFileSize = 3 * kDirectWindow + 5 * kDirectAlign + 123;

std::vector<std::byte> pattern(size_t n) {
  std::vector<std::byte> bytes(n);
  std::mt19937_64 rng(7);
  for (size_t i = 0; i < n; i += 8) {
    const uint64_t v = rng();
    std::memcpy(bytes.data() + i, &v, std::min<size_t>(8, n - i));
  }
  return bytes;
}

std::shared_ptr<const ByteSource> write_and_open(const std::filesystem::path& path,
                                                 const std::vector<std::byte>& bytes,
                                                 DirectPath how) {
  {
    const Fd out(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
    pwrite_all(out.get(), 0, bytes, "test file");
  }
  return direct_source(open_read(path), bytes.size(), path.string(), how);
}

// Each test runs once through io_uring and once through worker threads; the io_uring path
// refuses to read any other way, so where it passes the ring did the reads.
class DirectSourceTest : public ::testing::TestWithParam<DirectPath> {
 protected:
  void SetUp() override {
    if (!test::o_direct_works(dir.path())) GTEST_SKIP() << "O_DIRECT is refused in " << dir.path();
    if (GetParam() == DirectPath::io_uring && !io_uring_available())
      GTEST_SKIP() << "io_uring is refused here";
  }
  test::TempDir dir;
};

// A buffer whose data() is `misalign` bytes past a page boundary.
struct Buffer {
  explicit Buffer(size_t size, size_t misalign) : storage(size + misalign + kDirectAlign) {
    const auto base = reinterpret_cast<uintptr_t>(storage.data());
    data = storage.data() + ((kDirectAlign - base % kDirectAlign) % kDirectAlign) + misalign;
  }
  std::vector<std::byte> storage;
  std::byte* data;
};

void check_every_alignment(const ByteSource& source, const std::vector<std::byte>& file) {
  const uint64_t offsets[] = {
      0, 1, kDirectAlign - 1, kDirectAlign, kDirectAlign + 8, kDirectWindow - 3, kFileSize - 5000};
  const uint64_t sizes[] = {1,
                            100,
                            kDirectAlign,
                            kDirectAlign + 1,
                            kDirectWindow + 2 * kDirectAlign + 9,
                            2 * kDirectWindow};
  for (const uint64_t offset : offsets)
    for (const uint64_t wanted : sizes) {
      const uint64_t size = std::min(wanted, kFileSize - offset);
      // Congruent with the offset (straight reads), page-aligned, and off by 8.
      for (const size_t misalign : {size_t(offset % kDirectAlign), size_t{0}, size_t{8}}) {
        Buffer dst(size, misalign);
        source.read(offset, {dst.data, size});
        ASSERT_EQ(std::memcmp(dst.data, file.data() + offset, size), 0)
            << "offset " << offset << " size " << size << " misalign " << misalign;
      }
    }
}

TEST_P(DirectSourceTest, ReadsTheFileWhateverTheAlignment) {
  const std::vector<std::byte> file = pattern(kFileSize);
  const auto source = write_and_open(dir / "f", file, GetParam());
  check_every_alignment(*source, file);
  EXPECT_TRUE(source->memory().empty());
  EXPECT_GE(source->descriptor(), 0);
}

TEST_P(DirectSourceTest, ManyRangesAtOnceLandEachInItsPlace) {
  const std::vector<std::byte> file = pattern(kFileSize);
  const auto source = write_and_open(dir / "f", file, GetParam());
  // The whole file as one range into a congruent buffer, and as ranges of random sizes (about 40)
  // laid out one byte further apart each in a buffer that is not: more pieces than workers,
  // straight and bounced together.
  Buffer whole(kFileSize, 0);
  std::vector<std::byte> scattered(kFileSize + kDirectAlign);
  std::vector<ReadRange> ranges{{0, whole.data, kFileSize}};
  std::mt19937_64 rng(3);
  for (uint64_t at = 0, i = 0; at < kFileSize; ++i) {
    ASSERT_LT(i, kDirectAlign);
    const uint64_t n = std::min<uint64_t>(kFileSize - at, rng() % (kFileSize / 20) + 1);
    ranges.push_back({at, scattered.data() + at + i, n});
    at += n;
  }
  source->read_ranges(ranges, 2);
  ASSERT_EQ(std::memcmp(whole.data, file.data(), kFileSize), 0);
  for (size_t r = 1; r < ranges.size(); ++r)
    ASSERT_EQ(std::memcmp(ranges[r].dst, file.data() + ranges[r].offset, ranges[r].size), 0)
        << "range " << r;
}

TEST_P(DirectSourceTest, AFileThatShrankIsAnErrorNotStaleBytes) {
  const std::vector<std::byte> file = pattern(kFileSize);
  const auto source = write_and_open(dir / "f", file, GetParam());
  ASSERT_EQ(::truncate((dir / "f").c_str(), static_cast<off_t>(kDirectWindow + 100)), 0);
  std::vector<std::byte> dst(kDirectWindow);
  source->read(0, {dst.data(), 4096});  // still there
  try {
    source->read(kDirectWindow, dst);
    FAIL() << "read past the new end";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::io);
    EXPECT_NE(std::string(e.what()).find("unexpected end of file"), std::string::npos) << e.what();
  }
  // The whole file in one call: the error comes while the other windows' reads are in flight
  // into the buffer, and every one of them has finished before the call returns (ASan).
  auto whole = std::make_unique<std::vector<std::byte>>(kFileSize);
  EXPECT_THROW(source->read(0, *whole), Error);
  whole.reset();
}

// Where the file system refuses O_DIRECT (some FUSE mounts, tmpfs before Linux 6.6): the same
// reads through the page cache, and a shrunk file is still an error.
TEST(DirectSource, WithoutODirectTheSameReadsGoThroughThePageCache) {
  test::TempDir dir;
  const std::vector<std::byte> file = pattern(kFileSize);
  const auto source = write_and_open(dir / "f", file, DirectPath::page_cache);
  check_every_alignment(*source, file);
  ASSERT_EQ(::truncate((dir / "f").c_str(), 100), 0);
  std::vector<std::byte> dst(200);
  EXPECT_THROW(source->read(0, dst), Error);
}

INSTANTIATE_TEST_SUITE_P(Paths, DirectSourceTest,
                         ::testing::Values(DirectPath::io_uring, DirectPath::threads),
                         [](const auto& p) {
                           return p.param == DirectPath::io_uring ? "io_uring" : "threads";
                         });

// `best`, what File uses: io_uring where the kernel allows it, threads elsewhere; the same bytes.
TEST(DirectSource, TheBestPathReadsWhereverIoUringIs) {
  test::TempDir dir;
  const std::vector<std::byte> file = pattern(kFileSize);
  const auto source = write_and_open(dir / "f", file, DirectPath::best);
  std::vector<std::byte> dst(kFileSize);
  source->read(0, dst);
  EXPECT_EQ(dst, file);
}

}  // namespace
}  // namespace tlio::detail

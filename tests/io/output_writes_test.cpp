// Tests for io/output_writes.hpp: whatever the order of writes (runs that continue, writes
// elsewhere, rewrites, copies from another file, flushes in the middle), the file ends up holding
// what an in-memory copy written the same way holds; with O_DIRECT and through the page cache.
#include "io/output_writes.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "io/os_file.hpp"
#include "test_util.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {
namespace {

constexpr uint64_t kSize = OutputWrites::kDirectFrom + 3 * OutputWrites::kStageBytes + 12345;

std::vector<std::byte> pattern(size_t n, uint32_t seed) {
  std::vector<std::byte> bytes(n);
  std::mt19937_64 rng(seed);
  for (size_t i = 0; i < n; i += 8) {
    const uint64_t v = rng();
    std::memcpy(bytes.data() + i, &v, std::min<size_t>(8, n - i));
  }
  return bytes;
}

std::vector<std::byte> contents(int fd, uint64_t size) {
  std::vector<std::byte> bytes(size);
  pread_exact(fd, 0, bytes, "output");
  return bytes;
}

// Writes the file as a sequence of runs: each run continues from a random point in pieces of
// random sizes (some a whole stage, some a few bytes), with flushes, rewrites and copies between.
void check_random_writes(bool lands_on_disk, uint32_t seed) {
  test::TempDir dir;
  const Fd fd(::open((dir.path() / "out").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  const Fd source(::open((dir.path() / "source").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  const std::vector<std::byte> source_bytes = pattern(1 << 20, seed + 1);
  pwrite_all(source.get(), 0, source_bytes, "source");
  std::vector<std::byte> expect(kSize);
  OutputWrites out(fd.get(), "out", lands_on_disk);
  std::mt19937_64 rng(seed);
  const auto put = [&](uint64_t offset, std::span<const std::byte> bytes) {
    out.write(offset, bytes);
    std::copy(bytes.begin(), bytes.end(), expect.begin() + static_cast<ptrdiff_t>(offset));
  };
  put(0, pattern(kSize, seed + 2));  // one run over everything: gathered, written whole
  for (int run = 0; run < 12; ++run) {
    uint64_t offset = rng() % kSize;
    for (int piece = 0; piece < 8 && offset < kSize; ++piece) {
      const uint64_t sizes[] = {1, 7, 4096, 65537, OutputWrites::kStageBytes, rng() % (3u << 20)};
      const uint64_t n = std::min(kSize - offset, sizes[rng() % 6]);
      put(offset, pattern(n, static_cast<uint32_t>(rng())));
      offset += n;
      if (rng() % 5 == 0) out.flush();
    }
    if (run % 4 == 3) {
      const uint64_t at = rng() % (kSize - source_bytes.size()), from = rng() % 1000,
                     n = source_bytes.size() - 1000;
      out.copy_from(source.get(), from, at, n);
      std::copy_n(source_bytes.begin() + static_cast<ptrdiff_t>(from), n,
                  expect.begin() + static_cast<ptrdiff_t>(at));
    }
  }
  out.flush();
  ASSERT_EQ(fd_size(fd.get(), "out"), kSize);
  EXPECT_TRUE(contents(fd.get(), kSize) == expect);
  if (!lands_on_disk) {
    EXPECT_FALSE(out.direct());
  } else if (!out.direct()) {
    std::printf("note: O_DIRECT is refused in %s; the page cache was tested\n", dir.path().c_str());
  }
}

TEST(OutputWrites, DirectWritesHoldWhatWasWritten) {
  for (uint32_t seed : {1u, 2u, 3u}) {
    check_random_writes(true, seed);
  }
}

TEST(OutputWrites, PageCacheWritesHoldWhatWasWritten) { check_random_writes(false, 4); }

TEST(OutputWrites, AFailedBackgroundWriteIsThrownByTheNextWait) {
  // A file size limit past the first two stages: the third stage's write, in the background
  // (the first proved O_DIRECT), fails with EFBIG; write or flush throws it, never lost.
  test::TempDir dir;
  const Fd fd(::open((dir.path() / "out").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit limited = old;
  limited.rlim_cur = OutputWrites::kDirectFrom + 2 * OutputWrites::kStageBytes;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &limited), 0);
  bool thrown = false;
  {
    OutputWrites out(fd.get(), "out", true);
    try {
      out.write(0, pattern(OutputWrites::kDirectFrom + 4 * OutputWrites::kStageBytes, 6));
      out.flush();
    } catch (const Error& e) {
      thrown = std::string(e.what()).find("write failed") != std::string::npos;
    }
  }
  ::setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_TRUE(thrown);
}

TEST(OutputWrites, ASmallFileNeverLeavesThePageCache) {
  test::TempDir dir;
  const Fd fd(::open((dir.path() / "out").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  OutputWrites out(fd.get(), "out", true);
  const std::vector<std::byte> bytes = pattern(OutputWrites::kDirectFrom, 5);
  out.write(0, bytes);  // no flush: nothing was gathered
  EXPECT_TRUE(contents(fd.get(), bytes.size()) == bytes);
}

}  // namespace
}  // namespace tlio::detail

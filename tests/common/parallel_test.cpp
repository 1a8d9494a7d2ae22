// Tests for common/parallel.hpp: every item is handed out exactly once, whatever the count,
// alignment and thread number.
#include "common/parallel.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

namespace tlio::detail {
namespace {

TEST(ParallelFor, CoversEveryItemOnce) {
  for (uint64_t count : {1ull, 2ull, 3ull, 7ull, 100ull, 4097ull, 8193ull, 24577ull, 65536ull}) {
    for (uint64_t align : {1ull, 4ull, 4096ull}) {
      for (unsigned threads : {1u, 2u, 3u, 8u}) {
        std::vector<std::atomic<int>> seen(count);
        parallel_for(count, 1, align, threads, [&](uint64_t b, uint64_t e) {
          EXPECT_EQ(b % align, 0u);
          for (uint64_t i = b; i < e; ++i) seen[i]++;
        });
        for (uint64_t i = 0; i < count; ++i)
          ASSERT_EQ(seen[i].load(), 1) << count << " " << align << " " << threads << " item " << i;
      }
    }
  }
}

}  // namespace
}  // namespace tlio::detail

// Tests for common/copy.hpp: the streaming copy equals memcpy at every size and alignment.
#include "common/copy.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace tlio::detail {
namespace {

TEST(CopyBytes, MatchesMemcpyAtAllSizesAndAlignments) {
  const size_t max = kStreamingCopyThreshold * 3 + 12345;
  std::vector<std::byte> src(max + 128), dst(max + 128);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::byte>((i * 131 + 7) % 251);
  for (size_t n : {size_t{0}, size_t{1}, size_t{63}, size_t{4096}, kStreamingCopyThreshold - 1,
                   kStreamingCopyThreshold, kStreamingCopyThreshold + 1,
                   kStreamingCopyThreshold + 32768 + 17, max}) {
    for (size_t src_off : {0, 1, 13, 64}) {
      for (size_t dst_off : {0, 3, 32, 63}) {
        std::fill(dst.begin(), dst.end(), std::byte{0xEE});
        if (n % 2)
          stream_bytes(dst.data() + dst_off, src.data() + src_off, n);
        else
          copy_bytes(dst.data() + dst_off, src.data() + src_off, n);
        ASSERT_TRUE(
            std::equal(dst.begin() + dst_off, dst.begin() + dst_off + n, src.begin() + src_off))
            << n << " " << src_off << " " << dst_off;
        ASSERT_EQ(dst[dst_off + n], std::byte{0xEE});  // nothing past the end
        if (dst_off) {
          ASSERT_EQ(dst[dst_off - 1], std::byte{0xEE});
        }
      }
    }
  }
}

}  // namespace
}  // namespace tlio::detail

#include "common/copy.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace tlio::detail {
namespace {

#if defined(__x86_64__)
constexpr size_t kPage = 4096;
// Pages read side by side. Streaming from several pages at once keeps more DRAM pages open and
// more prefetch streams running than one linear pass (glibc's large memcpy does the same with
// four); measured here, eight beat four and two (docs/benchmarks.md).
constexpr size_t kPages = 8;
constexpr size_t kBlock = kPages * kPage;

// Each kernel copies n bytes (a multiple of kBlock), one 64-byte line of each page in turn.
__attribute__((target("avx512f"))) void stream_avx512(std::byte* dst, const std::byte* src,
                                                      size_t n) {
  for (size_t block = 0; block < n; block += kBlock)
    for (size_t line = 0; line < kPage; line += 64)
      for (size_t p = 0; p < kPages; ++p) {
        const size_t at = block + p * kPage + line;
        _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + at), _mm512_loadu_si512(src + at));
      }
  _mm_sfence();
}

__attribute__((target("avx"))) void stream_avx(std::byte* dst, const std::byte* src, size_t n) {
  for (size_t block = 0; block < n; block += kBlock)
    for (size_t line = 0; line < kPage; line += 64)
      for (size_t p = 0; p < kPages; ++p) {
        const size_t at = block + p * kPage + line;
        __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + at));
        __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + at + 32));
        _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + at), a);
        _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + at + 32), b);
      }
  _mm_sfence();
}

// One 64-byte line: four unaligned loads, four non-temporal stores (dst 16-byte aligned).
inline void stream_line_sse2(std::byte* dst, const std::byte* src) {
  const auto* s = reinterpret_cast<const __m128i*>(src);
  auto* d = reinterpret_cast<__m128i*>(dst);
  __m128i a = _mm_loadu_si128(s), b = _mm_loadu_si128(s + 1);
  __m128i c = _mm_loadu_si128(s + 2), e = _mm_loadu_si128(s + 3);
  _mm_stream_si128(d, a);
  _mm_stream_si128(d + 1, b);
  _mm_stream_si128(d + 2, c);
  _mm_stream_si128(d + 3, e);
}

void stream_sse2(std::byte* dst, const std::byte* src, size_t n) {  // baseline x86-64
  for (size_t block = 0; block < n; block += kBlock)
    for (size_t line = 0; line < kPage; line += 64)
      for (size_t p = 0; p < kPages; ++p) {
        const size_t at = block + p * kPage + line;
        stream_line_sse2(dst + at, src + at);
      }
  _mm_sfence();
}

// Streams n bytes (a multiple of 64) to a 16-byte aligned dst, one line after the other.
void stream_sse2_linear(std::byte* dst, const std::byte* src, size_t n) {
  for (size_t at = 0; at < n; at += 64) stream_line_sse2(dst + at, src + at);
  _mm_sfence();
}

using StreamKernel = void (*)(std::byte*, const std::byte*, size_t);
const StreamKernel kStream = __builtin_cpu_supports("avx512f") ? stream_avx512
                             : __builtin_cpu_supports("avx")   ? stream_avx
                                                               : stream_sse2;
#endif

}  // namespace

void copy_bytes(std::byte* dst, const std::byte* src, size_t n) noexcept {
  if (n >= kStreamingCopyThreshold) return stream_bytes(dst, src, n);
  if (n) std::memcpy(dst, src, n);
}

void stream_bytes(std::byte* dst, const std::byte* src, size_t n) noexcept {
#if defined(__x86_64__)
  {
    const size_t head = std::min(n, (64 - (reinterpret_cast<uintptr_t>(dst) & 63)) & 63);
    std::memcpy(dst, src, head);  // align dst to 64
    dst += head;
    src += head;
    n -= head;
    const size_t bulk = n / kBlock * kBlock;
    kStream(dst, src, bulk);
    // The rest, under one block: linear 64-byte lines, then the last bytes.
    const size_t lines = (n - bulk) / 64 * 64;
    stream_sse2_linear(dst + bulk, src + bulk, lines);
    std::memcpy(dst + bulk + lines, src + bulk + lines, n - bulk - lines);
    return;
  }
#endif
  if (n) std::memcpy(dst, src, n);
}

}  // namespace tlio::detail

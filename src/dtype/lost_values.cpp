// dtype/lost_values.cpp: see lost_values.hpp. Plain loops over the bit patterns, which the
// compiler vectorizes, the output first and the input only where the output holds a zero or an
// infinity; convert_counting_lost counts each piece right after converting it, on every core,
// so the count reads what is cached rather than the chunk again from memory.
#include "dtype/lost_values.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "common/parallel.hpp"
#include "tlio/convert.hpp"

namespace tlio::detail {

namespace {

// Below this many elements one thread counts (starting threads costs more).
constexpr uint64_t kParallelMinElements = uint64_t{1} << 20;
// Elements whose output is counted before their input is looked at (16 KiB of F32).
constexpr uint64_t kBlockElements = 4096;
// Elements converted, then counted while they are in the core's cache (64 KiB of F32 in).
constexpr uint64_t kPieceElements = uint64_t{1} << 14;

struct Counts {
  uint64_t inf = 0;
  uint64_t zero = 0;
};

// Infinities and zeros among `count` elements of `bytes` whose magnitude bits are `abs_mask`
// and whose infinity is `inf_bits`.
// `count` is at most kBlockElements: 32-bit counters, twice the lanes of 64-bit ones.
template <typename Bits>
Counts count_of(std::span<const std::byte> bytes, uint64_t count, Bits abs_mask, Bits inf_bits) {
  uint32_t inf = 0, zero = 0;
  const std::byte* p = bytes.data();
  for (uint32_t i = 0; i < static_cast<uint32_t>(count); ++i) {
    Bits b;
    std::memcpy(&b, p + size_t{i} * sizeof(Bits), sizeof(Bits));
    const Bits a = static_cast<Bits>(b & abs_mask);
    inf += a == inf_bits;
    zero += a == 0;
  }
  return {inf, zero};
}

Counts count_of(Dtype d, std::span<const std::byte> bytes, uint64_t count) {
  switch (d) {
    case Dtype::F16:
      return count_of<uint16_t>(bytes, count, 0x7FFF, 0x7C00);
    case Dtype::BF16:
      return count_of<uint16_t>(bytes, count, 0x7FFF, 0x7F80);
    case Dtype::F32:
      return count_of<uint32_t>(bytes, count, 0x7FFFFFFFu, 0x7F800000u);
    case Dtype::F64:
      return count_of<uint64_t>(bytes, count, 0x7FFFFFFFFFFFFFFFull, 0x7FF0000000000000ull);
    default:
      return {};
  }
}

// Wider exponent ranges first: a conversion down this list can overflow or flush.
int range_rank(Dtype d) {
  switch (d) {
    case Dtype::F64:
      return 3;
    case Dtype::F32:
      return 2;
    case Dtype::F8_E8M0:
      return 2;  // 2^-127..2^127, no zero nor infinity: counted in the output only
    case Dtype::BF16:
      return 2;  // F32's exponent, fewer digits: it rounds, it does not overflow
    case Dtype::F16:
      return 0;
    default:
      return -1;
  }
}

}  // namespace

bool can_lose_values(Dtype from, Dtype to) noexcept {
  if (range_rank(from) < 0 || range_rank(to) < 0) return false;
  // F32 -> BF16 rounds its largest values up to infinity and its smallest subnormals to zero.
  return range_rank(from) > range_rank(to) || (from == Dtype::F32 && to == Dtype::BF16);
}

LostCounts lost_values(Dtype from, std::span<const std::byte> in, Dtype to,
                       std::span<const std::byte> out, uint64_t count) noexcept {
  const uint64_t in_size = dtype_bits(from) / 8, out_size = dtype_bits(to) / 8;
  LostCounts lost;
  // The output first, block by block: the input (wider, and rarely needed: a weight seldom holds
  // an exact zero or an infinity) is read only where the output has one.
  for (uint64_t i = 0; i < count; i += kBlockElements) {
    const uint64_t n = std::min(kBlockElements, count - i);
    const Counts c = count_of(to, out.subspan(i * out_size), n);
    if (!c.inf && !c.zero) continue;
    const Counts a = count_of(from, in.subspan(i * in_size), n);
    lost.overflowed += c.inf > a.inf ? c.inf - a.inf : 0;
    lost.flushed += c.zero > a.zero ? c.zero - a.zero : 0;
  }
  return lost;
}

LostCounts convert_counting_lost(Dtype from, std::span<const std::byte> in, Dtype to,
                                 std::span<std::byte> out, uint64_t count) {
  const uint64_t in_size = dtype_bits(from) / 8, out_size = dtype_bits(to) / 8;
  std::atomic<uint64_t> overflowed{0}, flushed{0};
  parallel_for(count, kParallelMinElements, kPieceElements, thread_count(configured_threads()),
               [&](uint64_t b, uint64_t e) {
                 LostCounts mine;
                 for (uint64_t i = b; i < e;
                      i += kPieceElements) {  // each piece counted while cached
                   const uint64_t n = std::min(kPieceElements, e - i);
                   const auto piece_in = in.subspan(i * in_size, n * in_size);
                   const auto piece_out = out.subspan(i * out_size, n * out_size);
                   convert(from, piece_in, to, piece_out, n);
                   const LostCounts l = lost_values(from, piece_in, to, piece_out, n);
                   mine.overflowed += l.overflowed;
                   mine.flushed += l.flushed;
                 }
                 overflowed += mine.overflowed;
                 flushed += mine.flushed;
               });
  return {overflowed, flushed};
}

}  // namespace tlio::detail

// dtype/lost_values.cpp: see lost_values.hpp. Plain loops over the bit patterns, which the
// compiler vectorizes, split over the cores as the conversion itself is (a chunk of 16 MiB is
// past the caches: the count is a pass over memory, not over what is cached).
#include "dtype/lost_values.hpp"

#include <atomic>
#include <cstring>

#include "common/parallel.hpp"

namespace tlio::detail {

namespace {

// Below this many elements one thread counts (starting threads costs more).
constexpr uint64_t kParallelMinElements = uint64_t{1} << 20;

struct Counts {
  uint64_t inf = 0;
  uint64_t zero = 0;
};

// Infinities and zeros among `count` elements of `bytes` whose magnitude bits are `abs_mask`
// and whose infinity is `inf_bits`.
template <typename Bits>
Counts count_of(std::span<const std::byte> bytes, uint64_t count, Bits abs_mask, Bits inf_bits) {
  Counts c;
  const std::byte* p = bytes.data();
  for (uint64_t i = 0; i < count; ++i) {
    Bits b;
    std::memcpy(&b, p + i * sizeof(Bits), sizeof(Bits));
    const Bits a = static_cast<Bits>(b & abs_mask);
    c.inf += a == inf_bits;
    c.zero += a == 0;
  }
  return c;
}

Counts count_of(Dtype d, std::span<const std::byte> bytes, uint64_t count) {
  switch (d) {
    case Dtype::F16: return count_of<uint16_t>(bytes, count, 0x7FFF, 0x7C00);
    case Dtype::BF16: return count_of<uint16_t>(bytes, count, 0x7FFF, 0x7F80);
    case Dtype::F32: return count_of<uint32_t>(bytes, count, 0x7FFFFFFFu, 0x7F800000u);
    case Dtype::F64: return count_of<uint64_t>(bytes, count, 0x7FFFFFFFFFFFFFFFull, 0x7FF0000000000000ull);
    default: return {};
  }
}

// Wider exponent ranges first: a conversion down this list can overflow or flush.
int range_rank(Dtype d) {
  switch (d) {
    case Dtype::F64: return 3;
    case Dtype::F32: return 2;
    case Dtype::F8_E8M0: return 2;  // 2^-127..2^127, no zero nor infinity: counted in the output only
    case Dtype::BF16: return 2;  // F32's exponent, fewer digits: it rounds, it does not overflow
    case Dtype::F16: return 0;
    default: return -1;
  }
}

}  // namespace

bool can_lose_values(Dtype from, Dtype to) noexcept {
  if (range_rank(from) < 0 || range_rank(to) < 0) return false;
  // F32 -> BF16 rounds its largest values up to infinity and its smallest subnormals to zero.
  return range_rank(from) > range_rank(to) || (from == Dtype::F32 && to == Dtype::BF16);
}

LostCounts lost_values(Dtype from, std::span<const std::byte> in, Dtype to, std::span<const std::byte> out,
                       uint64_t count) {
  const uint64_t in_size = dtype_bits(from) / 8, out_size = dtype_bits(to) / 8;
  std::atomic<uint64_t> overflowed{0}, flushed{0};
  parallel_for(count, kParallelMinElements, 1, thread_count(configured_threads()), [&](uint64_t b, uint64_t e) {
    const Counts a = count_of(from, in.subspan(b * in_size), e - b), c = count_of(to, out.subspan(b * out_size), e - b);
    overflowed += c.inf > a.inf ? c.inf - a.inf : 0;
    flushed += c.zero > a.zero ? c.zero - a.zero : 0;
  });
  return {overflowed, flushed};
}

}  // namespace tlio::detail

// Tests for dtype/lost_values.hpp: overflow and flush counts from the bits of a conversion's
// input and output, against values whose fate in each dtype is known (F16: finite to 65504,
// nonzero down to 2^-24; BF16: F32's range).
#include "dtype/lost_values.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "tlio/convert.hpp"

namespace tlio::detail {
namespace {

TEST(LostValues, CountsWhatTheTargetCannotHold) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  // F16: finite up to 65504, subnormals down to 2^-24; BF16 holds all of these.
  const std::vector<float> in = {1.0f, 70000.0f, -1e6f, inf,    -inf,  nan,
                                 0.0f, -0.0f,    1e-8f, -1e-9f, 3e-5f, 65504.0f};
  std::vector<std::byte> f16(in.size() * 2), bf16(in.size() * 2);
  convert(Dtype::F32, std::as_bytes(std::span(in)), Dtype::F16, f16, in.size());
  convert(Dtype::F32, std::as_bytes(std::span(in)), Dtype::BF16, bf16, in.size());
  ASSERT_TRUE(can_lose_values(Dtype::F32, Dtype::F16));
  const LostCounts to_f16 =
      lost_values(Dtype::F32, std::as_bytes(std::span(in)), Dtype::F16, f16, in.size());
  EXPECT_EQ(to_f16.overflowed, 2u);  // 70000 and -1e6; the infinities were infinite already
  EXPECT_EQ(to_f16.flushed, 2u);     // 1e-8 and -1e-9 (3e-5 is an F16 subnormal)
  const LostCounts to_bf16 =
      lost_values(Dtype::F32, std::as_bytes(std::span(in)), Dtype::BF16, bf16, in.size());
  EXPECT_EQ(to_bf16.overflowed, 0u);
  EXPECT_EQ(to_bf16.flushed, 0u);
  // BF16 -> F16 loses F16's range; F16 -> BF16 and F16 -> F32 lose nothing.
  std::vector<std::byte> f16_of_bf16(in.size() * 2);
  convert(Dtype::BF16, bf16, Dtype::F16, f16_of_bf16, in.size());
  const LostCounts bf16_to_f16 = lost_values(Dtype::BF16, bf16, Dtype::F16, f16_of_bf16, in.size());
  EXPECT_EQ(bf16_to_f16.overflowed, 3u);  // 65504 was rounded to BF16's 65536 on the way
  EXPECT_EQ(bf16_to_f16.flushed, 2u);
  EXPECT_TRUE(can_lose_values(Dtype::BF16, Dtype::F16));
  EXPECT_TRUE(can_lose_values(Dtype::F64, Dtype::F32));
  EXPECT_TRUE(can_lose_values(Dtype::F32, Dtype::BF16));  // rounding up past BF16's largest
  EXPECT_FALSE(can_lose_values(Dtype::F16, Dtype::BF16));
  EXPECT_FALSE(can_lose_values(Dtype::F16, Dtype::F32));
  EXPECT_FALSE(can_lose_values(Dtype::F32, Dtype::F32));
  EXPECT_FALSE(can_lose_values(Dtype::I32, Dtype::F16));
}

TEST(LostValues, Float32RoundsPastBfloat16sLargestToInfinity) {
  const std::vector<float> in = {3.4e38f, std::numeric_limits<float>::max(), 1e-45f, 1.0f};
  std::vector<std::byte> out(in.size() * 2);
  convert(Dtype::F32, std::as_bytes(std::span(in)), Dtype::BF16, out, in.size());
  const LostCounts l =
      lost_values(Dtype::F32, std::as_bytes(std::span(in)), Dtype::BF16, out, in.size());
  EXPECT_EQ(l.overflowed, 2u);
  EXPECT_EQ(l.flushed, 1u);  // 2^-149 is below BF16's smallest subnormal (2^-133)
}

// Converting and counting piece by piece on every core: the conversion's bytes, and the parts'
// counts adding up to the whole's.
TEST(LostValues, ConvertCountingLostConvertsAndCountsOnEveryCore) {
  std::vector<float> in((3 << 20) + 17, 1.0f);
  for (size_t i = 0; i < in.size(); i += 1000) in[i] = i % 3000 ? 1e5f : 1e-9f;
  std::vector<std::byte> want(in.size() * 2), got(in.size() * 2);
  convert(Dtype::F32, std::as_bytes(std::span(in)), Dtype::F16, want, in.size());
  const LostCounts l =
      convert_counting_lost(Dtype::F32, std::as_bytes(std::span(in)), Dtype::F16, got, in.size());
  EXPECT_EQ(got, want);
  const LostCounts whole =
      lost_values(Dtype::F32, std::as_bytes(std::span(in)), Dtype::F16, want, in.size());
  const uint64_t marked = (in.size() + 999) / 1000, flushed = (in.size() + 2999) / 3000;
  EXPECT_EQ(l.flushed, flushed);
  EXPECT_EQ(l.overflowed, marked - flushed);
  EXPECT_EQ(whole.flushed, l.flushed);
  EXPECT_EQ(whole.overflowed, l.overflowed);
}

}  // namespace
}  // namespace tlio::detail

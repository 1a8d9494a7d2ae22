// Tests for quant/hub/hub_kernels.hpp: the vector loops give the bits of the scalar form they
// replace (the e4m3_values() table, then one f32 product) for every code, lengths that leave a
// tail, and scales that make zeros, infinities, NaNs and subnormal products.
#include "quant/hub/hub_kernels.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "quant/hub/hub_values.hpp"

namespace tlio::detail {
namespace {

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

TEST(HubKernels, E4M3ScaledMatchesTheTableTimesTheScale) {
  const float inf = std::numeric_limits<float>::infinity();
  const float scales[] = {1.0f,
                          0.5f,
                          3.0e-3f,
                          -2.0f,
                          0.0f,
                          -0.0f,
                          448.0f,
                          1e-38f,
                          1e30f,
                          inf,
                          std::numeric_limits<float>::quiet_NaN()};
  for (const uint64_t n :
       {uint64_t{0}, uint64_t{1}, uint64_t{7}, uint64_t{256}, uint64_t{256 * 3 + 5}}) {
    std::vector<uint8_t> codes(n);
    for (uint64_t i = 0; i < n; ++i) codes[i] = static_cast<uint8_t>(i * 97 + (i >> 8));
    for (const float s : scales) {
      std::vector<float> got(n + 1, 12345.0f);
      e4m3_scaled(codes.data(), n, s, got.data());
      for (uint64_t i = 0; i < n; ++i)
        ASSERT_EQ(bits(got[i]), bits(e4m3_values()[codes[i]] * s))
            << "code " << int(codes[i]) << " scale " << s;
      EXPECT_EQ(got[n], 12345.0f);  // nothing written past n
    }
  }
}

TEST(HubKernels, E2M1ScaledMatchesTheTableTimesTheScale) {
  const float inf = std::numeric_limits<float>::infinity();
  const float scales[] = {1.0f,
                          0.5f,
                          3.0e-3f,
                          -2.0f,
                          0.0f,
                          -0.0f,
                          std::ldexp(1.0f, -127),
                          std::ldexp(1.0f, 127),
                          inf,
                          std::numeric_limits<float>::quiet_NaN()};
  for (const bool negative_zero : {true, false}) {
    const std::array<float, 16> table = e2m1_values(negative_zero);
    for (const uint64_t n :
         {uint64_t{0}, uint64_t{1}, uint64_t{15}, uint64_t{16}, uint64_t{17}, uint64_t{256 + 5}}) {
      std::vector<uint8_t> codes(n);
      for (uint64_t i = 0; i < n; ++i)
        codes[i] = static_cast<uint8_t>(i * 37 + (i >> 8));  // every byte in 256
      for (const float s : scales) {
        std::vector<float> got(2 * n + 1, 12345.0f);
        e2m1_scaled(codes.data(), n, s, negative_zero, got.data());
        for (uint64_t i = 0; i < 2 * n; ++i) {
          const unsigned code = i % 2 ? codes[i / 2] >> 4 : codes[i / 2] & 0xF;
          ASSERT_EQ(bits(got[i]), bits(table[code] * s))
              << "code " << code << " scale " << s << " -0 " << negative_zero;
        }
        EXPECT_EQ(got[2 * n], 12345.0f);  // nothing written past 2n
      }
    }
  }
}

}  // namespace
}  // namespace tlio::detail

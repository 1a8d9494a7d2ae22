// quant/mlx/mlx_kernels.cpp: see mlx_kernels.hpp. Compiled with -ffp-contract=off, as MLX's
// kernels round each operation.
#include "quant/mlx/mlx_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "tlio/convert.hpp"

namespace tlio::detail {

void mlx_affine_group(const float* values, uint64_t n, unsigned bits, float& scale, float& bias,
                      uint8_t* codes) {
  const auto levels = static_cast<float>((1u << bits) - 1);
  float lo = values[0], hi = values[0];
  for (uint64_t i = 1; i < n; ++i) {
    lo = std::min(lo, values[i]);
    hi = std::max(hi, values[i]);
  }
  const bool low_edge = std::fabs(lo) > std::fabs(hi);  // a tie takes the max
  float s = std::max((hi - lo) / levels, kMlxAffineEps);
  s = low_edge ? s : -s;
  const float edge = low_edge ? lo : hi;
  const float q0 = std::rint(edge / s);
  float b = 0;
  if (q0 != 0) {
    s = edge / q0;
    b = edge;
  }
  for (uint64_t i = 0; i < n; ++i)
    codes[i] = static_cast<uint8_t>(std::clamp(std::rint((values[i] - b) / s), 0.0f, levels));
  scale = s;
  bias = b;
}

void mlx_pack(const uint8_t* codes, uint64_t n, unsigned bits, uint64_t first_bit,
              uint32_t* words) {
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t bit = first_bit + i * bits, word = bit / 32;
    const unsigned shift = bit % 32;
    words[word] |= uint32_t{codes[i]} << shift;
    if (shift + bits > 32) words[word + 1] |= uint32_t{codes[i]} >> (32 - shift);
  }
}

void mlx_round_through(Dtype t, std::span<float> values) {
  if (t == Dtype::F32) return;
  thread_local std::vector<std::byte> narrow;
  narrow.resize(values.size() * 2);
  const std::span<std::byte> wide = std::as_writable_bytes(values);
  convert(Dtype::F32, wide, t, narrow, values.size());
  convert(t, narrow, Dtype::F32, wide, values.size());
}

}  // namespace tlio::detail

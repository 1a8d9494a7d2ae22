// quant/llm_int8/llm_int8.cpp: LLM.int8 row-wise quantize and dequantize (bitsandbytes Int8Params),
// bit for bit.
#include "quant/llm_int8/llm_int8.hpp"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "common/checked.hpp"
#include "quant/bnb/bnb_common.hpp"

namespace tlio {

// The shared helpers of quant/bnb/bnb_common.hpp.
using namespace detail;

namespace {

// bitsandbytes' dequantization factor 7.874015718698502e-3 (about 1/127), as float32.
constexpr float kInt8Dequant = 7.874015718698502e-3f;

void check_int8(uint64_t cols, size_t cb, size_t scb) {
  if (cols == 0 && cb == 0) return;
  if (cols == 0 || cb % cols || cb / cols != scb)
    throw_invalid(
        fmt::format("{} int8 values and {} row scales do not fit {} columns", cb, scb, cols));
}

}  // namespace

void detail::llm_int8_quantize(std::span<const float> w, uint64_t rows, uint64_t cols,
                               std::span<int8_t> cb, std::span<float> scb) {
  const auto n = detail::checked_mul(rows, cols);
  if (!n || w.size() != *n)
    throw_invalid(fmt::format("{} weights for a [{}, {}] matrix", w.size(), rows, cols));
  check_int8(cols, cb.size(), scb.size());
  if (scb.size() != rows) throw_invalid(fmt::format("{} row scales for {} rows", scb.size(), rows));
  std::vector<float> row(cols);
  for (uint64_t r = 0; r < rows; ++r) {
    float absmax = 0;
    for (uint64_t c = 0; c < cols; ++c) {  // Int8Params quantizes the F16 weight
      row[c] = f16_to_f32(f32_to_f16(w[r * cols + c]));
      if (!std::isfinite(row[c]))
        throw_invalid(fmt::format("weight ({}, {}) is {} as F16", r, c, row[c]));
      absmax = std::max(absmax, std::fabs(row[c]));
    }
    scb[r] = absmax;
    // Python's `127.0 / row_stats` is torch's __rtruediv__: reciprocal first, then times 127.
    const float factor = absmax > 0 ? 127.0f * (1.0f / absmax) : 0.0f;
    for (uint64_t c = 0; c < cols; ++c)
      cb[r * cols + c] =
          static_cast<int8_t>(std::clamp(std::nearbyint(row[c] * factor), -127.0f, 127.0f));
  }
}

void detail::llm_int8_dequantize(std::span<const int8_t> cb, std::span<const float> scb,
                                 uint64_t cols, uint64_t first, uint64_t count, Dtype out,
                                 std::span<std::byte> dst) {
  check_int8(cols, cb.size(), scb.size());
  const auto end = detail::checked_add(first, count);
  if (!end || *end > cb.size())
    throw_invalid(
        fmt::format("elements [{}, +{}) are outside the {} values", first, count, cb.size()));
  produce(
      first, count, out, dst,
      [&](uint64_t at, uint64_t m, float* o) {
        for (uint64_t i = 0; i < m; ++i)
          o[i] = static_cast<float>(cb[at + i]) * scb[(at + i) / cols] * kInt8Dequant;
      },
      [](uint64_t, uint64_t, uint16_t*) { return false; });
}

}  // namespace tlio

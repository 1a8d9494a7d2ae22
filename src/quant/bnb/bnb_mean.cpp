// quant/bnb/bnb_mean.cpp: the float32 mean in torch's CPU summation order (what bitsandbytes stores
// as nested_offset).
#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "quant/bnb/bnb_common.hpp"
#include "quant/bnb/bnb_detail.hpp"

namespace tlio {

// The shared helpers of quant/bnb/bnb_common.hpp.
using namespace detail;

namespace {

// torch's CPU float32 sum of a contiguous vector (at::native cascade_sum, AVX2 build: 8-float
// vectors). Items are either vectors of 8 floats or single floats; rows of 4 items ("ilp") are
// accumulated into 4 levels of partial sums that are merged every 2^level_power rows, then
// folded. Reproducing the order is what makes nested_offset match bnb to the last bit.
template <size_t W>
using Lanes = std::array<float, W>;

template <size_t W>
void add_to(Lanes<W>& acc, const Lanes<W>& v) {
  for (size_t l = 0; l < W; ++l) acc[l] += v[l];
}

template <size_t W>
Lanes<W> item_at(const float* data, uint64_t i) {
  Lanes<W> v;
  std::memcpy(v.data(), data + i * W, sizeof(v));
  return v;
}

template <size_t W>
Lanes<W> cascade_row_sum(const float* data, uint64_t items) {
  constexpr int kIlp = 4, kLevels = 4;
  const uint64_t rows = items / kIlp;
  std::array<Lanes<W>, kIlp> partial{};
  if (rows > 0) {
    const int ceil_log2 = rows <= 1 ? 0 : static_cast<int>(std::bit_width(rows - 1));
    const int level_power = std::max(4, ceil_log2 / kLevels);
    const uint64_t level_step = uint64_t{1} << level_power, level_mask = level_step - 1;
    std::array<std::array<Lanes<W>, kIlp>, kLevels> acc{};
    uint64_t i = 0;
    while (i + level_step <= rows) {
      for (uint64_t j = 0; j < level_step; ++j, ++i)
        for (int k = 0; k < kIlp; ++k) add_to(acc[0][k], item_at<W>(data, i * kIlp + k));
      for (int j = 1; j < kLevels; ++j) {
        for (int k = 0; k < kIlp; ++k) {
          add_to(acc[j][k], acc[j - 1][k]);
          acc[j - 1][k] = {};
        }
        if (i & (level_mask << (j * level_power))) break;
      }
    }
    for (; i < rows; ++i)
      for (int k = 0; k < kIlp; ++k) add_to(acc[0][k], item_at<W>(data, i * kIlp + k));
    for (int j = 1; j < kLevels; ++j)
      for (int k = 0; k < kIlp; ++k) add_to(acc[0][k], acc[j][k]);
    partial = acc[0];
  }
  for (uint64_t i = rows * kIlp; i < items; ++i) add_to(partial[0], item_at<W>(data, i));
  for (int k = 1; k < kIlp; ++k) add_to(partial[0], partial[k]);
  return partial[0];
}

float torch_sum(std::span<const float> x) {
  constexpr size_t kVector = 8;
  if (x.size() < kVector) return cascade_row_sum<1>(x.data(), x.size())[0];
  const uint64_t vectors = x.size() / kVector;
  const Lanes<kVector> acc = cascade_row_sum<kVector>(x.data(), vectors);
  float total = 0;
  for (uint64_t k = vectors * kVector; k < x.size(); ++k) total += x[k];
  for (float lane : acc) total += lane;
  return total;
}

}  // namespace

float detail::bnb_mean(std::span<const float> values) noexcept {
  if (values.empty()) return std::nanf("");
  return torch_sum(values) / static_cast<float>(values.size());
}

}  // namespace tlio

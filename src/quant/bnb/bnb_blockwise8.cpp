// quant/bnb/bnb_blockwise8.cpp: bitsandbytes 8-bit blockwise quantization with the dynamic map, and
// the nested absmax built on it.
#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "quant/bnb/bnb.hpp"
#include "quant/bnb/bnb_common.hpp"
#include "quant/bnb/bnb_detail.hpp"

namespace tlio {

// The shared helpers of quant/bnb/bnb_common.hpp.
using namespace detail;

void detail::bnb_quantize_blockwise8(std::span<const float> x, uint64_t blocksize,
                                     std::span<uint8_t> q, std::span<float> absmax) {
  if (blocksize == 0) throw_invalid("blocksize 0");
  const uint64_t n = x.size(), blocks = block_count(n, blocksize);
  check_size("the code buffer", q.size(), n);
  check_size("the absmax buffer", absmax.size(), blocks);
  const auto& bounds = dynamic_bounds();
  for (uint64_t b = 0; b < blocks; ++b) {
    const uint64_t start = b * blocksize, len = std::min(blocksize, n - start);
    const BlockScale s = block_scale(x.data() + start, len, start, len < blocksize);
    absmax[b] = s.stored_absmax;
    for (uint64_t k = 0; k < len; ++k)  // the number of bounds below the value
      q[start + k] = static_cast<uint8_t>(
          std::lower_bound(bounds.begin(), bounds.end(), scaled(x[start + k], s)) - bounds.begin());
  }
}

void detail::bnb_dequantize_blockwise8(std::span<const uint8_t> q, std::span<const float> absmax,
                                       std::span<const float> code, uint64_t blocksize,
                                       std::span<float> out) {
  if (blocksize == 0) throw_invalid("blocksize 0");
  check_size("the code map", code.size(), 256);
  check_size("the absmax buffer", absmax.size(), block_count(q.size(), blocksize));
  check_size("the output", out.size(), q.size());
  for (uint64_t i = 0; i < q.size(); ++i) out[i] = code[q[i]] * absmax[i / blocksize];
}

BnbNestedAbsmax detail::bnb_nest_absmax(std::span<const float> absmax, uint64_t blocksize,
                                        std::optional<float> offset) {
  BnbNestedAbsmax nested;
  nested.blocksize = blocksize;
  nested.offset = offset ? *offset : detail::bnb_mean(absmax);
  std::vector<float> centred(absmax.size());
  for (size_t i = 0; i < absmax.size(); ++i) centred[i] = absmax[i] - nested.offset;
  nested.codes.resize(absmax.size());
  nested.absmax2.resize(block_count(absmax.size(), blocksize));
  bnb_quantize_blockwise8(centred, blocksize, nested.codes, nested.absmax2);
  return nested;
}

std::vector<float> detail::bnb_unnest_absmax(std::span<const uint8_t> codes,
                                             std::span<const float> absmax2,
                                             std::span<const float> code, uint64_t blocksize,
                                             float offset) {
  std::vector<float> out(codes.size());
  bnb_dequantize_blockwise8(codes, absmax2, code, blocksize, out);
  for (float& v : out) v += offset;
  return out;
}

}  // namespace tlio

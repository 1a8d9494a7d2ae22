// quant/bnb/bnb_4bit.cpp: bitsandbytes 4-bit (NF4, FP4) quantize and dequantize, bit for bit.
#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "quant/bnb/bnb.hpp"
#include "quant/bnb/bnb_common.hpp"

namespace tlio {

// The shared helpers of quant/bnb/bnb_common.hpp.
using namespace detail;

void detail::bnb_quantize_4bit(std::span<const float> x, BnbQuantType type, uint64_t blocksize,
                               std::span<uint8_t> packed, std::span<float> absmax) {
  if (!is_bnb_4bit_blocksize(blocksize))
    throw_invalid(
        fmt::format("blocksize {} is not one of 32, 64, ..., 4096 (rule BNB-001)", blocksize));
  const uint64_t n = x.size(), blocks = block_count(n, blocksize);
  check_size("the packed buffer", packed.size(), n / 2 + n % 2);
  check_size("the absmax buffer", absmax.size(), blocks);
  const Codebook4& book = codebook(type);
  detail::parallel_for(
      blocks, kParallelMinElements / blocksize, 1,
      detail::thread_count(detail::configured_threads()), [&](uint64_t b0, uint64_t b1) {
        std::vector<uint8_t> pos(blocksize);
        for (uint64_t b = b0; b < b1; ++b) {
          const uint64_t start = b * blocksize, len = std::min(blocksize, n - start);
          const BlockScale s = block_scale(x.data() + start, len, start, len < blocksize);
          absmax[b] = s.stored_absmax;
          detail::bnb_bucketize15(x.data() + start, len, s.scale, s.divide, book.bounds.data(),
                                  pos.data());
          const uint8_t* code = book.code_of_position.data();
          uint8_t* out = packed.data() + start / 2;  // blocksize is even: blocks start on a byte
          for (uint64_t k = 0; k + 1 < len; k += 2)
            out[k / 2] = static_cast<uint8_t>(code[pos[k]] << 4 | code[pos[k + 1]]);
          if (len % 2)
            out[len / 2] = static_cast<uint8_t>(code[pos[len - 1]] << 4 | book.zero_code);
        }
      });
}

void detail::bnb_dequantize_4bit(std::span<const uint8_t> packed, std::span<const float> absmax,
                                 BnbQuantType type, uint64_t blocksize, uint64_t first,
                                 uint64_t count, Dtype out, std::span<std::byte> dst) {
  if (!is_bnb_4bit_blocksize(blocksize))
    throw_invalid(
        fmt::format("blocksize {} is not one of 32, 64, ..., 4096 (rule BNB-001)", blocksize));
  const uint64_t n = packed.size() * 2;
  const auto end = detail::checked_add(first, count);
  if (!end || *end > n)
    throw_invalid(
        fmt::format("elements [{}, +{}) are outside the {} packed values", first, count, n));
  if (count > 0 && absmax.size() < block_count(*end, blocksize))
    throw_invalid(fmt::format("{} absmax values cover fewer than the {} elements asked for",
                              absmax.size(), *end));
  const float* table = bnb_4bit_table(type).data();
  produce(
      first, count, out, dst,
      [&](uint64_t at, uint64_t m, float* o) {
        detail::bnb_dequant4_f32(packed.data(), absmax.data(), table, blocksize, at, m, o);
      },
      [&](uint64_t at, uint64_t m, uint16_t* o) {
        detail::bnb_dequant4_bf16(packed.data(), absmax.data(), table, blocksize, at, m, o);
        return true;
      });
}

}  // namespace tlio

// quant/bnb/bnb_common.hpp: what the bitsandbytes kernels share: constants, the code tables in the
// form quantizers use, the block scaling, and the multi-threaded producer of dequantized output.
#pragma once

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "common/checked.hpp"
#include "common/copy.hpp"
#include "common/parallel.hpp"
#include "quant/bnb/bnb_kernels.hpp"
#include "tlio/bnb.hpp"
#include "tlio/convert.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {

// bnb clamps a block's absmax to at least 1e-38 (as float32: the subnormal 0x006CE3EE) before
// dividing by it.
inline constexpr float kMinAbsmax = 1e-38f;

// Elements per task when quantizing or dequantizing on several threads.
inline constexpr uint64_t kParallelMinElements = uint64_t{1} << 20;
// Elements dequantized per step into a cached scratch before being streamed out.
inline constexpr uint64_t kScratchElements = 4096;

// What 4-bit quantization needs of a code table: the 15 float32 midpoints between its values in
// ascending order, and the code of each sorted position.
struct Codebook4 {
  std::array<float, 15> bounds{};
  std::array<uint8_t, 16> code_of_position{};
  uint8_t zero_code = 0;  // the code of 0.0: pads an odd element count
};
const Codebook4& codebook(BnbQuantType type);
// The 255 midpoints of the dynamic map (8-bit bucketize bounds).
const std::array<float, 255>& dynamic_bounds();

inline uint64_t block_count(uint64_t n, uint64_t blocksize) {
  return n / blocksize + (n % blocksize != 0);
}

inline void check_size(const char* what, size_t have, uint64_t want) {
  if (have != want)
    throw_invalid(fmt::format("{} holds {} entries, {} are needed", what, have, want));
}

// The scaling both quantizers share. Full blocks multiply by f32(1 / max(absmax, 1e-38)) and
// store the plain absmax; the partial last block divides by max(absmax, 1e-38) and stores that.
struct BlockScale {
  float stored_absmax;
  float scale;
  bool divide;
};

inline BlockScale block_scale(const float* x, uint64_t len, uint64_t first_index, bool partial) {
  const uint32_t bits = detail::bnb_absmax_bits(x, len);
  if (bits >= 0x7F800000u)
    for (uint64_t k = 0; k < len; ++k)
      if (!std::isfinite(x[k])) throw_invalid(fmt::format("value {} is {}", first_index + k, x[k]));
  const float absmax = std::bit_cast<float>(bits);
  if (partial) {
    const float clamped = std::max(absmax, kMinAbsmax);
    return {clamped, clamped, true};
  }
  return {absmax, 1.0f / std::max(absmax, kMinAbsmax), false};
}

inline float scaled(float x, const BlockScale& s) {
  return std::min(std::max(s.divide ? x / s.scale : x * s.scale, -1.0f), 1.0f);
}

inline Dtype check_float_out(Dtype out) {
  if (out != Dtype::F32 && out != Dtype::F16 && out != Dtype::BF16)
    throw Error(ErrorCode::unsupported, Rule::none, {}, std::nullopt,
                fmt::format("bitsandbytes weights dequantize to F32, F16 or BF16, not {}",
                            dtype_name(out)));
  return out;
}

// Produces elements [first, first + count) as `out` in dst, on the configured threads: `f32`
// fills F32 values for a sub-range; `bf16` (optional) fills BF16 bits directly for sub-ranges
// that start at an even element and returns false where it cannot. Large F32 and BF16 outputs
// are made in a cached scratch and streamed out, sparing a read for ownership of each output
// line.
template <class F32Fn, class BF16Fn>
void produce(uint64_t first, uint64_t count, Dtype out, std::span<std::byte> dst, F32Fn&& f32,
             BF16Fn&& bf16) {
  check_float_out(out);
  const uint64_t out_bytes = dtype_bits(out) / 8;
  if (dst.size() != count * out_bytes)
    throw_invalid(fmt::format("destination holds {} bytes, {} {} values need {}", dst.size(), count,
                              dtype_name(out), count * out_bytes));
  const bool stream = out != Dtype::F16 && dst.size() >= detail::kStreamingCopyThreshold;
  detail::parallel_for(
      count, kParallelMinElements, kScratchElements,
      detail::thread_count(detail::configured_threads()), [&](uint64_t b, uint64_t e) {
        std::vector<float> scratch(kScratchElements);
        for (uint64_t i = b; i < e; i += kScratchElements) {
          const uint64_t m = std::min(kScratchElements, e - i);
          std::byte* o = dst.data() + i * out_bytes;
          if (out == Dtype::F32 && !stream) {
            f32(first + i, m, reinterpret_cast<float*>(o));
            continue;
          }
          if (out == Dtype::BF16 && (first + i) % 2 == 0) {
            auto* bits =
                reinterpret_cast<uint16_t*>(stream ? static_cast<void*>(scratch.data()) : o);
            if (bf16(first + i, m, bits)) {
              if (stream) detail::stream_bytes(o, reinterpret_cast<const std::byte*>(bits), m * 2);
              continue;
            }
          }
          f32(first + i, m, scratch.data());
          if (out == Dtype::F32)
            detail::stream_bytes(o, reinterpret_cast<const std::byte*>(scratch.data()), m * 4);
          else
            convert(Dtype::F32, std::as_bytes(std::span(scratch.data(), m)), out,
                    {o, m * out_bytes}, m);
        }
      });
}

}  // namespace tlio::detail

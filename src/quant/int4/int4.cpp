// quant/int4/int4.cpp: tinyllm int4-g<group>-sym kernels: quantize a matrix, dequantize rows.
#include "quant/int4/int4.hpp"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "common/checked.hpp"
#include "common/copy.hpp"
#include "common/json_text.hpp"
#include "common/parallel.hpp"
#include "quant/int4/int4_kernels.hpp"
#include "tlio/convert.hpp"
#include "tlio/error.hpp"
#include "tlio/file.hpp"
#include "tlio/quant.hpp"

namespace tlio {

using detail::quote_name;

// Matrices of at least this many elements are dequantized on all cores.
inline constexpr uint64_t kParallelMinElements = uint64_t{1} << 20;

namespace {

void check_matrix(uint64_t rows, uint64_t cols, uint64_t group, size_t qbytes, size_t nscales) {
  if (cols % 2) throw_invalid(fmt::format("int4 needs an even number of columns, not {}", cols));
  if (group == 0 || cols % group)
    throw_invalid(fmt::format("group {} does not divide the {} columns", group, cols));
  auto elems = detail::checked_mul(rows, cols);
  if (!elems || qbytes != *elems / 2 || nscales != *elems / group)
    throw_invalid(
        fmt::format("int4 buffers of {} and {} entries do not fit a [{}, {}] matrix "
                    "with group {}",
                    qbytes, nscales, rows, cols, group));
}

}  // namespace

void detail::int4_quantize(std::span<const float> weights, uint64_t rows, uint64_t cols,
                           uint64_t group, std::span<uint8_t> qweight, std::span<uint16_t> scales) {
  check_matrix(rows, cols, group, qweight.size(), scales.size());
  if (weights.size() != qweight.size() * 2)
    throw_invalid(fmt::format("{} weights for a [{}, {}] matrix", weights.size(), rows, cols));
  const uint64_t groups = cols / group;
  detail::parallel_for(
      rows, kParallelMinElements / std::max<uint64_t>(cols, 1), 1,
      detail::thread_count(detail::configured_threads()), [&](uint64_t first, uint64_t last) {
        std::vector<int8_t> codes(cols);
        std::vector<float> scale(groups);
        for (uint64_t r = first; r < last; ++r) {
          const float* w = weights.data() + r * cols;
          for (uint64_t g = 0; g < groups; ++g) {
            const float* wg = w + g * group;
            float absmax = 0;
            bool finite = true;
            for (uint64_t k = 0; k < group; ++k) {
              finite = finite && std::isfinite(wg[k]);
              absmax = std::max(absmax, std::fabs(wg[k]));
            }
            if (!finite)
              for (uint64_t k = 0; k < group; ++k)
                if (!std::isfinite(wg[k]))
                  throw_invalid(fmt::format("weight ({}, {}) is {}", r, g * group + k, wg[k]));
            const uint16_t s16 = f32_to_f16(absmax / 7.0f);
            if ((s16 & 0x7C00) == 0x7C00)
              throw_invalid(
                  fmt::format("scale of row {} group {} ({}) overflows F16", r, g, absmax / 7.0f));
            scales[r * groups + g] = s16;
            scale[g] = f16_to_f32(s16);
          }
          detail::int4_quantize_row(w, scale.data(), cols, group, codes.data(),
                                    qweight.data() + r * cols / 2);
        }
      });
}

void detail::int4_dequantize_rows(std::span<const uint8_t> qweight,
                                  std::span<const uint16_t> scales, uint64_t rows, uint64_t cols,
                                  uint64_t group, uint64_t first_row, uint64_t row_count, Dtype out,
                                  std::span<std::byte> dst) {
  check_matrix(rows, cols, group, qweight.size(), scales.size());
  if (out != Dtype::F32 && out != Dtype::F16 && out != Dtype::BF16)
    throw Error(ErrorCode::unsupported, Rule::none, {}, std::nullopt,
                fmt::format("int4 dequantizes to F32, F16 or BF16, not {}", dtype_name(out)));
  auto end_row = detail::checked_add(first_row, row_count);
  if (!end_row || *end_row > rows)
    throw_invalid(
        fmt::format("rows [{}, +{}) are outside the {} rows", first_row, row_count, rows));
  const uint64_t out_bytes = dtype_bits(out) / 8;
  if (dst.size() != row_count * cols * out_bytes)
    throw_invalid(fmt::format("destination holds {} bytes, {} rows of {} {} need {}", dst.size(),
                              row_count, cols, dtype_name(out), row_count * cols * out_bytes));
  const uint64_t groups = cols / group;
  detail::parallel_for(
      row_count, kParallelMinElements / std::max<uint64_t>(cols, 1), 1,
      detail::thread_count(detail::configured_threads()), [&](uint64_t b, uint64_t e) {
        // Large F32 outputs: each row is made in a cached scratch row, then streamed out
        // (non-temporal), which spares a read for ownership of every output line.
        const bool stream =
            out == Dtype::F32 && row_count * cols * 4 >= detail::kStreamingCopyThreshold;
        std::vector<float> row(out == Dtype::F32 && !stream ? 0 : cols);
        for (uint64_t r = b; r < e; ++r) {
          const uint64_t src_row = first_row + r;
          const uint8_t* q = qweight.data() + src_row * cols / 2;
          const uint16_t* s = scales.data() + src_row * groups;
          std::byte* o = dst.data() + r * cols * out_bytes;
          if (stream) {
            detail::int4_dequantize_row(q, s, cols, group, row.data());
            detail::stream_bytes(o, reinterpret_cast<const std::byte*>(row.data()), cols * 4);
            continue;
          }
          if (out == Dtype::F32) {
            detail::int4_dequantize_row(q, s, cols, group, reinterpret_cast<float*>(o));
            continue;
          }
          if (out == Dtype::BF16 &&
              detail::int4_dequantize_row_bf16(q, s, cols, group, reinterpret_cast<uint16_t*>(o)))
            continue;
          detail::int4_dequantize_row(q, s, cols, group, row.data());
          convert(Dtype::F32, std::as_bytes(std::span(row)), out, {o, cols * out_bytes}, cols);
        }
      });
}

}  // namespace tlio

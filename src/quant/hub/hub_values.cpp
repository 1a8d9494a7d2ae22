// quant/hub/hub_values.cpp: see hub_values.hpp.
#include "quant/hub/hub_values.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "common/json_text.hpp"
#include "tlio/convert.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {

void store_rounded(std::span<const float> exact, Dtype reference, Dtype out,
                   std::span<std::byte> dst) {
  const uint64_t n = exact.size();
  const std::span<const std::byte> bytes = std::as_bytes(exact);
  if (out == Dtype::F32) {
    std::memcpy(dst.data(), bytes.data(), bytes.size());
    return;
  }
  if (reference == Dtype::F32 || reference == out) {
    convert(Dtype::F32, bytes, out, dst, n);
    return;
  }
  // Two roundings, as the reference's result converted by the caller would have them.
  std::vector<std::byte> rounded(bytes_for(reference, n));
  convert(Dtype::F32, bytes, reference, rounded, n);
  convert(reference, rounded, out, dst, n);
}

void check_destination(uint64_t count, Dtype out, std::span<const std::byte> dst) {
  const uint64_t need = count * (dtype_bits(out) / 8);
  if (dst.size() != need)
    throw_invalid(
        fmt::format("destination holds {} bytes, {} values need {}", dst.size(), count, need));
}

void decode_chunked(uint64_t first, uint64_t count, Dtype reference, Dtype out,
                    std::span<std::byte> dst,
                    const std::function<void(uint64_t, std::span<float>)>& fill,
                    uint64_t chunk_elements) {
  const uint64_t out_bytes = dtype_bits(out) / 8;
  check_destination(count, out, dst);
  // Kept by the thread: a fresh 256 KiB buffer per call costs an mmap and its page faults.
  thread_local std::vector<float> values;
  values.resize(std::max<size_t>(values.size(), std::min(count, chunk_elements)));
  for (uint64_t done = 0; done < count;) {
    const uint64_t m = std::min(chunk_elements, count - done);
    const std::span<float> chunk = std::span(values).first(m);
    fill(first + done, chunk);
    store_rounded(chunk, reference, out, dst.subspan(done * out_bytes, m * out_bytes));
    done += m;
  }
}

std::vector<uint32_t> group_indices(std::span<const std::byte> g_idx, const std::string& name,
                                    uint64_t count, uint64_t groups) {
  std::vector<uint32_t> out(count);
  for (uint64_t k = 0; k < count; ++k) {
    const auto g = static_cast<int32_t>(load_word(g_idx.data(), k));
    if (g < 0 || static_cast<uint64_t>(g) >= groups)
      throw_format(
          Rule::quant, name,
          fmt::format("{}[{}] is {}; the weight has {} groups", quote_name(name), k, g, groups));
    out[k] = static_cast<uint32_t>(g);
  }
  return out;
}

const std::array<float, 256>& e4m3_values() noexcept {
  static const std::array<float, 256> table = [] {
    std::array<uint8_t, 256> codes{};
    for (size_t i = 0; i < codes.size(); ++i) codes[i] = static_cast<uint8_t>(i);
    std::array<float, 256> values{};
    convert(Dtype::F8_E4M3, std::as_bytes(std::span(codes)), Dtype::F32,
            std::as_writable_bytes(std::span(values)), codes.size());
    return values;
  }();
  return table;
}

const std::array<float, 256>& e8m0_values() noexcept {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> values{};
    for (int b = 0; b < 256; ++b) values[b] = std::ldexp(1.0f, b - 127);
    return values;
  }();
  return table;
}

std::array<float, 256> e8m0_scales(Dtype stored) noexcept {
  std::array<float, 256> table = e8m0_values();
  if (stored == Dtype::F8_E8M0) table[255] = std::numeric_limits<float>::quiet_NaN();
  return table;
}

std::array<float, 16> e2m1_values(bool negative_zero) noexcept {
  std::array<float, 16> values{};
  for (int code = 0; code < 16; ++code) {
    const int e = (code >> 1) & 3, m = code & 1;  // sign bit 3, exponent bits 1-2, mantissa bit 0
    const float half_m = m ? 0.5f : 0.0f;
    const float magnitude = e == 0 ? half_m : std::ldexp(1.0f + half_m, e - 1);
    values[code] = (code & 8) && (magnitude != 0 || negative_zero) ? -magnitude : magnitude;
  }
  return values;
}

float scale_value(Dtype dtype, const std::byte* element) noexcept {
  uint16_t half = 0;
  float value = 0;
  switch (dtype) {
    case Dtype::F32:
      std::memcpy(&value, element, 4);
      return value;
    case Dtype::BF16:
      std::memcpy(&half, element, 2);
      return bf16_to_f32(half);
    default:  // F16: the detectors admit these three only
      std::memcpy(&half, element, 2);
      return f16_to_f32(half);
  }
}

}  // namespace tlio::detail

// gguf/ggml_grids.hpp: the codebooks of ggml's IQ1, IQ2 and IQ3 types: each index a block stores
// names a row of 8 (or, for IQ3, 4) values. Kept packed (ggml_grids.cpp, generated) and
// unpacked into byte tables on first use.
#pragma once

#include <bit>
#include <cstdint>

namespace tlio::detail {

extern const uint16_t kIq2xxsGridPacked[256];
extern const uint16_t kIq2xsGridPacked[512];
extern const uint16_t kIq2sGridPacked[1024];
extern const uint16_t kIq3xxsGridPacked[256];
extern const uint16_t kIq3sGridPacked[512];
extern const uint16_t kIq1sGridPacked[2048];

/// Row r at [8 r] (IQ2: values 8, 25, 43; IQ1: -1, 0, 1) or [4 r] (IQ3).
const uint8_t* iq2xxs_grid() noexcept;
const uint8_t* iq2xs_grid() noexcept;
const uint8_t* iq2s_grid() noexcept;
const uint8_t* iq3xxs_grid() noexcept;
const uint8_t* iq3s_grid() noexcept;
const int8_t* iq1s_grid() noexcept;

/// IQ2's and IQ3_XXS's signs of 8 values from 7 stored bits: the eighth makes the count of
/// negative values even.
constexpr uint8_t iq2_signs(unsigned seven) noexcept {
  return static_cast<uint8_t>(seven | (std::popcount(seven) & 1u) << 7);
}

}  // namespace tlio::detail

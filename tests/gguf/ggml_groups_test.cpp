// Tests for gguf/ggml_groups.hpp: every type's blocks, as random bytes with finite F16 scales,
// taken apart into codes and group parameters give back ggml's values (ggml_decode, itself checked
// against libggml by ggml_test) through the arithmetic of the layouts that carry them: the f32
// product code * scale plus bias (MLX's affine in F32), and an E2M1 code times an E8M0 or E4M3
// scale. Equal to the bit but for the sign of a zero, which the layouts cannot always keep.
#include "gguf/ggml_groups.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "quant/hub/hub_values.hpp"
#include "tlio/convert.hpp"
#include "tlio/ggml.hpp"

namespace tlio::detail {
namespace {

// E2M1's values with code 8 as -0 (MLX's and compressed-tensors' table).
constexpr float kE2m1[16] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                             -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};

// Random blocks of `type` whose F16 fields are finite (offsets of the F16 fields per type).
std::vector<std::byte> random_blocks(const GgmlType& type, size_t count, std::mt19937& rng) {
  std::vector<std::byte> out(type.block_bytes * count);
  std::uniform_int_distribution<int> byte(0, 255);
  for (auto& b : out) b = std::byte(byte(rng));
  const auto id = static_cast<GgmlTypeId>(type.id);
  std::vector<size_t> halves;  // F16 fields' offsets in a block
  if (id == GgmlTypeId::Q4_0 || id == GgmlTypeId::Q5_0 || id == GgmlTypeId::Q8_0 ||
      id == GgmlTypeId::Q2_0)
    halves = {0};
  else if (id == GgmlTypeId::Q4_1 || id == GgmlTypeId::Q5_1 || id == GgmlTypeId::Q4_K ||
           id == GgmlTypeId::Q5_K)
    halves = {0, 2};
  std::normal_distribution<float> normal(0.0f, 0.01f);
  for (size_t k = 0; k < count; ++k)
    for (size_t at : halves) {
      const uint16_t h = f32_to_f16(normal(rng));
      std::memcpy(&out[k * type.block_bytes + at], &h, 2);
    }
  return out;
}

TEST(GgmlGroups, EveryTypeSplitsIntoTheValuesGgmlDecodes) {
  std::mt19937 rng(7);
  const uint32_t ids[] = {ggml_id(GgmlTypeId::Q4_0),  ggml_id(GgmlTypeId::Q4_1),
                          ggml_id(GgmlTypeId::Q5_0),  ggml_id(GgmlTypeId::Q5_1),
                          ggml_id(GgmlTypeId::Q8_0),  ggml_id(GgmlTypeId::Q4_K),
                          ggml_id(GgmlTypeId::Q5_K),  ggml_id(GgmlTypeId::Q2_0),
                          ggml_id(GgmlTypeId::MXFP4), ggml_id(GgmlTypeId::NVFP4)};
  for (const uint32_t id : ids) {
    const GgmlType type = *ggml_type(id);
    const GgmlGroups* g = ggml_groups(id);
    ASSERT_NE(g, nullptr) << type.name;
    EXPECT_EQ(type.block % g->group, 0u) << type.name;
    constexpr size_t kBlocks = 200;
    const std::vector<std::byte> blocks = random_blocks(type, kBlocks, rng);
    std::vector<float> want(type.block * kBlocks);
    ggml_decode(id, blocks, want);
    const size_t groups = type.block / g->group;
    std::vector<uint8_t> codes(type.block), scale_bytes(groups);
    std::vector<float> scales(groups), biases(groups);
    size_t zero_signs = 0;
    for (size_t k = 0; k < kBlocks; ++k) {
      const auto* block = reinterpret_cast<const u8*>(&blocks[k * type.block_bytes]);
      // ggml reads E8M0 255 as 2^127, MXFP4's NaN elsewhere: never carried (the proof refuses).
      if (id == ggml_id(GgmlTypeId::MXFP4) && block[0] == 255) continue;
      if (g->affine)
        g->affine(block, codes.data(), scales.data(), biases.data());
      else
        g->fp4(block, codes.data(), scale_bytes.data());
      for (size_t j = 0; j < type.block; ++j) {
        ASSERT_LT(codes[j], 1u << g->bits) << type.name;
        const size_t group = j / g->group;
        float got;
        if (g->affine) {
          const float product = static_cast<float>(codes[j]) * scales[group];
          got = product + biases[group];
        } else {
          const float scale = id == ggml_id(GgmlTypeId::MXFP4) ? e8m0_values()[scale_bytes[group]]
                                                               : e4m3_values()[scale_bytes[group]];
          got = kE2m1[codes[j]] * scale;
        }
        const float w = want[k * type.block + j];
        // ggml's NVFP4 scale 0xFF is 480, past E4M3's 448: never carried (the proof refuses).
        if (id == ggml_id(GgmlTypeId::NVFP4) && block[group] == 0xFF) continue;
        if (got == 0.0f && w == 0.0f) {
          if (std::signbit(got) != std::signbit(w)) ++zero_signs;
          continue;
        }
        ASSERT_EQ(std::memcmp(&got, &w, 4), 0)
            << type.name << " block " << k << " value " << j << ": " << got << " vs " << w;
      }
    }
    // Offsets times a negative d give ggml -0 where the carried arithmetic gives +0; FP4's
    // zeros are +0 on both sides.
    if (g->fp4) {
      EXPECT_EQ(zero_signs, 0u) << type.name;
    }
  }
}

TEST(GgmlGroups, TypesWithoutMlxGroupsAreNotCarried) {
  for (const GgmlTypeId id :
       {GgmlTypeId::Q2_K, GgmlTypeId::Q3_K, GgmlTypeId::Q6_K, GgmlTypeId::IQ4_NL,
        GgmlTypeId::IQ4_XS, GgmlTypeId::TQ1_0, GgmlTypeId::F16, GgmlTypeId::Q1_0})
    EXPECT_EQ(ggml_groups(ggml_id(id)), nullptr) << ggml_type(ggml_id(id))->name;
}

}  // namespace
}  // namespace tlio::detail

// Tests for tlio/ggml.hpp against ggml itself: libggml-base.so from npm's
// @node-llama-cpp/linux-x64 (llama.cpp's prebuilt release, installed into build/npm by
// scripts/install-deps.sh; TLIO_GGML_LIBRARY overrides the path), opened at run time. Each type's
// blocks, made by ggml's own reference quantizer from random normals and also as random bytes
// with finite scales, decode to the same float bits in tlio as in ggml's dequantize_row_*.
#include "tlio/ggml.hpp"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "test_util.hpp"
#include "tlio/convert.hpp"
#include "tlio/error.hpp"

namespace tlio {
namespace {

using QuantizeRow = void (*)(const float*, void*, int64_t);
using DequantizeRow = void (*)(const void*, float*, int64_t);

void* ggml_library() {
  static void* handle = [] {
    const char* env = std::getenv("TLIO_GGML_LIBRARY");
    const std::string path = env ? env
                                 : (test::data_dir() /
                                    "../../build/npm/node_modules/@node-llama-cpp/linux-x64/"
                                    "bins/linux-x64/libggml-base.so")
                                       .string();
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h)
      ADD_FAILURE() << "ggml's library is not at " << path << " (" << dlerror()
                    << "): run `bash scripts/install-deps.sh`";
    return h;
  }();
  return handle;
}

template <class F>
F symbol(const std::string& name) {
  void* lib = ggml_library();
  return lib ? reinterpret_cast<F>(dlsym(lib, name.c_str())) : nullptr;
}

// A type, ggml's name for its functions, and where its fp16 scales sit in a block (for random
// bytes: a NaN or infinite scale would only test NaN propagation).
struct Case {
  const char* type;
  const char* ggml;
  std::vector<int> half_offsets;
  bool f32_scale_at_0 = false;
  bool d_in_scale_nibbles = false;  // IQ1_M: d's 16 bits are the top nibbles of 4 scale words
  // The codebook types: ggml's quantizers for them need ggml_quantize_init and an importance
  // matrix, so random bytes only.
  bool random_only = false;
};

const Case kCases[] = {
    {"Q4_0", "q4_0", {0}},
    {"Q4_1", "q4_1", {0, 2}},
    {"Q5_0", "q5_0", {0}},
    {"Q5_1", "q5_1", {0, 2}},
    {"Q8_0", "q8_0", {0}},
    {"Q2_K", "q2_K", {80, 82}},
    {"Q3_K", "q3_K", {108}},
    {"Q4_K", "q4_K", {0, 2}},
    {"Q5_K", "q5_K", {0, 2}},
    {"Q6_K", "q6_K", {208}},
    {"Q8_K", "q8_K", {}, true},
    {"IQ4_NL", "iq4_nl", {0}},
    {"IQ4_XS", "iq4_xs", {0}},
    {"TQ1_0", "tq1_0", {52}},
    {"TQ2_0", "tq2_0", {64}},
    {"MXFP4", "mxfp4", {}},
    {"NVFP4", "nvfp4", {}},
    {"Q1_0", "q1_0", {0}},
    {"Q2_0", "q2_0", {0}},
    {"IQ2_XXS", "iq2_xxs", {0}, false, false, true},
    {"IQ2_XS", "iq2_xs", {0}, false, false, true},
    {"IQ2_S", "iq2_s", {0}, false, false, true},
    {"IQ3_XXS", "iq3_xxs", {0}, false, false, true},
    {"IQ3_S", "iq3_s", {0}, false, false, true},
    {"IQ1_S", "iq1_s", {0}, false, false, true},
    {"IQ1_M", "iq1_m", {}, false, true, true},
};

class GgmlDecode : public ::testing::TestWithParam<Case> {};

void expect_same_bits(const std::vector<float>& ours, const std::vector<float>& theirs,
                      const char* what) {
  ASSERT_EQ(ours.size(), theirs.size());
  size_t differ = 0, first = 0;
  for (size_t i = 0; i < ours.size(); ++i)
    if (std::memcmp(&ours[i], &theirs[i], 4) != 0 && differ++ == 0) first = i;
  EXPECT_EQ(differ, 0u) << what << ": first at element " << first << ": tlio " << ours[first]
                        << ", ggml " << theirs[first];
}

TEST_P(GgmlDecode, MatchesGgmlBitForBit) {
  const Case& c = GetParam();
  const GgmlType type = *ggml_type_named(c.type);
  ASSERT_TRUE(ggml_decodes(type.id));
  const auto dequantize = symbol<DequantizeRow>(std::string("dequantize_row_") + c.ggml);
  ASSERT_NE(dequantize, nullptr) << "ggml has no dequantize_row_" << c.ggml;

  constexpr size_t kBlocks = 512;
  const size_t n = kBlocks * type.block;
  std::mt19937 rng(type.id);
  std::vector<std::byte> blocks(kBlocks * type.block_bytes);

  // Blocks from ggml's reference quantizer (Q8_K and the rest that have one), over normals
  // with a zero block and a constant block among them.
  if (const auto quantize =
          c.random_only ? nullptr
                        : symbol<QuantizeRow>(std::string("quantize_row_") + c.ggml + "_ref")) {
    std::normal_distribution<float> normal(0.0f, 0.02f);
    std::vector<float> x(n);
    for (float& v : x) v = normal(rng);
    std::fill_n(x.begin(), type.block, 0.0f);
    std::fill_n(x.begin() + type.block, type.block, 0.5f);
    quantize(x.data(), blocks.data(), static_cast<int64_t>(n));
    std::vector<float> ours(n), theirs(n);
    ggml_decode(type.id, blocks, ours);
    dequantize(blocks.data(), theirs.data(), static_cast<int64_t>(n));
    expect_same_bits(ours, theirs, "ggml-quantized blocks");
  }

  // Random bytes: every code and scale pattern, with finite scales.
  std::uniform_int_distribution<int> byte(0, 255);
  std::normal_distribution<float> scale(0.0f, 0.01f);
  for (auto& b : blocks) b = static_cast<std::byte>(byte(rng));
  for (size_t i = 0; i < kBlocks; ++i) {
    std::byte* block = blocks.data() + i * type.block_bytes;
    for (int at : c.half_offsets) {
      const uint16_t h = f32_to_f16(scale(rng));
      std::memcpy(block + at, &h, 2);
    }
    if (c.f32_scale_at_0) {
      const float f = scale(rng);
      std::memcpy(block, &f, 4);
    }
    if (c.d_in_scale_nibbles) block[55] &= std::byte{0xBF};  // d's exponent never all ones
  }
  std::vector<float> ours(n), theirs(n);
  ggml_decode(type.id, blocks, ours);
  dequantize(blocks.data(), theirs.data(), static_cast<int64_t>(n));
  expect_same_bits(ours, theirs, "random blocks");
}

INSTANTIATE_TEST_SUITE_P(Types, GgmlDecode, ::testing::ValuesIn(kCases),
                         [](const auto& p) { return std::string(p.param.type); });

TEST(Ggml, PlainTypesConvertAsCasts) {
  const std::vector<int16_t> ints = {-32768, -1, 0, 7, 32767};
  std::vector<float> out(ints.size());
  ggml_decode(ggml_type_named("I16")->id, std::as_bytes(std::span(ints)), out);
  EXPECT_EQ(out, (std::vector<float>{-32768, -1, 0, 7, 32767}));
  EXPECT_EQ(ggml_plain_dtype(30), Dtype::BF16);
  EXPECT_FALSE(ggml_plain_dtype(12).has_value());
}

TEST(Ggml, TypesByName) {
  EXPECT_EQ(ggml_type_named("q4_k")->id, 12u);
  EXPECT_EQ(ggml_type_named("BF16")->id, 30u);
  EXPECT_FALSE(ggml_type_named("Q4_K_M").has_value());
}

TEST(Ggml, ATypeNotDecodedIsRefusedByName) {
  const GgmlType q8_1 = *ggml_type_named("Q8_1");  // an activation type ggml does not decode
  EXPECT_FALSE(ggml_decodes(q8_1.id));
  EXPECT_TRUE(ggml_decodes(ggml_type_named("IQ2_XXS")->id));
  std::vector<std::byte> block(q8_1.block_bytes);
  std::vector<float> out(q8_1.block);
  try {
    ggml_decode(q8_1.id, block, out);
    FAIL() << "decoded Q8_1";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported);
    EXPECT_NE(std::string(e.what()).find("Q8_1"), std::string::npos) << e.what();
  }
}

TEST(Ggml, SizesMustMatch) {
  std::vector<std::byte> block(18);
  std::vector<float> out(32);
  EXPECT_NO_THROW(ggml_decode(2, block, out));
  std::vector<float> partial(16);
  EXPECT_THROW(ggml_decode(2, block, partial), Error);  // half a block
  std::vector<std::byte> short_block(17);
  EXPECT_THROW(ggml_decode(2, short_block, out), Error);
}

}  // namespace
}  // namespace tlio

namespace tlio {
namespace {

// ggml's reference quantizer and tlio's, on the same values, must write the same bytes.
class GgmlEncode : public ::testing::TestWithParam<Case> {};

TEST_P(GgmlEncode, MatchesGgmlsReferenceQuantizerByteForByte) {
  const Case& c = GetParam();
  const GgmlType type = *ggml_type_named(c.type);
  ASSERT_TRUE(ggml_encodes(type.id));
  const auto quantize = symbol<QuantizeRow>(std::string("quantize_row_") + c.ggml + "_ref");
  ASSERT_NE(quantize, nullptr);
  constexpr size_t kBlocks = 2048;
  const size_t n = kBlocks * type.block;
  std::mt19937 rng(type.id + 100);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> x(n);
  // Blocks of normals at scales from 1e-6 to 1e3, uniform blocks, blocks with one outlier, zero
  // and constant blocks, and blocks on a coarse grid (exact .5 ties for the roundings).
  for (size_t b = 0; b < kBlocks; ++b) {
    float* v = x.data() + b * type.block;
    const float scale = std::pow(10.0f, static_cast<float>(b % 10) - 6.0f);
    for (uint32_t j = 0; j < type.block; ++j) {
      switch (b % 7) {
        case 0:
          v[j] = 0.0f;
          break;
        case 1:
          v[j] = 0.25f;
          break;
        case 2:
          v[j] = uniform(rng) * scale;
          break;
        case 3:
          v[j] = static_cast<float>(static_cast<int>(uniform(rng) * 8)) * 0.125f;
          break;
        default:
          v[j] = normal(rng) * scale;
      }
    }
    if (b % 7 == 4) v[b % type.block] = 50.0f * scale;
  }
  // A block of exact halves under a unit scale (largest 127 for Q8_0): roundf's ties away from
  // zero.
  for (uint32_t j = 0; j < type.block; ++j)
    x[5 * type.block + j] = static_cast<float>(j % 32) - 15.5f;
  x[5 * type.block] = 127.0f;
  // A block of tiny values (a subnormal scale) whose 1 / d overflows: what ggml writes for them.
  for (uint32_t j = 0; j < type.block; ++j)
    x[12 * type.block + j] = (j % 2 ? -1.0f : 1.0f) * 1e-40f * static_cast<float>(j + 1);
  std::vector<std::byte> ours(kBlocks * type.block_bytes), theirs(ours.size());
  ggml_encode(type.id, x, ours);
  quantize(x.data(), theirs.data(), static_cast<int64_t>(n));
  size_t differ = 0, first = 0;
  for (size_t b = 0; b < kBlocks; ++b)
    if (std::memcmp(ours.data() + b * type.block_bytes, theirs.data() + b * type.block_bytes,
                    type.block_bytes) != 0 &&
        differ++ == 0)
      first = b;
  EXPECT_EQ(differ, 0u) << differ << " of " << kBlocks << " blocks differ, the first block "
                        << first;
}

const Case kEncoded[] = {
    {"Q4_0", "q4_0", {}}, {"Q4_1", "q4_1", {}}, {"Q5_0", "q5_0", {}}, {"Q5_1", "q5_1", {}},
    {"Q8_0", "q8_0", {}}, {"Q2_K", "q2_K", {}}, {"Q3_K", "q3_K", {}}, {"Q4_K", "q4_K", {}},
    {"Q5_K", "q5_K", {}}, {"Q6_K", "q6_K", {}},
};
INSTANTIATE_TEST_SUITE_P(Types, GgmlEncode, ::testing::ValuesIn(kEncoded),
                         [](const auto& p) { return std::string(p.param.type); });

TEST(Ggml, EncodesPlainTypesAndRefusesOthers) {
  const std::vector<float> x = {1.0f, -2.5f, 3.140625f};
  std::vector<std::byte> bf16(6);
  ggml_encode(30, x, bf16);
  uint16_t first;
  std::memcpy(&first, bf16.data(), 2);
  EXPECT_EQ(first, 0x3F80);
  EXPECT_FALSE(ggml_encodes(ggml_type_named("IQ2_XXS")->id));
  std::vector<float> block(256);
  std::vector<std::byte> out(66);
  EXPECT_THROW(ggml_encode(ggml_type_named("IQ2_XXS")->id, block, out), Error);
  std::vector<std::byte> wrong(10);
  EXPECT_THROW(ggml_encode(8, std::span(block).first(32), wrong), Error);
}

}  // namespace
}  // namespace tlio

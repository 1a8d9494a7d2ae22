// Tests for quant/mlx/: mx.quantize's affine group in its special cases (the edge that lands
// exactly, constant and zero groups, ties), the bit stream codes are packed in, and detection:
// bits and group from config.json or from shapes alone, the modes told apart by their shapes,
// and the layouts refused by name. Values against MLX itself: python/tests/test_mlx.py.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "quant/hub/hub_values.hpp"
#include "quant/mlx/mlx_kernels.hpp"
#include "quant/mlx/mlx_layout.hpp"
#include "quant/schemes.hpp"
#include "tlio/error.hpp"
#include "tlio/file.hpp"
#include "tlio/writer.hpp"

namespace tlio::detail {
namespace {

struct Group {
  float scale, bias;
  std::vector<uint8_t> codes;
};

Group quantized(std::vector<float> values, unsigned bits) {
  Group g{0, 0, std::vector<uint8_t>(values.size())};
  mlx_affine_group(values.data(), values.size(), bits, g.scale, g.bias, g.codes.data());
  return g;
}

TEST(MlxAffine, TheEdgeOfLargerMagnitudeIsTheBiasAndLandsExactly) {
  // max 3 >= |min| 0: bias 3, scale negative, codes counting down to the max.
  const Group up = quantized({0, 1, 2, 3}, 2);
  EXPECT_EQ(up.bias, 3.0f);
  EXPECT_EQ(up.scale, -1.0f);
  EXPECT_EQ(up.codes, (std::vector<uint8_t>{3, 2, 1, 0}));
  // |min| larger: bias the min, scale positive.
  const Group down = quantized({-4, -1, 0, 2}, 2);
  EXPECT_EQ(down.bias, -4.0f);
  EXPECT_EQ(down.scale, 2.0f);
  EXPECT_EQ(down.codes, (std::vector<uint8_t>{0, 2, 2, 3}));  // rint(1.5) = 2, rint(2) = 2
  // A tie takes the max.
  EXPECT_EQ(quantized({-2, 2}, 4).bias, 2.0f);
}

TEST(MlxAffine, ConstantAndZeroGroups) {
  const Group constant = quantized({0.25f, 0.25f, 0.25f}, 4);
  EXPECT_EQ(constant.bias, 0.25f);
  EXPECT_LT(constant.scale, 0.0f);  // +-1e-7 bent to land the edge: 0.25 / rint(0.25 / -1e-7)
  EXPECT_EQ(constant.codes, (std::vector<uint8_t>{0, 0, 0}));
  const Group zero = quantized({0, 0}, 8);
  EXPECT_EQ(zero.bias, 0.0f);
  EXPECT_EQ(zero.scale, -kMlxAffineEps);
  EXPECT_EQ(zero.codes, (std::vector<uint8_t>{0, 0}));
}

TEST(MlxPack, ALittleEndianBitStreamAcrossWords) {
  for (unsigned bits : {2u, 3u, 4u, 5u, 6u, 8u}) {
    std::vector<uint8_t> codes(64);
    for (size_t i = 0; i < codes.size(); ++i)
      codes[i] = static_cast<uint8_t>((i * 7 + 3) % (1u << bits));
    std::vector<uint32_t> words(codes.size() * bits / 32, 0);
    mlx_pack(codes.data(), 40, bits, 0, words.data());  // in two calls, as groups are
    mlx_pack(codes.data() + 40, 24, bits, 40 * bits, words.data());
    const auto* stream = reinterpret_cast<const std::byte*>(words.data());
    for (size_t i = 0; i < codes.size(); ++i)
      EXPECT_EQ(field(stream, 1, i, bits), codes[i]) << bits << " bits, code " << i;
    std::vector<uint8_t> back(29);  // unpacked from an odd code to the row's very end
    mlx_unpack(stream, 35, back.size(), bits, back.data());
    EXPECT_TRUE(std::equal(back.begin(), back.end(), codes.begin() + 35)) << bits << " bits";
  }
  // 3 bits: code 10 takes bits 30..32, the last one in the next word.
  std::vector<uint8_t> codes(11, 0);
  codes[10] = 0b111;
  uint32_t words[2] = {0, 0};
  mlx_pack(codes.data(), codes.size(), 3, 0, words);
  EXPECT_EQ(words[0], 0xC0000000u);
  EXPECT_EQ(words[1], 1u);
}

TEST(MlxFp, Fp4TiesGoToTheSmallerMagnitudeAndNeverMinusZero) {
  // Midpoints: 0.25 -> 0, 0.75 -> 0.5, 1.25 -> 1, 1.75 -> 1.5, 2.5 -> 2, 3.5 -> 3, 5 -> 4.
  const std::pair<float, uint8_t> cases[] = {
      {0.25f, 0}, {0.75f, 1},  {1.25f, 2}, {1.75f, 3}, {2.5f, 4},   {3.5f, 5},  {5.0f, 6},
      {5.01f, 7}, {100.0f, 7}, {-0.2f, 0}, {-0.3f, 9}, {-6.0f, 15}, {-0.0f, 0}, {0.26f, 1}};
  for (const auto& [x, code] : cases) EXPECT_EQ(mlx_fp4_code(x), code) << x;
}

TEST(MlxFp, Fp8ToNearestEvenSaturating) {
  EXPECT_EQ(mlx_fp8_byte(0.0f), 0x00);
  EXPECT_EQ(mlx_fp8_byte(-0.0f), 0x80);
  EXPECT_EQ(mlx_fp8_byte(0.001953125f), 0x01);       // 2^-9, the smallest subnormal
  EXPECT_EQ(mlx_fp8_byte(0.0009765625f), 0x00);      // 2^-10: a tie, to even 0
  EXPECT_EQ(mlx_fp8_byte(3 * 0.0009765625f), 0x02);  // 1.5 x 2^-9: a tie, to even 2
  EXPECT_EQ(mlx_fp8_byte(1.0f), 0x38);
  EXPECT_EQ(mlx_fp8_byte(1.0625f), 0x38);  // between 1 and 1.125: even 1
  EXPECT_EQ(mlx_fp8_byte(1.1875f), 0x3A);  // between 1.125 and 1.25: even 1.25
  EXPECT_EQ(mlx_fp8_byte(432.0f), 0x7E);   // between 416 and 448: even 448
  EXPECT_EQ(mlx_fp8_byte(1e6f), 0x7E);
  EXPECT_EQ(mlx_fp8_byte(-std::numeric_limits<float>::infinity()), 0xFE);
  EXPECT_EQ(mlx_fp8_byte(std::numeric_limits<float>::quiet_NaN()), 0x7E);
  for (unsigned c = 0; c < 0x7F; ++c)  // every code's own value comes back as it
    EXPECT_EQ(mlx_fp8_byte(e4m3_values()[c]), c) << c;
}

TEST(MlxFp, MxExponentRoundsTheScaleUp) {
  EXPECT_EQ(mlx_mx_exponent(6.0f, 6.0f, Dtype::F32), 0);   // s = 1: 2^0
  EXPECT_EQ(mlx_mx_exponent(6.5f, 6.0f, Dtype::F32), 1);   // s just above 1: up to 2^1
  EXPECT_EQ(mlx_mx_exponent(3.0f, 6.0f, Dtype::F32), -1);  // s = 0.5 exactly
  EXPECT_EQ(mlx_mx_exponent(0.0f, 6.0f, Dtype::F32), 0);   // a zero group
  EXPECT_EQ(mlx_mx_exponent(448.0f, 448.0f, Dtype::BF16), 0);
  // s rounded to T first: 6 * (1 + 2^-10) / 6 is 1 in BF16 (8 bits), not in F32.
  EXPECT_EQ(mlx_mx_exponent(6.0f * (1 + 0x1p-10f), 6.0f, Dtype::BF16), 0);
  EXPECT_EQ(mlx_mx_exponent(6.0f * (1 + 0x1p-10f), 6.0f, Dtype::F32), 1);
}

// A file of the tensors given (contents zero) as one set with `config` as its quantization.
struct Tensors {
  std::vector<std::tuple<std::string, Dtype, Shape>> specs;
  File file() const {
    Writer w = Writer::to_memory();
    for (const auto& [name, dtype, shape] : specs) w.declare(name, dtype, shape);
    for (const auto& [name, dtype, shape] : specs) {
      uint64_t n = 1;
      for (uint64_t d : shape) n *= d;
      w.write(name, std::vector<std::byte>(bytes_for(dtype, n)));
    }
    w.commit();
    return File::from_bytes(w.take_bytes());
  }
};

std::vector<QuantizedWeight> found(const Tensors& t, std::string config = {}) {
  const File f = t.file();
  TensorSet set({&f});
  set.set_quantization_config(std::move(config));
  return detect_mlx(set);
}

std::string refusal(const Tensors& t, std::string config = {}) {
  try {
    found(t, std::move(config));
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "accepted";
  return {};
}

const std::string kModule = "model.layers.0.mlp.up_proj";

// 4 bits in groups of 64 over 128 inputs: 16 words and 2 groups a row.
Tensors affine(Dtype scales = Dtype::F16, Shape words = {3, 16}, Shape groups = {3, 2}) {
  return {{{kModule + ".weight", Dtype::U32, words},
           {kModule + ".scales", scales, groups},
           {kModule + ".biases", scales, groups}}};
}

TEST(MlxLayout, BitsAndGroupFromConfigOrShapes) {
  // 512 bits over 2 groups: 4 bits in 64s, 8 in 32s or 2 in 128s; the config says which.
  const auto w = found(affine(), R"({"group_size": 64, "bits": 4, "mode": "affine"})");
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].name, kModule + ".weight");
  EXPECT_EQ(w[0].scheme.name(), "mlx-affine-4bit-g64");
  EXPECT_EQ(w[0].shape, (Shape{3, 128}));
  EXPECT_EQ(w[0].dtype, Dtype::F16);
  // A module's own entry first; a width the shapes refuse gives way to one with its group.
  const std::string own =
      R"({"group_size": 64, "bits": 4, ")" + kModule + R"(": {"group_size": 32, "bits": 8}})";
  EXPECT_EQ(found(affine(), own)[0].scheme.name(), "mlx-affine-8bit-g32");
  EXPECT_EQ(found(affine(), R"({"group_size": 128, "bits": 4})")[0].scheme.name(),
            "mlx-affine-2bit-g128");
  // No config: only shapes that fit one pair are read (3 bits: 384 bits over 2 groups = 3 x 64
  // or 6 x 32: two again; 5 bits in 64s: 640 over 2 = 320 = 5 x 64 only).
  EXPECT_NE(refusal(affine()).find("config.json's quantization says which"), std::string::npos);
  EXPECT_EQ(found(affine(Dtype::BF16, {3, 20}))[0].scheme.name(), "mlx-affine-5bit-g64");
  // Experts stacked [E, out, in] keep their leading dimensions.
  EXPECT_EQ(found(affine(Dtype::F32, {2, 3, 20}, {2, 3, 2}))[0].shape, (Shape{2, 3, 128}));
}

TEST(MlxLayout, ModesFromTheirShapes) {
  const auto mode = [](Shape words, Shape groups) {
    return found(
        {{{kModule + ".weight", Dtype::U32, words}, {kModule + ".scales", Dtype::U8, groups}}})[0];
  };
  EXPECT_EQ(mode({2, 16}, {2, 4}).scheme.name(), "mlx-mxfp4");  // 128 inputs in 32s
  EXPECT_EQ(mode({2, 32}, {2, 4}).scheme.name(), "mlx-mxfp8");
  EXPECT_EQ(mode({2, 16}, {2, 8}).scheme.name(), "mlx-nvfp4");  // in 16s
  EXPECT_EQ(mode({2, 16}, {2, 8}).dtype, Dtype::BF16);          // mx.dequantize's
}

TEST(MlxLayout, RefusedByName) {
  const auto says = [](const Tensors& t, const char* what, std::string config = {}) {
    const std::string e = refusal(t, std::move(config));
    EXPECT_NE(e.find(what), std::string::npos) << e;
    EXPECT_NE(e.find(kModule), std::string::npos) << e;
  };
  says(affine(Dtype::F16, {3, 16}, {2, 2}), "share every dimension but the last");
  says({{{kModule + ".weight", Dtype::U32, {3, 16}}, {kModule + ".scales", Dtype::F16, {3, 2}}}},
       "no");  // no biases
  says({{{kModule + ".weight", Dtype::U32, {3, 16}},
         {kModule + ".scales", Dtype::F16, {3, 2}},
         {kModule + ".biases", Dtype::F32, {3, 2}}}},
       "its scales are F16");
  says(affine(Dtype::F16, {3, 7}), "fits no MLX affine width and group");
  says({{{kModule + ".weight", Dtype::U32, {2, 16}}, {kModule + ".scales", Dtype::U8, {2, 3}}}},
       "not MLX's mxfp4, mxfp8 or nvfp4");
  says({{{kModule + ".weight", Dtype::U32, {2, 16}}, {kModule + ".scales", Dtype::I32, {2, 4}}}},
       "MLX's scales are");
  says({{{kModule + ".weight", Dtype::U32, {2, 16}},
         {kModule + ".scales", Dtype::U8, {2, 8}},
         {kModule + ".global_scale", Dtype::F32, {1}}}},
       "global scale");
  says({{{kModule + ".weight", Dtype::U32, {2, 16}}, {kModule + ".scales", Dtype::U8, {2, 4}}}},
       "config.json says nvfp4", R"({"group_size": 16, "bits": 4, "mode": "nvfp4"})");
  EXPECT_NE(refusal(affine(), R"({"group_size": 64, "bits": 4, "mode": "bitnet"})")
                .find("quantization mode \"bitnet\""),
            std::string::npos);
  // A U32 weight without MLX's scales is another format's (or plain): not taken.
  EXPECT_TRUE(found({{{kModule + ".weight", Dtype::U32, {2, 16}}}}).empty());
}

}  // namespace
}  // namespace tlio::detail

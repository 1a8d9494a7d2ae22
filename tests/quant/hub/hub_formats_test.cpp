// Tests for quant/hub/: detection and consistency checks of the Hub's formats (the shapes that
// are refused and why, block sizes inferred, the config's say), and that a decoder reads any
// range as the same values as the whole. Values against an independent reference:
// python/tests/test_hub_quant.py.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "quant/tensor_set.hpp"
#include "tlio/error.hpp"
#include "tlio/file.hpp"
#include "tlio/quant.hpp"
#include "tlio/writer.hpp"

namespace tlio {
namespace {

struct Spec {
  std::string name;
  Dtype dtype;
  Shape shape;
  std::vector<int64_t> values = {};  // I64 contents (a weight_shape), else a pattern
};

uint64_t count(const Shape& s) {
  uint64_t n = 1;
  for (uint64_t d : s) n *= d;
  return n;
}

// A file of the tensors given, their bytes a fixed pattern (F16 scales: 1.0, I32 g_idx: 0).
File file_of(const std::vector<Spec>& specs) {
  Writer w = Writer::to_memory();
  for (const Spec& s : specs) w.declare(s.name, s.dtype, s.shape);
  for (const Spec& s : specs) {
    std::vector<std::byte> data(bytes_for(s.dtype, count(s.shape)));
    for (size_t i = 0; i < data.size(); ++i) data[i] = std::byte(static_cast<uint8_t>(i * 37 + 11));
    if (s.dtype == Dtype::F16)
      for (size_t i = 0; i + 1 < data.size(); i += 2)
        data[i] = std::byte{0}, data[i + 1] = std::byte{0x3C};
    if (s.name.ends_with(".g_idx")) std::fill(data.begin(), data.end(), std::byte{0});
    if (!s.values.empty()) std::memcpy(data.data(), s.values.data(), data.size());
    w.write(s.name, data);
  }
  w.commit();
  return File::from_bytes(w.take_bytes());
}

std::vector<QuantizedWeight> found(const File& f, std::string config = {}) {
  detail::TensorSet set({&f});
  set.set_quantization_config(std::move(config));
  return detail::find_quantized_weights(set);
}

// The error finding `f`'s weights throws: "<code>: <message>".
std::string refusal(const File& f, std::string config = {}) {
  try {
    found(f, std::move(config));
  } catch (const Error& e) {
    std::string what = e.what();  // without the rule's "quant: "
    if (what.starts_with("quant: ")) what.erase(0, 7);
    return std::string(e.code() == ErrorCode::unsupported ? "unsupported: " : "format: ") + what;
  }
  return "accepted";
}

TEST(HubFormats, Fp8BlockGridsAndTheirBlockSizes) {
  // DeepSeek's kv_a_proj_with_mqa: [576, 7168] in 128 x 128 blocks is a [5, 56] grid.
  const File deepseek = file_of(
      {{"a.weight", Dtype::F8_E4M3, {576, 7168}}, {"a.weight_scale_inv", Dtype::F32, {5, 56}}});
  EXPECT_EQ(found(deepseek).at(0).scheme.name(), "fp8-block128x128");
  EXPECT_EQ(found(deepseek).at(0).dtype, Dtype::BF16);
  // The config's block size wins, and is checked.
  const File small = file_of(
      {{"a.weight", Dtype::F8_E4M3, {64, 64}}, {"a.weight_scale_inv", Dtype::BF16, {2, 2}}});
  EXPECT_EQ(
      found(small, R"({"quant_method":"fp8","weight_block_size":[32,32]})").at(0).scheme.name(),
      "fp8-block32x32");
  EXPECT_EQ(
      refusal(small, R"({"quant_method":"fp8","weight_block_size":[128,128]})"),
      "format: \"a.weight_scale_inv\" is [2, 2]; [64, 64] blocks of 128x128 (quantization_config) "
      "need [1, 1]");
  // Without a config the grid implies the block; one that no block tiles is refused.
  EXPECT_EQ(found(small).at(0).scheme.name(), "fp8-block32x32");
  // transformers' scale_fmt "ue8m0": the grid's scales are E8M0 powers of two.
  const File ue8m0 = file_of(
      {{"a.weight", Dtype::F8_E4M3, {64, 64}}, {"a.weight_scale_inv", Dtype::F8_E8M0, {2, 2}}});
  EXPECT_EQ(found(ue8m0).at(0).scheme.name(), "fp8-block32x32-ue8m0");
  EXPECT_EQ(found(ue8m0).at(0).dtype, Dtype::BF16);
  const File odd =
      file_of({{"a.weight", Dtype::F8_E4M3, {10, 10}}, {"a.weight_scale_inv", Dtype::F32, {6, 1}}});
  EXPECT_EQ(refusal(odd),
            "format: \"a.weight_scale_inv\" is [6, 1]: no block size tiles the [10, 10] weight "
            "into that grid");
  // weight_scale: per channel, per group, in the scale's dtype.
  const File channel =
      file_of({{"a.weight", Dtype::F8_E4M3, {8, 64}}, {"a.weight_scale", Dtype::F16, {8, 1}}});
  EXPECT_EQ(found(channel).at(0).scheme.name(), "fp8-channel");
  EXPECT_EQ(found(channel).at(0).dtype, Dtype::F16);
  const File group =
      file_of({{"a.weight", Dtype::F8_E4M3, {8, 64}}, {"a.weight_scale", Dtype::BF16, {8, 2}}});
  EXPECT_EQ(found(group).at(0).scheme.name(), "fp8-group32");
}

TEST(HubFormats, Fp8PartsThatDoNotFitAreRefused) {
  // A shard read alone may hold scales without their weights; a plain weight beside a scale
  // (compressed-tensors' dense checkpoints) is plain.
  EXPECT_TRUE(found(file_of({{"a.weight_scale_inv", Dtype::F32, {1, 1}}})).empty());
  EXPECT_TRUE(
      found(file_of({{"a.weight", Dtype::BF16, {4, 4}}, {"a.weight_scale", Dtype::F32, {1}}}))
          .empty());
  EXPECT_EQ(refusal(file_of({{"a.weight", Dtype::F8_E4M3, {0, 256}},
                             {"a.weight_scale_inv", Dtype::F32, {1, 2}}})),
            "format: \"a.weight\" is [0, 256]: an empty FP8 weight with more than one scale");
  EXPECT_NE(refusal(file_of({{"a.weight", Dtype::F8_E4M3, {4, 4}},
                             {"a.weight_scale", Dtype::F32, {1}},
                             {"a.weight_zero_point", Dtype::F32, {1}}}))
                .find("unsupported: \"a.weight\" has \"a.weight_zero_point\""),
            std::string::npos);
  EXPECT_EQ(refusal(file_of({{"a.weight", Dtype::F8_E4M3, {4, 4}},
                             {"a.weight_scale", Dtype::F32, {1}},
                             {"a.weight_scale_inv", Dtype::F32, {1, 1}}})),
            "format: \"a.weight\" is stored twice, as fp8-tensor and as fp8-block128x128");
  EXPECT_EQ(refusal(file_of(
                {{"a.weight", Dtype::BF16, {4, 4}}, {"a.weight_scale_inv", Dtype::F32, {1, 1}}})),
            "format: \"a.weight_scale_inv\" scales F8_E4M3 weights; \"a.weight\" is BF16");
  EXPECT_EQ(
      refusal(
          file_of({{"a.weight", Dtype::F8_E4M3, {4, 4}}, {"a.weight_scale", Dtype::I32, {4, 1}}})),
      "format: \"a.weight_scale\" is I32; FP8 scales are F32, BF16 or F16 (or E8M0 per 32 inputs or per block)");
  // E8M0 bytes per 32 inputs: MXFP8, whose grid must cover the row.
  const auto mx = found(
      file_of({{"a.weight", Dtype::F8_E4M3, {4, 33}}, {"a.weight_scale", Dtype::U8, {4, 2}}}));
  EXPECT_EQ(mx.at(0).scheme.name(), "mxfp8");
  EXPECT_EQ(mx.at(0).dtype, Dtype::BF16);
  EXPECT_EQ(
      refusal(
          file_of({{"a.weight", Dtype::F8_E4M3, {4, 64}}, {"a.weight_scale", Dtype::U8, {4, 1}}})),
      "format: \"a.weight_scale\" is [4, 1]; the E8M0 scales of a [4, 64] MXFP8 weight are [4, 2]");
}

std::vector<Spec> gptq(uint64_t bits, uint64_t in, uint64_t out, uint64_t groups) {
  return {{"l.qweight", Dtype::I32, {in * bits / 32, out}},
          {"l.qzeros", Dtype::I32, {groups, out * bits / 32}},
          {"l.scales", Dtype::F16, {groups, out}}};
}

TEST(HubFormats, GptqAndAwqAreToldApartAndChecked) {
  const File g3 = file_of(gptq(3, 64, 32, 4));
  const auto w = found(g3);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].scheme.name(), "gptq-3bit-g16");
  EXPECT_EQ(w[0].shape, (Shape{32, 64}));
  EXPECT_EQ(w[0].name, "l.weight");
  EXPECT_EQ(
      found(g3, R"({"quant_method":"gptq","bits":3,"group_size":16,"checkpoint_format":"gptq_v2"})")
          .at(0)
          .scheme.name(),
      "gptq-3bit-g16-v2");
  EXPECT_EQ(refusal(g3, R"({"quant_method":"awq"})"),
            "format: \"l.qweight\" is laid out as GPTQ but quant_method is \"awq\"");
  EXPECT_EQ(refusal(g3, R"({"quant_method":"gptq","bits":3,"group_size":32})"),
            "format: \"l.scales\" has 4 groups; 64 inputs in groups of 32 need 2");
  // 304 inputs in 3 groups: 102 or 128 a group? Only the config can say.
  EXPECT_EQ(
      refusal(file_of({{"l.qweight", Dtype::I32, {38, 8}},
                       {"l.qzeros", Dtype::I32, {3, 1}},
                       {"l.scales", Dtype::F16, {3, 8}}})),
      "format: \"l.scales\" has 3 groups of 304 inputs, which no group size tells apart without "
      "the model's quantization_config");
  // Zero points too narrow for the outputs.
  std::vector<Spec> bad = gptq(4, 64, 32, 2);
  bad[1].shape = {2, 2};
  EXPECT_EQ(
      refusal(file_of(bad), R"({"bits":4})"),
      "format: \"l.qweight\" [8, 32] and \"l.qzeros\" [2, 2] do not pack 4-bit fields of 32 outputs");
  // AWQ GEMM: a word holds eight outputs.
  const File awq = file_of({{"l.qweight", Dtype::I32, {64, 4}},
                            {"l.qzeros", Dtype::I32, {2, 4}},
                            {"l.scales", Dtype::F16, {2, 32}}});
  EXPECT_EQ(found(awq).at(0).scheme.name(), "awq-4bit-g32");
  // Other layouts (AWQ GEMV, kernel tilings) are refused by name.
  const File other = file_of({{"l.qweight", Dtype::I32, {32, 5}},
                              {"l.qzeros", Dtype::I32, {32, 1}},
                              {"l.scales", Dtype::F16, {32, 8}}});
  EXPECT_NE(
      refusal(other).find("unsupported: \"l.qweight\" [32, 5] with scales [32, 8]: neither GPTQ"),
      std::string::npos);
  // tinyllm int4 (no qzeros) is int4's still.
  const File int4 = file_of({{"w.qweight", Dtype::U8, {4, 8}}, {"w.scales", Dtype::F16, {4, 2}}});
  EXPECT_EQ(found(int4).at(0).scheme.kind(), SchemeKind::int4);
}

TEST(HubFormats, GidxOutOfRangeIsRefusedWhenFound) {
  std::vector<Spec> specs = gptq(4, 64, 8, 2);
  specs.push_back({"l.g_idx", Dtype::I32, {64}});
  Writer w = Writer::to_memory();
  for (const Spec& s : specs) w.declare(s.name, s.dtype, s.shape);
  for (const Spec& s : specs) {
    std::vector<std::byte> data(bytes_for(s.dtype, count(s.shape)));
    if (s.name == "l.g_idx") data[4 * 7] = std::byte{2};  // input 7 in group 2 of 2
    w.write(s.name, data);
  }
  w.commit();
  const File f = File::from_bytes(w.take_bytes());
  // Found by detection, so that validate reports it.
  EXPECT_EQ(refusal(f), "format: \"l.g_idx\"[7] is 2; the weight has 2 groups");
}

TEST(HubFormats, ConfigsOfFormsNotDecodedAreRefusedByName) {
  const File plain = file_of({{"x", Dtype::F32, {2}}});
  EXPECT_NE(
      refusal(plain, R"({"quant_method":"exl3"})").find("unsupported: quantized as ExLlama 3"),
      std::string::npos);
  EXPECT_NE(
      refusal(plain, R"({"quant_method":"gptq","checkpoint_format":"marlin"})").find("GPTQ marlin"),
      std::string::npos);
  EXPECT_EQ(refusal(plain, R"({"quant_method":"fp8","weight_block_size":[128]})"),
            "format: quantization_config: quant: weight_block_size is not two positive integers");
  EXPECT_EQ(refusal(plain, R"({"quant_method":"compressed-tensors","format":"float-quantized"})"),
            "accepted");
  // The method is named even when its options are not what tlio's decoders read.
  EXPECT_NE(refusal(plain, R"({"quant_method":"exl3","bits":3.0})").find("ExLlama 3"),
            std::string::npos);
  EXPECT_NE(refusal(plain, R"({"quant_method":"awq","format":"gemv_fast"})").find("AWQ gemv_fast"),
            std::string::npos);
  // Other methods' options are theirs (bitsandbytes has its own quantization_config).
  EXPECT_EQ(refusal(plain, R"({"quant_method":"bitsandbytes","bits":"4","load_in_4bit":true})"),
            "accepted");
  // A group of 0 is refused when the config is read (it once divided by zero).
  const File ct =
      file_of({{"a.weight", Dtype::I8, {2, 4}}, {"a.weight_scale", Dtype::F32, {2, 2}}});
  EXPECT_NE(refusal(ct, R"({"group_size":0})")
                .find("group_size is 0; a group is -1 (one group) or a positive size"),
            std::string::npos);
  // An F32 parameter named W_q is not HQQ's packed bytes.
  EXPECT_EQ(refusal(file_of({{"attn.W_q", Dtype::F32, {2, 2}}})), "accepted");
}

// Any range of any decoder equals the same range of the whole.
TEST(HubFormats, RangesReadAsTheWhole) {
  std::vector<File> files;  // File is move-only
  files.push_back(file_of(
      {{"a.weight", Dtype::F8_E4M3, {300, 260}}, {"a.weight_scale_inv", Dtype::F32, {3, 3}}}));
  files.push_back(file_of(gptq(3, 96, 64, 3)));
  files.push_back(file_of({{"l.qweight", Dtype::I32, {64, 5}},
                           {"l.qzeros", Dtype::I32, {4, 5}},
                           {"l.scales", Dtype::F16, {4, 40}}}));
  // gpt-oss MXFP4 in transformers' layout, compressed-tensors NVFP4, 5-bit pack-quantized
  // (fields across words) with packed zero points.
  files.push_back(file_of({{"e.down_proj_blocks", Dtype::U8, {2, 40, 3, 16}},
                           {"e.down_proj_scales", Dtype::U8, {2, 40, 3}}}));
  files.push_back(file_of({{"l.weight_packed", Dtype::U8, {50, 32}},
                           {"l.weight_scale", Dtype::F8_E4M3, {50, 4}},
                           {"l.weight_global_scale", Dtype::F32, {1}}}));
  files.push_back(file_of({{"l.weight_packed", Dtype::I32, {30, 16}},
                           {"l.weight_shape", Dtype::I64, {2}, {30, 100}},
                           {"l.weight_scale", Dtype::F16, {30, 4}},
                           {"l.weight_zero_point", Dtype::I32, {5, 4}}}));
  for (const File& f : files) {
    const QuantizedReader r(f, found(f).at(0).name);
    const uint64_t n = r.element_count();
    std::vector<uint16_t> whole(n), part;
    r.read(0, n, Dtype::BF16, std::as_writable_bytes(std::span(whole)));
    for (const auto& [first, size] :
         {std::pair<uint64_t, uint64_t>{5, 10}, {n / 3, n / 2}, {n - 1, 1}, {77, n - 100}}) {
      part.assign(size, 0);
      r.read(first, size, Dtype::BF16, std::as_writable_bytes(std::span(part)));
      EXPECT_EQ(0, std::memcmp(part.data(), whole.data() + first, size * 2))
          << r.weight().name << " " << first;
    }
  }
}

}  // namespace
}  // namespace tlio

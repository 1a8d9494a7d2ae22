// Tests for typed reads and whole-file conversion (read_as, read_f32, convert_file).
#include "tlio/convert_file.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "test_util.hpp"
#include "tlio/error.hpp"
#include "tlio/file.hpp"
#include "tlio/writer.hpp"

namespace tlio {
namespace {

struct Sample {
  std::vector<float> w{1.0f, -2.5f, 3.14159f, 65504.0f, 1e-8f, -0.0f};
  std::vector<double> d{0.1, -1e10};
  std::vector<uint16_t> bf{0x3F80, 0xC000};
  std::vector<int32_t> ids{1, 2, 3};
  std::vector<uint8_t> qweight{0x12, 0x34};
  std::vector<uint16_t> scales{0x3C00};  // F16 1.0
  std::vector<float> norm{1.0f, 1.0f};

  std::vector<TensorData> tensors() const {
    return {{"layers.0.w", Dtype::F32, {2, 3}, std::as_bytes(std::span(w))},
            {"layers.0.d", Dtype::F64, {2}, std::as_bytes(std::span(d))},
            {"layers.0.b", Dtype::BF16, {2}, std::as_bytes(std::span(bf))},
            {"ids", Dtype::I32, {3}, std::as_bytes(std::span(ids))},
            {"proj.qweight", Dtype::U8, {1, 2}, std::as_bytes(std::span(qweight))},
            {"proj.scales", Dtype::F16, {1, 1}, std::as_bytes(std::span(scales))},
            {"norm.weight", Dtype::F32, {2}, std::as_bytes(std::span(norm))}};
  }
};

TEST(ReadAs, AnyNumericTensorAsF32AndBF16) {
  Sample s;
  File f = File::from_bytes(serialize(s.tensors()));
  EXPECT_EQ(read_f32(f, "layers.0.w"), s.w);
  EXPECT_EQ(read_f32(f, "layers.0.b"), (std::vector<float>{1.0f, -2.0f}));
  EXPECT_EQ(read_f32(f, "ids"), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(read_f32(f, "layers.0.d")[0], 0.1f);
  std::vector<uint16_t> bf(6);
  read_as(f, "layers.0.w", Dtype::BF16, std::as_writable_bytes(std::span(bf)));
  EXPECT_EQ(bf[0], 0x3F80);
  EXPECT_THROW(
      read_as(f, "layers.0.w", Dtype::BF16, std::as_writable_bytes(std::span(bf).first(2))), Error);
  try {
    read_as(f, "ids", Dtype::BF16, std::as_writable_bytes(std::span(bf).first(3)));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported);
    EXPECT_EQ(e.tensor(), "ids");
  }
}

TEST(ConvertFile, FloatingTensorsConvertedQuantizedWeightsDequantized) {
  Sample s;
  test::TempDir dir;
  save_file(dir / "in.safetensors", s.tensors(), {{"format", "tinyllm"}});
  File in = File::open(dir / "in.safetensors");
  ConvertFileOptions o;
  o.dtype = Dtype::BF16;
  uint64_t last_done = 0, last_total = 0;
  o.progress = [&](uint64_t done, uint64_t total) {
    EXPECT_GE(done, last_done);
    last_done = done;
    last_total = total;
  };
  ConvertFileReport r = convert_file(in, dir / "out.safetensors", o);
  EXPECT_EQ(last_done, last_total);
  File out = File::open(dir / "out.safetensors");
  EXPECT_TRUE(out.is_canonical());
  EXPECT_EQ(out.metadata(), in.metadata());
  EXPECT_EQ(out.header().at("layers.0.w").dtype, Dtype::BF16);
  EXPECT_EQ(out.header().at("layers.0.d").dtype, Dtype::BF16);
  EXPECT_EQ(out.header().at("layers.0.b").dtype, Dtype::BF16);  // already BF16: copied
  EXPECT_EQ(out.header().at("ids").dtype, Dtype::I32);
  // The int4 weight is dequantized (nibbles 2 1 4 3 times 1.0), never its codes cast.
  EXPECT_FALSE(out.header().find("proj.scales") || out.header().find("proj.qweight"));
  EXPECT_EQ(out.header().at("proj").dtype, Dtype::BF16);
  EXPECT_EQ(out.copy_as<uint16_t>("proj"), (std::vector<uint16_t>{0x4000, 0x3F80, 0x4080, 0x4040}));
  EXPECT_EQ(r.converted, 4u);  // w, d, norm, proj
  EXPECT_EQ(r.dequantized, 1u);
  EXPECT_EQ(r.kept, 2u);
  auto w = out.copy_as<uint16_t>("layers.0.w");
  for (size_t i = 0; i < s.w.size(); ++i) EXPECT_EQ(w[i], f32_to_bf16(s.w[i]));
  EXPECT_EQ(out.copy_as<int32_t>("ids"), s.ids);

  // A quantized weight --exclude leaves out keeps its stored tensors as they are.
  o.exclude = "proj";
  o.progress = nullptr;
  r = convert_file(in, dir / "kept.safetensors", o);
  File kept = File::open(dir / "kept.safetensors");
  EXPECT_EQ(kept.header().at("proj.scales").dtype, Dtype::F16);
  EXPECT_EQ(kept.header().at("proj.qweight").dtype, Dtype::U8);
  EXPECT_EQ(r.dequantized, 0u);
}

TEST(ConvertFile, IncludeExcludeAreRegexSearches) {
  Sample s;
  File in = File::from_bytes(serialize(s.tensors()));
  test::TempDir dir;
  ConvertFileOptions o;
  o.dtype = Dtype::F16;
  o.include = "layers\\.";
  o.exclude = "\\.d$";
  convert_file(in, dir / "out.safetensors", o);
  File out = File::open(dir / "out.safetensors");
  EXPECT_EQ(out.header().at("layers.0.w").dtype, Dtype::F16);
  EXPECT_EQ(out.header().at("layers.0.b").dtype, Dtype::F16);
  EXPECT_EQ(out.header().at("layers.0.d").dtype, Dtype::F64);
  EXPECT_EQ(out.header().at("norm.weight").dtype, Dtype::F32);
  o.include = "(";
  try {
    convert_file(in, dir / "bad.safetensors", o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "bad.safetensors"));
}

TEST(ConvertFile, LargeTensorThroughManyChunksAndBack) {
  const size_t n = (size_t{9} << 20) + 3;  // several 16 MiB output chunks of F32
  std::vector<uint16_t> bf(n);
  for (size_t i = 0; i < n; ++i) bf[i] = static_cast<uint16_t>((i * 2654435761u) >> 7) & 0x7F7F;
  std::vector<TensorData> t = {{"big", Dtype::BF16, {n}, std::as_bytes(std::span(bf))}};
  test::TempDir dir;
  save_file(dir / "in.safetensors", t);
  ConvertFileOptions o;
  o.dtype = Dtype::F32;
  convert_file(File::open(dir / "in.safetensors"), dir / "f32.safetensors", o);
  o.dtype = Dtype::BF16;
  convert_file(File::open(dir / "f32.safetensors"), dir / "back.safetensors", o);
  EXPECT_EQ(test::read_bytes(dir / "back.safetensors"), test::read_bytes(dir / "in.safetensors"));
}

TEST(ConvertFile, NaNToF4NamesTheTensor) {
  std::vector<float> v = {1.0f, NAN};
  std::vector<TensorData> t = {{"bad", Dtype::F32, {2}, std::as_bytes(std::span(v))}};
  File in = File::from_bytes(serialize(t));
  test::TempDir dir;
  ConvertFileOptions o;
  o.dtype = Dtype::F4;
  try {
    convert_file(in, dir / "o.safetensors", o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    EXPECT_EQ(e.tensor(), "bad");
    EXPECT_NE(std::string(e.what()).find("\"bad\""), std::string::npos);
  }
  o.dtype = Dtype::I8;
  EXPECT_THROW(convert_file(in, dir / "o.safetensors", o), Error);
}

}  // namespace
}  // namespace tlio

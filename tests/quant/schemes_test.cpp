// Tests for the scheme registry (quant/schemes.hpp) through QuantScheme and quant_schemes():
// names, options and their bounds, refusals, and that every entry is complete.
#include "quant/schemes.hpp"

#include <gtest/gtest.h>

#include "test_util.hpp"
#include "tlio/error.hpp"
#include "tlio/file.hpp"
#include "tlio/quant.hpp"

namespace tlio {
namespace {

std::string message_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return {};
}

TEST(Schemes, NamesRoundTrip) {
  for (const char* name : {"int4-g32-sym", "int4-g128-sym", "nf4", "fp4", "int8"})
    EXPECT_EQ(QuantScheme::parse(name).name(), name);
  EXPECT_EQ(QuantScheme::parse("nf4").kind(), SchemeKind::bnb_4bit);
  EXPECT_EQ(QuantScheme::parse("int8").kind(), SchemeKind::llm_int8);
  EXPECT_EQ(QuantScheme().name(), "int4-g32-sym");
  // MLX's: the affine width and group in the name (what the C API and bindings pass), or set.
  for (const char* name :
       {"mlx-affine-3bit-g32", "mlx-affine-8bit-g128", "mlx-mxfp4", "mlx-mxfp8", "mlx-nvfp4"})
    EXPECT_EQ(QuantScheme::parse(name).name(), name);
  EXPECT_EQ(QuantScheme::parse("mlx-affine").name(), "mlx-affine-4bit-g64");
  EXPECT_EQ(QuantScheme::parse("mlx-affine-g32").name(), "mlx-affine-4bit-g32");
  EXPECT_EQ(QuantScheme::parse("mlx-affine-2bit").block(), 64u);
  QuantScheme mlx = QuantScheme::parse("mlx-affine");
  mlx.set_option("bits", "6");
  mlx.set_option("group-size", "128");
  EXPECT_EQ(mlx.name(), "mlx-affine-6bit-g128");
  EXPECT_EQ(message_of([&] { mlx.set_option("bits", "7"); }),
            "MLX's affine bits are 2, 3, 4, 5, 6 or 8, not 7");
  EXPECT_EQ(message_of([&] { QuantScheme::parse("mlx-mxfp4").set_option("group-size", "64"); }),
            "MLX's mxfp4 has 4 bits in groups of 32");
  for (const char* bad : {"mlx-affine-", "mlx-affine-04bit", "mlx-affine-g64-4bit", "mlx-affinex",
                          "mlx-affine-4bit-g", "mlx-mxfp4-g32"})
    EXPECT_FALSE(QuantScheme::try_parse(bad)) << bad;
  EXPECT_FALSE(QuantScheme::try_parse("mlx-affine-7bit")) << "7 bits";
  try {
    QuantScheme::parse("q3");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported);
    EXPECT_STREQ(
        e.what(),
        "unknown quantization scheme \"q3\" (int4-g<group>-sym, nf4, fp4, int8, fp8-block, fp8, "
        "mlx-<mode>)");
  }
}

TEST(Schemes, OptionsSetByNameWithBounds) {
  QuantScheme s = QuantScheme::parse("fp4");
  s.set_option("blocksize", "128");
  s.set_option("nested", "true");
  s.set_option("storage", "bf16");
  const auto& o = std::get<Bnb4bitOptions>(s.options());
  EXPECT_EQ(o.type, BnbQuantType::fp4);
  EXPECT_EQ(o.blocksize, 128u);
  EXPECT_TRUE(o.nested);
  EXPECT_EQ(o.storage, Dtype::BF16);
  EXPECT_EQ(s.block(), 128u);
  EXPECT_TRUE(s.nested());
  EXPECT_EQ(message_of([&] { s.set_option("blocksize", "48"); }),
            "blocksize 48 is not one of 32, 64, ..., 4096");
  EXPECT_EQ(s.block(), 128u);  // a refused value leaves the scheme as it was
  EXPECT_EQ(message_of([&] { s.set_option("blocksize", "6x"); }),
            "blocksize must be an unsigned integer, not \"6x\"");
  EXPECT_EQ(message_of([&] { s.set_option("storage", "I16"); }),
            "quant storage I16 is not U8, I8, F16, BF16, F32 or F64");
  EXPECT_EQ(message_of([&] { s.set_option("nested", "maybe"); }),
            "nested must be true or false, not \"maybe\"");
  EXPECT_THROW(QuantScheme(Int4Options{0}), Error);
  EXPECT_THROW(QuantScheme(Bnb4bitOptions{BnbQuantType::nf4, 100}), Error);
}

TEST(Schemes, AnOptionTheSchemeDoesNotHaveIsRefused) {
  QuantScheme int4 = QuantScheme::parse("int4-g32-sym");
  EXPECT_EQ(message_of([&] { int4.set_option("blocksize", "64"); }),
            "blocksize is an option of nf4, fp4, not of int4-g32-sym");
  QuantScheme int8 = QuantScheme::parse("int8");
  EXPECT_EQ(message_of([&] { int8.set_option("nested", "true"); }),
            "nested is an option of nf4, fp4, not of int8");
  EXPECT_EQ(message_of([&] { int8.set_option("colour", "red"); }),
            "\"colour\" is not an option of any quantization scheme");
}

TEST(Schemes, EveryEntryIsCompleteAndInKindOrder) {
  const auto entries = detail::scheme_entries();
  ASSERT_EQ(entries.size(), quant_schemes().size());
  for (size_t i = 0; i < entries.size(); ++i) {
    const detail::SchemeEntry& e = entries[i];
    EXPECT_EQ(static_cast<size_t>(e.info.kind), i);
    EXPECT_FALSE(e.info.syntax.empty());
    EXPECT_FALSE(e.info.layout.empty());
    EXPECT_TRUE(e.parse && e.name && e.validate && e.set_option && e.detect && e.decoder &&
                e.encoder);
    if (e.info.read_only) {  // found and read; never a --scheme, never an encoder
      EXPECT_FALSE(QuantScheme::try_parse(e.info.example)) << e.info.example;
      continue;
    }
    // Its example parses to itself, through the registry.
    const auto s = QuantScheme::try_parse(e.info.example);
    ASSERT_TRUE(s) << e.info.example;
    EXPECT_EQ(s->kind(), e.info.kind);
  }
}

TEST(Schemes, ReadOnlySchemesAreNamedButNeverWritten) {
  EXPECT_EQ(QuantScheme(GptqOptions{3, 0, true}).name(), "gptq-3bit-v2");
  EXPECT_EQ(QuantScheme(AwqOptions{4, 128}).name(), "awq-4bit-g128");
  EXPECT_EQ(QuantScheme(Fp8Options{Fp8Granularity::block, 1, 32}).name(), "fp8-group32");
  EXPECT_EQ(QuantScheme(Fp8Options{Fp8Granularity::channel, 0, 0}).name(), "fp8-channel");
  EXPECT_EQ(message_of([] {
              QuantScheme(GptqOptions{5, 128, false});
            }),
            "GPTQ packs 2, 3, 4 or 8 bits, not 5");
  EXPECT_EQ(QuantScheme(Mxfp4Options{true}).name(), "mxfp4");
  EXPECT_EQ(QuantScheme(CtIntOptions{3, 0, false, true, true}).name(), "ct-int3-channel-asym");
  EXPECT_EQ(QuantScheme(Fp8Options{Fp8Granularity::block, 1, 32, true}).name(), "mxfp8");
  // Their names are refused as read-only forms, not as unknown ones.
  try {
    QuantScheme::parse("nvfp4");
    ADD_FAILURE() << "parsed";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported);
    EXPECT_STREQ(e.what(),
                 "tlio reads \"nvfp4\" weights (nvfp4) but does not write them; it writes "
                 "int4-g<group>-sym, nf4, fp4, int8, fp8-block, fp8, mlx-<mode>");
  }
  EXPECT_EQ(QuantScheme::parse("fp8-block64x64").name(), "fp8-block64x64");
  EXPECT_EQ(QuantScheme::parse("fp8").name(), "fp8-channel");
  test::TempDir dir;
  QuantizeOptions o;
  o.scheme = QuantScheme(GptqOptions{});
  const std::filesystem::path out = dir.path() / "never.safetensors";
  try {
    quantize_file(File::open(test::data_dir() / "quant" / "tiny_model.safetensors"), out, o);
    ADD_FAILURE() << "quantized to a read-only scheme";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported);
    EXPECT_STREQ(e.what(), "tlio reads gptq-4bit-g128 weights but does not write them");
  }
  EXPECT_FALSE(std::filesystem::exists(out));
}

}  // namespace
}  // namespace tlio

// Tests for bitsandbytes weights (tlio/bnb.hpp and the bnb parts of tlio/quant.hpp) against the
// goldens in tests/data/bnb (made by a faithful re-run of bnb >= 0.50's CPU default backend):
// every 4-bit and int8 case dequantizes bit for bit and quantizes to the same file bytes, the
// bw8_* vectors check the 8-bit arithmetic, and malformed variants are refused by rule.
#include "quant/bnb/bnb.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <functional>
#include <map>

#include "quant/bnb/bnb_detail.hpp"
#include "test_util.hpp"
#include "tlio/bnb.hpp"
#include "tlio/convert_file.hpp"
#include "tlio/error.hpp"
#include "tlio/file.hpp"
#include "tlio/quant.hpp"
#include "tlio/writer.hpp"

namespace tlio {
namespace {

using detail::bnb_mean;
using namespace detail;  // the kernels under test are internal
using detail::python_float_repr;
using test::data_dir;

std::filesystem::path bnb_dir() { return data_dir() / "bnb"; }

std::vector<std::byte> bytes_of(const File& f, std::string_view name) {
  const TensorView v = f.view(name);
  return {v.bytes().begin(), v.bytes().end()};
}

template <class T>
std::span<const T> as(const std::vector<std::byte>& b) {
  return {reinterpret_cast<const T*>(b.data()), b.size() / sizeof(T)};
}

Dtype torch_dtype(std::string_view name) {
  if (name == "float16") return Dtype::F16;
  if (name == "bfloat16") return Dtype::BF16;
  if (name == "uint8") return Dtype::U8;
  return Dtype::F32;
}

struct Case {
  std::string name, kind, quant_type, dtype, storage, state_json;
  uint64_t blocksize = 0;
  bool nested = false;
  std::optional<double> nested_offset;
};

std::vector<Case> cases(std::string_view kind) {
  test::Manifest m(bnb_dir() / "MANIFEST.json");
  std::vector<Case> out;
  for (auto c : m.cases()) {
    Case k;
    k.name = std::string(c["name"].get_string().value());
    k.kind = std::string(c["kind"].get_string().value());
    if (k.kind != kind) continue;
    k.dtype = std::string(c["dtype"].get_string().value());
    if (kind == "linear4bit") {
      k.quant_type = std::string(c["quant_type"].get_string().value());
      k.storage = std::string(c["quant_storage"].get_string().value());
      k.state_json = std::string(c["quant_state_json"].get_string().value());
    }
    if (kind != "llm_int8_linear8bitlt") {
      k.blocksize = c["blocksize"].get_uint64().value();
      k.nested = c["nested"].get_bool().value();
      double off;
      if (c["nested_offset"].get_double().get(off) == simdjson::SUCCESS) k.nested_offset = off;
    }
    out.push_back(k);
  }
  return out;
}

const std::string kPrefix = "model.layers.0.mlp.down_proj";

// The input file a transformers user would quantize: the layer weight, metadata format=pt.
std::vector<std::byte> input_file(const File& expected) {
  const TensorInfo& in = expected.header().at("input");
  const std::vector<std::byte> data = bytes_of(expected, "input");
  TensorData t{kPrefix + ".weight", in.dtype, in.shape, data};
  return serialize(std::span(&t, 1), {{"format", "pt"}});
}

TEST(BnbTables, MatchTheGoldenTables) {
  test::Manifest t(bnb_dir() / "tables.json");
  auto check = [&](const char* key, std::span<const float> table) {
    auto arr = t.root[key].get_array().value();
    ASSERT_EQ(arr.size(), table.size()) << key;
    size_t i = 0;
    for (auto e : arr) {
      auto row = e.get_array().value();
      const uint32_t bits = static_cast<uint32_t>(
          std::stoul(std::string(row.at(2).get_string().value()), nullptr, 16));
      EXPECT_EQ(std::bit_cast<uint32_t>(table[i]), bits) << key << " " << i;
      ++i;
    }
  };
  check("nf4", bnb_4bit_table(BnbQuantType::nf4));
  check("fp4", bnb_4bit_table(BnbQuantType::fp4));
  check("dynamic", bnb_dynamic_map());
}

TEST(BnbFourBit, EveryGoldenDequantizesBitForBit) {
  const auto all = cases("linear4bit");
  ASSERT_EQ(all.size(), 25u);
  for (const Case& c : all) {
    SCOPED_TRACE(c.name);
    const File q = File::open(bnb_dir() / (c.name + ".safetensors"));
    const File e = File::open(bnb_dir() / (c.name + ".expected.safetensors"));
    const auto found = find_quantized_weights(q);
    ASSERT_EQ(found.size(), 1u);
    const QuantizedWeight& w = found[0];
    EXPECT_EQ(w.name, kPrefix + ".weight");
    EXPECT_EQ(w.scheme.name(), c.quant_type);
    EXPECT_EQ(w.scheme.kind(), SchemeKind::bnb_4bit);
    EXPECT_EQ(w.scheme.block(), c.blocksize);
    EXPECT_EQ(w.scheme.nested(), c.nested);
    EXPECT_EQ(w.dtype, torch_dtype(c.dtype));
    EXPECT_EQ(w.shape, e.header().at("input").shape);
    EXPECT_EQ(w.stored.size(), c.nested ? 6u : 4u);

    const QuantizedReader r(q, w.name);
    const uint64_t n = r.element_count();
    for (auto [dtype, key] :
         {std::pair{w.dtype, "dequant"}, std::pair{Dtype::F32, "dequant_f32"}}) {
      std::vector<std::byte> out(n * dtype_bits(dtype) / 8);
      r.read(0, n, dtype, out);
      EXPECT_EQ(out, bytes_of(e, key)) << key;
    }
    // Ranges that start and end anywhere give the same values.
    std::vector<std::byte> all_f32(n * 4), part(n * 4);
    r.read(0, n, Dtype::F32, all_f32);
    for (uint64_t first : {uint64_t{1}, uint64_t{33}, n / 3}) {
      const uint64_t count = n - first - (n > first + 5 ? 5 : 0);
      r.read(first, count, Dtype::F32, std::span(part).first(count * 4));
      EXPECT_EQ(0, std::memcmp(part.data(), all_f32.data() + first * 4, count * 4)) << first;
    }
    // The effective absmax.
    const std::vector<std::byte> absmax = bytes_of(q, w.name + ".absmax");
    std::vector<float> effective;
    if (c.nested) {
      const BnbQuantState st = parse_bnb_quant_state(
          std::string_view(reinterpret_cast<const char*>(bytes_of(q, w.stored.back()).data()),
                           q.header().at(w.stored.back()).byte_size()));
      effective = bnb_unnest_absmax(as<uint8_t>(absmax), read_f32(q, w.name + ".nested_absmax"),
                                    read_f32(q, w.name + ".nested_quant_map"), st.nested_blocksize,
                                    static_cast<float>(st.nested_offset));
    } else {
      effective = read_f32(q, w.name + ".absmax");
    }
    const auto expected_absmax = bytes_of(e, "absmax_f32");
    ASSERT_EQ(effective.size() * 4, expected_absmax.size());
    EXPECT_EQ(0, std::memcmp(effective.data(), expected_absmax.data(), expected_absmax.size()));
  }
}

TEST(BnbFourBit, EveryGoldenQuantizesToTheSameFile) {
  test::TempDir dir;
  for (const Case& c : cases("linear4bit")) {
    SCOPED_TRACE(c.name);
    const File e = File::open(bnb_dir() / (c.name + ".expected.safetensors"));
    // The kernel: one code per element, as the golden `codes`.
    std::vector<float> x = read_f32(e, "input");
    const auto type = *parse_bnb_quant_type(c.quant_type);
    std::vector<uint8_t> packed(x.size() / 2 + x.size() % 2);
    std::vector<float> absmax((x.size() + c.blocksize - 1) / c.blocksize);
    bnb_quantize_4bit(x, type, c.blocksize, packed, absmax);
    const auto codes = bytes_of(e, "codes");
    for (size_t i = 0; i < x.size(); ++i)
      ASSERT_EQ(static_cast<uint8_t>(codes[i]), i % 2 ? packed[i / 2] & 15 : packed[i / 2] >> 4)
          << i;
    // The nested offset is the float32 mean in torch's summation order.
    if (c.nested) {
      EXPECT_EQ(static_cast<double>(bnb_mean(absmax)), *c.nested_offset);
    }

    // The whole file, byte for byte.
    const File in = File::from_bytes(input_file(e));
    QuantizeOptions o;
    o.scheme = QuantScheme(Bnb4bitOptions{*parse_bnb_quant_type(c.quant_type), c.blocksize,
                                          c.nested, torch_dtype(c.storage)});
    o.include = "down_proj";  // one golden is 3-D, outside the default selection
    const QuantizeReport report = quantize_file(in, dir / "q.safetensors", o);
    ASSERT_EQ(report.items.size(), 1u);
    EXPECT_TRUE(report.items[0].quantized);
    EXPECT_GT(report.items[0].rmse, 0);
    EXPECT_EQ(test::read_bytes(dir / "q.safetensors"),
              test::read_bytes(bnb_dir() / (c.name + ".safetensors")));
    const File q = File::open(dir / "q.safetensors");
    const TensorView state = q.view(kPrefix + ".weight.quant_state.bitsandbytes__" + c.quant_type);
    EXPECT_EQ(
        std::string(reinterpret_cast<const char*>(state.bytes().data()), state.bytes().size()),
        c.state_json);

    // dequantize_file restores the original dtype and shape by default.
    dequantize_file(q, dir / "d.safetensors");
    const File d = File::open(dir / "d.safetensors");
    ASSERT_EQ(d.tensors().size(), 1u);
    EXPECT_EQ(d.header().at(kPrefix + ".weight").shape, e.header().at("input").shape);
    EXPECT_EQ(bytes_of(d, kPrefix + ".weight"), bytes_of(e, "dequant"));
    EXPECT_EQ(d.metadata(), (Metadata{{"format", "pt"}}));
  }
}

TEST(BnbEightBit, BlockwiseVectorsMatch) {
  const auto all = cases("blockwise8_dynamic");
  ASSERT_EQ(all.size(), 6u);
  for (const Case& c : all) {
    SCOPED_TRACE(c.name);
    const File q = File::open(bnb_dir() / (c.name + ".safetensors"));
    const File e = File::open(bnb_dir() / (c.name + ".expected.safetensors"));
    const std::vector<float> x = read_f32(e, "input");
    const uint64_t blocks = (x.size() + c.blocksize - 1) / c.blocksize;
    std::vector<uint8_t> codes(x.size());
    std::vector<float> absmax(blocks);
    bnb_quantize_blockwise8(x, c.blocksize, codes, absmax);
    EXPECT_EQ(std::as_bytes(std::span(codes)).size(), q.header().at("q").byte_size());
    EXPECT_EQ(0, std::memcmp(codes.data(), bytes_of(q, "q").data(), codes.size()));
    EXPECT_EQ(bytes_of(q, "code"),
              std::vector<std::byte>(
                  reinterpret_cast<const std::byte*>(bnb_dynamic_map().data()),
                  reinterpret_cast<const std::byte*>(bnb_dynamic_map().data()) + 1024));
    std::vector<float> effective = absmax;
    if (c.nested) {
      // 8-bit nesting quantizes the absmax with the same blocksize.
      const BnbNestedAbsmax nest = bnb_nest_absmax(absmax, c.blocksize);
      EXPECT_EQ(static_cast<double>(nest.offset), *c.nested_offset);
      EXPECT_EQ(read_f32(q, "offset"), std::vector<float>{nest.offset});
      EXPECT_EQ(0, std::memcmp(nest.codes.data(), bytes_of(q, "absmax").data(), nest.codes.size()));
      EXPECT_EQ(nest.absmax2, read_f32(q, "nested_absmax"));
      effective = bnb_unnest_absmax(nest.codes, nest.absmax2, read_f32(q, "nested_code"),
                                    c.blocksize, nest.offset);
    } else {
      EXPECT_EQ(absmax, read_f32(q, "absmax"));
    }
    EXPECT_EQ(effective, read_f32(e, "absmax_f32"));
    std::vector<float> out(x.size());
    bnb_dequantize_blockwise8(codes, effective, bnb_dynamic_map(), c.blocksize, out);
    EXPECT_EQ(out, read_f32(e, "dequant_f32"));
    const Dtype dt = torch_dtype(c.dtype);
    std::vector<std::byte> cast(out.size() * dtype_bits(dt) / 8);
    convert(Dtype::F32, std::as_bytes(std::span(out)), dt, cast, out.size());
    EXPECT_EQ(cast, bytes_of(e, "dequant"));
  }
}

TEST(BnbInt8, GoldenQuantizesAndDequantizes) {
  test::TempDir dir;
  const std::string name = "int8_f16_64x96";
  const File e = File::open(bnb_dir() / (name + ".expected.safetensors"));
  const File golden = File::open(bnb_dir() / (name + ".safetensors"));
  const auto found = find_quantized_weights(golden);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].scheme.name(), "int8");
  EXPECT_EQ(found[0].scheme.kind(), SchemeKind::llm_int8);
  EXPECT_EQ(found[0].name, kPrefix + ".weight");
  EXPECT_EQ(found[0].stored.size(), 3u);
  const QuantizedReader r(golden, found[0].name);
  std::vector<std::byte> out(r.element_count() * 4);
  r.read(0, r.element_count(), Dtype::F32, out);
  EXPECT_EQ(out, bytes_of(e, "dequant_f32"));

  QuantizeOptions o;
  o.scheme = QuantScheme::parse("int8");
  quantize_file(File::from_bytes(input_file(e)), dir / "q.safetensors", o);
  EXPECT_EQ(test::read_bytes(dir / "q.safetensors"),
            test::read_bytes(bnb_dir() / (name + ".safetensors")));
  dequantize_file(File::open(dir / "q.safetensors"), dir / "d.safetensors");
  EXPECT_EQ(bytes_of(File::open(dir / "d.safetensors"), kPrefix + ".weight"),
            bytes_of(e, "dequant_f32"));
}

TEST(BnbQuantState, PythonFloatRepr) {
  const std::pair<double, const char*> cases[] = {{0.0, "0.0"},
                                                  {-0.0, "-0.0"},
                                                  {1e-05, "1e-05"},
                                                  {0.0001, "0.0001"},
                                                  {1.0, "1.0"},
                                                  {0.05738766863942146, "0.05738766863942146"},
                                                  {1e16, "1e+16"},
                                                  {1.5e16, "1.5e+16"},
                                                  {123456789012345.0, "123456789012345.0"},
                                                  {1234.5, "1234.5"},
                                                  {5.43222188949585, "5.43222188949585"},
                                                  {1e100, "1e+100"},
                                                  {-2.5e-300, "-2.5e-300"},
                                                  {0.1, "0.1"},
                                                  {1e15, "1000000000000000.0"}};
  for (auto [v, text] : cases) EXPECT_EQ(python_float_repr(v), text) << text;
}

TEST(BnbQuantState, RoundTripsAndRefusesBadJson) {
  const BnbQuantState st = parse_bnb_quant_state(
      R"({"quant_type": "fp4", "blocksize": 128, "dtype": "bfloat16", "shape": [3, 5, 7], "nested_blocksize": 256, "nested_dtype": "float32", "nested_offset": 1e-05})");
  EXPECT_EQ(st.quant_type, BnbQuantType::fp4);
  EXPECT_EQ(st.blocksize, 128u);
  EXPECT_EQ(st.dtype, Dtype::BF16);
  EXPECT_EQ(st.shape, (Shape{3, 5, 7}));
  EXPECT_TRUE(st.nested);
  EXPECT_EQ(
      bnb_quant_state_json(st),
      R"({"quant_type": "fp4", "blocksize": 128, "dtype": "bfloat16", "shape": [3, 5, 7], "nested_blocksize": 256, "nested_dtype": "float32", "nested_offset": 1e-05})");
  const std::pair<const char*, const char*> bad[] = {
      {R"({"quant_type": "int4", "blocksize": 64, "dtype": "float16", "shape": [2]})", "BNB-001"},
      {R"({"quant_type": "nf4", "blocksize": 48, "dtype": "float16", "shape": [2]})", "BNB-001"},
      {R"({"quant_type": "nf4", "blocksize": 8192, "dtype": "float16", "shape": [2]})", "BNB-001"},
      {R"({"quant_type": "nf4", "blocksize": 64, "dtype": "float16", "shape": [2], "nested_dtype": "float32", "nested_offset": 0.5})",
       "BNB-004"},
      {R"({"quant_type": "nf4", "blocksize": 64, "dtype": "float16", "shape": [2], "nested_blocksize": 256, "nested_dtype": "float32"})",
       "BNB-004"},
      {R"({"quant_type": "nf4", "blocksize": 64, "dtype": "float16", "shape": [2])", "bnb"},
      {R"({"quant_type": "nf4", "blocksize": "64", "dtype": "float16", "shape": [2]})", "bnb"},
      {R"({"quant_type": "nf4", "blocksize": 64.0, "dtype": "float16", "shape": [2]})", "bnb"},
      {R"({"quant_type": "nf4", "blocksize": 64, "dtype": "int8", "shape": [2]})", "bnb"},
      {R"({"quant_type": "nf4", "blocksize": 64, "dtype": "float16", "shape": [-2]})", "bnb"},
      {R"({"quant_type": "nf4", "blocksize": 64, "dtype": "float16", "shape": 2})", "bnb"},
      {R"({"quant_type": "nf4", "blocksize": 64, "dtype": "float16"})", "bnb"},
      {R"({"quant_type": "nf4", "blocksize": 64, "dtype": "float16", "shape": [2], "extra": 1})",
       "bnb"},
      {R"({"quant_type": "nf4", "quant_type": "nf4", "blocksize": 64, "dtype": "float16", "shape": [2]})",
       "bnb"},
      {R"({"quant_type": "nf4", "blocksize": 64, "dtype": "float16", "shape": [4294967296, 4294967296]})",
       "bnb"},
      {R"([1, 2])", "bnb"},
      {R"({"quant_type": "nf4", "blocksize": 64, "dtype": "float16", "shape": [2], "nested_blocksize": 256, "nested_dtype": "float32", "nested_offset": "x"})",
       "bnb"},
  };
  for (auto [json, rule] : bad) {
    try {
      parse_bnb_quant_state(json);
      ADD_FAILURE() << "accepted " << json;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::format) << json;
      EXPECT_EQ(e.rule_name(), rule) << json << ": " << e.what();
    }
  }
}

TEST(BnbKernels, RefuseBadArguments) {
  std::vector<float> x(64, 1.0f);
  std::vector<uint8_t> packed(32);
  std::vector<float> absmax(1);
  EXPECT_THROW(bnb_quantize_4bit(x, BnbQuantType::nf4, 48, packed, absmax), Error);
  EXPECT_THROW(bnb_quantize_4bit(x, BnbQuantType::nf4, 64, std::span(packed).first(31), absmax),
               Error);
  x[5] = std::nanf("");
  EXPECT_THROW(bnb_quantize_4bit(x, BnbQuantType::nf4, 64, packed, absmax), Error);
  x[5] = INFINITY;
  EXPECT_THROW(bnb_quantize_4bit(x, BnbQuantType::nf4, 64, packed, absmax), Error);
  std::vector<std::byte> out(65 * 4);
  EXPECT_THROW(bnb_dequantize_4bit(packed, absmax, BnbQuantType::nf4, 64, 0, 65, Dtype::F32, out),
               Error);
  EXPECT_THROW(bnb_dequantize_4bit(packed, absmax, BnbQuantType::nf4, 64, 0, 64, Dtype::I32,
                                   std::span(out).first(256)),
               Error);
}

TEST(BnbKernels, LargeTensorsAgreeWithTheScalarDefinition) {
  // Big enough for several threads and the streaming path; odd length, partial last block.
  const uint64_t n = (uint64_t{3} << 20) + 77;
  std::vector<float> x(n);
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.0f, 0.05f);
  for (float& v : x) v = dist(rng);
  for (auto type : {BnbQuantType::nf4, BnbQuantType::fp4}) {
    std::vector<uint8_t> packed(n / 2 + 1);
    std::vector<float> absmax((n + 127) / 128);
    bnb_quantize_4bit(x, type, 128, packed, absmax);
    const auto& table = bnb_4bit_table(type);
    std::vector<float> f32(n);
    std::vector<uint16_t> bf16(n), f16(n);
    bnb_dequantize_4bit(packed, absmax, type, 128, 0, n, Dtype::F32,
                        std::as_writable_bytes(std::span(f32)));
    bnb_dequantize_4bit(packed, absmax, type, 128, 0, n, Dtype::BF16,
                        std::as_writable_bytes(std::span(bf16)));
    bnb_dequantize_4bit(packed, absmax, type, 128, 0, n, Dtype::F16,
                        std::as_writable_bytes(std::span(f16)));
    for (uint64_t i = 0; i < n; ++i) {
      const unsigned code = i % 2 ? packed[i / 2] & 15 : packed[i / 2] >> 4;
      const float want = table[code] * absmax[i / 128];
      ASSERT_EQ(std::bit_cast<uint32_t>(f32[i]), std::bit_cast<uint32_t>(want)) << i;
      ASSERT_EQ(bf16[i], f32_to_bf16(want)) << i;
      ASSERT_EQ(f16[i], f32_to_f16(want)) << i;
      // The chosen code is a nearest one.
      const float s = std::clamp(x[i] / absmax[i / 128], -1.0f, 1.0f);
      float best = 2;
      for (float t : table) best = std::min(best, std::fabs(t - s));
      ASSERT_LE(std::fabs(table[code] - s), best * 1.0001f + 1e-7f) << i;
    }
  }
}

}  // namespace
}  // namespace tlio

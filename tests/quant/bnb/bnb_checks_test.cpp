// Tests of the bitsandbytes checks (quant/bnb): malformed variants of the golden files, each
// refused by the rule it breaks and naming its tensor; a transposed BF16 absmax read like the
// original; LLM.int8 variants refused. (bnb_test.cpp: the kernels against the goldens.)
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "quant/bnb/bnb.hpp"
#include "test_util.hpp"
#include "tlio/convert.hpp"
#include "tlio/error.hpp"
#include "tlio/file.hpp"
#include "tlio/quant.hpp"
#include "tlio/writer.hpp"

namespace tlio {
namespace {

using namespace detail;  // the kernels are internal

std::filesystem::path bnb_dir() { return test::data_dir() / "bnb"; }
const std::string kPrefix = "model.layers.0.mlp.down_proj";

std::vector<std::byte> bytes_of(const File& f, std::string_view name) {
  const TensorView v = f.view(name);
  return {v.bytes().begin(), v.bytes().end()};
}

// ---- malformed variants of the goldens --------------------------------------------------------

struct Tensor {
  Dtype dtype;
  Shape shape;
  std::vector<std::byte> bytes;
};
using Tensors = std::map<std::string, Tensor>;

Tensors load(const std::string& golden) {
  const File f = File::open(bnb_dir() / golden);
  Tensors out;
  for (const TensorInfo& t : f.tensors()) out[t.name] = {t.dtype, t.shape, bytes_of(f, t.name)};
  return out;
}

File build(const Tensors& ts) {
  std::vector<TensorData> data;
  for (const auto& [name, t] : ts) data.push_back({name, t.dtype, t.shape, t.bytes});
  return File::from_bytes(serialize(data, {{"format", "pt"}}));
}

void set_json(Tensors& ts, const std::string& key, const std::string& json) {
  ts[key] = {Dtype::U8, {json.size()}, test::to_bytes(json)};
}

void expect_rule(const Tensors& ts, const char* rule, const std::string& tensor, const char* what) {
  SCOPED_TRACE(what);
  try {
    const File f = build(ts);
    find_quantized_weights(f);
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::format) << e.what();
    EXPECT_EQ(e.rule_name(), rule) << e.what();
    EXPECT_EQ(e.tensor(), tensor) << e.what();
  }
}

TEST(BnbChecks, MalformedVariantsAreRefusedByRule) {
  const std::string w = kPrefix + ".weight";
  const std::string nf4_state = w + ".quant_state.bitsandbytes__nf4";
  const Tensors plain = load("nf4_bs64_f16_64x96.safetensors");
  const Tensors nested = load("nf4_bs64_f16_64x96_nested.safetensors");
  const std::string json =
      R"({"quant_type": "nf4", "blocksize": 64, "dtype": "float16", "shape": [64, 96]})";
  EXPECT_NO_THROW(find_quantized_weights(build(plain)));
  EXPECT_NO_THROW(find_quantized_weights(build(nested)));

  auto variant = [](const Tensors& base, const std::function<void(Tensors&)>& edit) {
    Tensors t = base;
    edit(t);
    return t;
  };
  expect_rule(
      variant(
          plain,
          [&](Tensors& t) {
            set_json(
                t, nf4_state,
                R"({"quant_type": "nf4", "blocksize": 48, "dtype": "float16", "shape": [64, 96]})");
          }),
      "BNB-001", nf4_state, "blocksize 48");
  expect_rule(variant(plain,
                      [&](Tensors& t) {
                        t[w + ".quant_state.bitsandbytes__nf3"] = t.at(nf4_state);
                        t.erase(nf4_state);
                      }),
              "BNB-001", w + ".quant_state.bitsandbytes__nf3", "unknown type key");
  expect_rule(variant(plain,
                      [&](Tensors& t) {
                        t.at(w).bytes.pop_back();
                        t.at(w).shape = {3071, 1};
                      }),
              "BNB-002", w, "packed bytes short of the shape");
  expect_rule(
      variant(
          plain,
          [&](Tensors& t) {
            set_json(
                t, nf4_state,
                R"({"quant_type": "nf4", "blocksize": 64, "dtype": "float16", "shape": [64, 97]})");
          }),
      "BNB-002", w, "quant_state shape disagrees with the packed bytes");
  expect_rule(
      variant(
          plain,
          [&](Tensors& t) {
            set_json(
                t, nf4_state,
                R"({"quant_type": "nf4", "blocksize": 128, "dtype": "float16", "shape": [64, 96]})");
          }),
      "bnb", w + ".absmax", "quant_state blocksize disagrees with the absmax");
  expect_rule(variant(plain,
                      [&](Tensors& t) {
                        float v = 0.5f;
                        std::memcpy(t.at(w + ".quant_map").bytes.data() + 4, &v, 4);
                      }),
              "BNB-003", w + ".quant_map", "quant_map is not the NF4 table");
  expect_rule(variant(plain,
                      [&](Tensors& t) {
                        t.at(w + ".quant_map") = {Dtype::F32, {8}, std::vector<std::byte>(32)};
                      }),
              "BNB-003", w + ".quant_map", "quant_map of 8 entries");
  expect_rule(variant(nested, [&](Tensors& t) { t.erase(w + ".nested_absmax"); }), "BNB-004", w,
              "nested state without nested_absmax");
  expect_rule(variant(nested, [&](Tensors& t) { t.erase(w + ".nested_quant_map"); }), "BNB-004", w,
              "nested state without nested_quant_map");
  expect_rule(
      variant(plain,
              [&](Tensors& t) {
                t[w + ".nested_absmax"] = {Dtype::F32, {1}, std::vector<std::byte>(4)};
                t[w + ".nested_quant_map"] = {Dtype::F32, {256}, std::vector<std::byte>(1024)};
              }),
      "BNB-004", w + ".nested_absmax", "nested tensors, plain state");
  expect_rule(variant(nested,
                      [&](Tensors& t) {
                        t.at(w + ".absmax") = {Dtype::F32, {96}, std::vector<std::byte>(384)};
                      }),
              "BNB-004", w + ".absmax", "nested absmax stored as F32");
  expect_rule(variant(nested,
                      [&](Tensors& t) {
                        t.at(w + ".nested_absmax") = {Dtype::F32, {2}, std::vector<std::byte>(8)};
                      }),
              "BNB-004", w + ".nested_absmax", "nested_absmax of the wrong length");
  expect_rule(variant(plain, [&](Tensors& t) { t.erase(w + ".absmax"); }), "bnb", w, "no absmax");
  expect_rule(variant(plain, [&](Tensors& t) { t.erase(w + ".quant_map"); }), "bnb", w,
              "no quant_map");
  expect_rule(variant(plain, [&](Tensors& t) { t.erase(w); }), "bnb", nf4_state,
              "no packed weight");
  expect_rule(variant(plain, [&](Tensors& t) { t.erase(nf4_state); }), "bnb", w + ".quant_map",
              "companions without a quant_state");
  expect_rule(
      variant(plain, [&](Tensors& t) { set_json(t, nf4_state, json.substr(0, json.size() - 1)); }),
      "bnb", nf4_state, "truncated JSON");
  expect_rule(
      variant(
          plain,
          [&](Tensors& t) {
            set_json(
                t, nf4_state,
                R"({"quant_type": "fp4", "blocksize": 64, "dtype": "float16", "shape": [64, 96]})");
          }),
      "bnb", nf4_state, "JSON type differs from the key");
  expect_rule(variant(plain, [&](Tensors& t) { t.at(nf4_state).dtype = Dtype::I8; }), "bnb",
              nf4_state, "quant_state not U8");
  expect_rule(variant(plain,
                      [&](Tensors& t) {
                        t.at(w).dtype = Dtype::I16;
                        t.at(w).shape = {1536, 1};
                      }),
              "bnb", w, "packed bytes stored as I16");
  expect_rule(variant(plain, [&](Tensors& t) { t[w + ".quant_state.gptq"] = t.at(nf4_state); }),
              "bnb", w + ".quant_state.gptq", "foreign quant_state");

  // Accepted: FP4's code 8 as -0.0 (as CUDA and CPU-native bnb have it).
  Tensors fp4 = load("fp4_bs64_bf16_64x96.safetensors");
  const float minus_zero = -0.0f;
  std::memcpy(fp4.at(w + ".quant_map").bytes.data() + 8 * 4, &minus_zero, 4);
  EXPECT_NO_THROW(find_quantized_weights(build(fp4)));
}

TEST(BnbChecks, TransposedBf16AbsmaxReadsLikeTheOriginal) {
  // Quantize a [4, 128] matrix with blocksize 64 (absmax [8] = [4 rows, 2 per row]), then store
  // the absmax as inference on AVX512-BF16 CPUs leaves it: BF16, [2, 4], transposed.
  test::TempDir dir;
  std::vector<float> x(4 * 128);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = bf16_to_f32(f32_to_bf16(std::sin(float(i)) * float(1 + i % 7)));
  TensorData in{"layer.weight", Dtype::F32, {4, 128}, std::as_bytes(std::span(x))};
  QuantizeOptions o;
  o.scheme = QuantScheme::parse("nf4");
  o.include = "layer";
  quantize_file(File::from_bytes(serialize(std::span(&in, 1))), dir / "q.safetensors", o);
  Tensors ts;
  const File q = File::open(dir / "q.safetensors");
  for (const TensorInfo& t : q.tensors()) ts[t.name] = {t.dtype, t.shape, bytes_of(q, t.name)};
  const auto absmax = read_f32(q, "layer.weight.absmax");
  std::vector<uint16_t> t_bf16(8);
  for (int r = 0; r < 4; ++r)
    for (int j = 0; j < 2; ++j) t_bf16[j * 4 + r] = f32_to_bf16(absmax[r * 2 + j]);
  ts["layer.weight.absmax"] = {
      Dtype::BF16,
      {2, 4},
      std::vector<std::byte>(reinterpret_cast<std::byte*>(t_bf16.data()),
                             reinterpret_cast<std::byte*>(t_bf16.data()) + 16)};
  const File odd = build(ts);
  const QuantizedReader r(odd, "layer.weight");
  std::vector<float> got(512), want(512);
  r.read(0, 512, Dtype::F32, std::as_writable_bytes(std::span(got)));
  std::vector<uint8_t> packed(256);
  std::vector<float> am(8);
  bnb_quantize_4bit(x, BnbQuantType::nf4, 64, packed, am);
  for (float& a : am) a = bf16_to_f32(f32_to_bf16(a));
  bnb_dequantize_4bit(packed, am, BnbQuantType::nf4, 64, 0, 512, Dtype::F32,
                      std::as_writable_bytes(std::span(want)));
  EXPECT_EQ(got, want);
}

TEST(BnbChecks, Int8VariantsAreRefused) {
  const Tensors good = load("int8_f16_64x96.safetensors");
  const std::string p = kPrefix;
  Tensors t = good;
  t.at(p + ".SCB") = {Dtype::F32, {63}, std::vector<std::byte>(252)};
  expect_rule(t, "bnb", p + ".SCB", "SCB of 63 rows");
  t = good;
  t.at(p + ".weight_format").bytes[0] = std::byte{1};
  expect_rule(t, "bnb", p + ".weight_format", "col32 layout");
  t = good;
  t.erase(p + ".weight");
  expect_rule(t, "bnb", p + ".SCB", "SCB without weight");
  t = good;
  t.erase(p + ".SCB");
  expect_rule(t, "bnb", p + ".weight_format", "weight_format without SCB");
  t = good;
  t.at(p + ".weight").dtype = Dtype::U8;
  expect_rule(t, "bnb", p + ".weight", "U8 weight");
}

}  // namespace
}  // namespace tlio

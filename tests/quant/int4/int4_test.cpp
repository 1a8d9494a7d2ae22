// Tests for tinyllm int4-g<group>-sym (tlio/quant.hpp): the kernels against an independent
// reference of the rule in docs/quantization.md, the golden layout file, malformed pairs, whole
// files.
#include "quant/int4/int4.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "test_util.hpp"
#include "tlio/convert.hpp"
#include "tlio/error.hpp"
#include "tlio/file.hpp"
#include "tlio/quant.hpp"
#include "tlio/writer.hpp"

namespace tlio {
namespace {
using namespace detail;  // the kernels under test are internal

// F16 decoding written from the format definition (not the library's).
double f16_value(uint16_t h) {
  const int e = (h >> 10) & 31, m = h & 1023;
  const double v = e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25);
  return h & 0x8000 ? -v : v;
}

// F16 rounding by nearest search over all finite F16 values (ties to even pattern).
uint16_t f16_round(float x) {
  static const std::vector<std::pair<double, uint16_t>> table = [] {
    std::vector<std::pair<double, uint16_t>> t;
    for (uint32_t b = 0; b < 0x7C00; ++b)
      t.emplace_back(f16_value(static_cast<uint16_t>(b)), static_cast<uint16_t>(b));
    return t;
  }();
  auto it = std::lower_bound(table.begin(), table.end(), std::make_pair(double(x), uint16_t{0}));
  if (it == table.end()) return 0x7C00;
  if (it->first == x || it == table.begin()) return it->second;
  auto lo = std::prev(it);
  const double dl = x - lo->first, dh = it->first - x;
  if (dl != dh) return dl < dh ? lo->second : it->second;
  return lo->second % 2 == 0 ? lo->second : it->second;
}

struct Reference {
  std::vector<int> q;  // per element, -8..7
  std::vector<uint16_t> scales;
};

// The rule of docs/quantization.md, written plainly (non-negative inputs' scale search, no tricks).
Reference reference_quantize(const std::vector<float>& w, uint64_t rows, uint64_t cols,
                             uint64_t group) {
  Reference r;
  r.q.assign(w.size(), 0);
  for (uint64_t i = 0; i < rows; ++i)
    for (uint64_t g = 0; g < cols / group; ++g) {
      float absmax = 0;
      for (uint64_t k = 0; k < group; ++k)
        absmax = std::max(absmax, std::fabs(w[i * cols + g * group + k]));
      const uint16_t s16 = f16_round(absmax / 7.0f);
      r.scales.push_back(s16);
      const float s = static_cast<float>(f16_value(s16));
      for (uint64_t k = 0; k < group; ++k) {
        if (s == 0) continue;
        const float ratio = w[i * cols + g * group + k] / s;
        float rounded = std::floor(ratio);
        const float frac = ratio - rounded;
        if (frac > 0.5f || (frac == 0.5f && std::fmod(rounded, 2.0f) != 0)) rounded += 1;
        r.q[i * cols + g * group + k] = static_cast<int>(std::clamp(rounded, -8.0f, 7.0f));
      }
    }
  return r;
}

int nib(const std::vector<uint8_t>& q, uint64_t cols, uint64_t r, uint64_t c) {
  const uint8_t b = q[r * cols / 2 + c / 2];
  const int n = c % 2 ? b >> 4 : b & 15;
  return n >= 8 ? n - 16 : n;
}

std::vector<float> random_matrix(uint64_t rows, uint64_t cols, double scale, std::mt19937_64& rng) {
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> w(rows * cols);
  for (auto& x : w) x = static_cast<float>(d(rng) * scale);
  return w;
}

TEST(Int4, SchemeNames) {
  auto group_of = [](const char* name) -> std::optional<uint64_t> {
    const auto s = QuantScheme::try_parse(name);
    if (!s || s->kind() != SchemeKind::int4) return std::nullopt;
    return s->block();
  };
  EXPECT_EQ(group_of("int4-g32-sym"), 32u);
  EXPECT_EQ(group_of("int4-g1-sym"), 1u);
  for (const char* bad : {"int4-g0-sym", "int4-g032-sym", "int4-g-sym", "int4-g32", "nf4",
                          "int4-g32-asym", "int4-g99999999999999999999999-sym", ""})
    EXPECT_FALSE(group_of(bad)) << bad;
  EXPECT_EQ(QuantScheme(Int4Options{128}).name(), "int4-g128-sym");
}

TEST(Int4, QuantizeMatchesTheReferenceForEveryGroupThatDivides) {
  std::mt19937_64 rng(11);
  const uint64_t rows = 5, cols = 96;
  for (double scale : {1e-3, 0.02, 1.0, 300.0}) {
    std::vector<float> w = random_matrix(rows, cols, scale, rng);
    for (uint64_t i = 0; i < 6; ++i) w[static_cast<size_t>(rng() % w.size())] = 0;  // exact zeros
    w[3] = 7 * 0.5f;  // ties land exactly on .5 somewhere in most groups
    for (uint64_t group = 1; group <= cols; ++group) {
      if (cols % group) continue;
      std::vector<uint8_t> q(rows * cols / 2);
      std::vector<uint16_t> s(rows * cols / group);
      int4_quantize(w, rows, cols, group, q, s);
      Reference ref = reference_quantize(w, rows, cols, group);
      ASSERT_EQ(s, ref.scales) << "group " << group;
      for (uint64_t r = 0; r < rows; ++r)
        for (uint64_t c = 0; c < cols; ++c)
          ASSERT_EQ(nib(q, cols, r, c), ref.q[r * cols + c]) << group << " " << r << " " << c;
      // Dequantize: q * scale exactly, in every output dtype.
      std::vector<float> back(rows * cols);
      int4_dequantize_rows(q, s, rows, cols, group, 0, rows, Dtype::F32,
                           std::as_writable_bytes(std::span(back)));
      std::vector<uint16_t> bf(rows * cols), h(rows * cols);
      int4_dequantize_rows(q, s, rows, cols, group, 0, rows, Dtype::BF16,
                           std::as_writable_bytes(std::span(bf)));
      int4_dequantize_rows(q, s, rows, cols, group, 0, rows, Dtype::F16,
                           std::as_writable_bytes(std::span(h)));
      for (uint64_t i = 0; i < rows * cols; ++i) {
        const double want = ref.q[i] * f16_value(s[i / group]);
        ASSERT_EQ(back[i], static_cast<float>(want));
        ASSERT_EQ(bf[i], f32_to_bf16(back[i]));
        ASSERT_EQ(h[i], f32_to_f16(back[i]));
        // The error of a weight that was not clamped is at most half a step.
        if (std::abs(ref.q[i]) < 7) {
          ASSERT_LE(std::fabs(back[i] - w[i]), f16_value(s[i / group]) / 2 * (1 + 1e-6));
        }
      }
    }
  }
}

TEST(Int4, ZeroGroupsTinyAndHugeMagnitudes) {
  std::vector<float> w(16, 0.0f);
  w[8] = 1e-9f;  // scale underflows F16: stored as 0 with q = 0
  w[9] = -1e-9f;
  std::vector<uint8_t> q(8);
  std::vector<uint16_t> s(2);
  int4_quantize(w, 1, 16, 8, q, s);
  EXPECT_EQ(s, (std::vector<uint16_t>{0, 0}));
  EXPECT_EQ(q, std::vector<uint8_t>(8, 0));
  w[8] = 4.0e5f;  // absmax / 7 = 57142: fits F16
  int4_quantize(w, 1, 16, 8, q, s);
  EXPECT_EQ(nib(q, 16, 0, 8), 7);
  w[8] = 5.0e5f;  // absmax / 7 = 71428: beyond F16
  EXPECT_THROW(int4_quantize(w, 1, 16, 8, q, s), Error);
  w[8] = NAN;
  EXPECT_THROW(int4_quantize(w, 1, 16, 8, q, s), Error);
  w[8] = INFINITY;
  EXPECT_THROW(int4_quantize(w, 1, 16, 8, q, s), Error);
}

TEST(Int4, ShapeErrors) {
  std::vector<float> w(15);
  std::vector<uint8_t> q(7);
  std::vector<uint16_t> s(3);
  EXPECT_THROW(int4_quantize(w, 1, 15, 5, q, s), Error);  // odd columns
  std::vector<float> w2(16);
  std::vector<uint8_t> q2(8);
  std::vector<uint16_t> s2(3);
  EXPECT_THROW(int4_quantize(w2, 1, 16, 5, q2, s2), Error);  // 5 does not divide 16
  EXPECT_THROW(int4_quantize(w2, 1, 16, 0, q2, s2), Error);
  EXPECT_THROW(int4_quantize(w2, 1, 16, 8, q2, s2), Error);  // scales size wrong
}

TEST(Int4, GoldenLayoutFileDequantizes) {
  File f = File::open(test::data_dir() / "hf" / "tinyllm_int4_layout.safetensors");
  auto weights = find_quantized_weights(f);
  ASSERT_EQ(weights.size(), 1u);
  EXPECT_EQ(weights[0].name, "w");
  EXPECT_EQ(weights[0].scheme.name(), "int4-g8-sym");  // no quant metadata: group from the shapes
  EXPECT_EQ(weights[0].shape, (std::vector<uint64_t>{4, 16}));
  auto q = f.copy_as<uint8_t>("w.qweight");
  auto s = f.copy_as<uint16_t>("w.scales");
  const QuantizedReader iw(f, "w");
  std::vector<float> out(64);
  iw.read(0, 64, Dtype::F32, std::as_writable_bytes(std::span(out)));
  for (uint64_t r = 0; r < 4; ++r)
    for (uint64_t c = 0; c < 16; ++c)
      EXPECT_EQ(out[r * 16 + c],
                static_cast<float>(nib(q, 16, r, c) * f16_value(s[r * 2 + c / 8])));
  std::vector<float> rows12(32);
  iw.read(16, 32, Dtype::F32, std::as_writable_bytes(std::span(rows12)));
  EXPECT_TRUE(std::equal(rows12.begin(), rows12.end(), out.begin() + 16));
  EXPECT_THROW(iw.read(48, 32, Dtype::F32, std::as_writable_bytes(std::span(rows12))), Error);

  // QuantizedReader: any element range, across partial rows, equals the row reader's values.
  const QuantizedReader r(f, "w");
  EXPECT_EQ(r.element_count(), 64u);
  for (uint64_t first = 0; first < 64; first += 5)
    for (uint64_t count : {uint64_t{1}, uint64_t{7}, uint64_t{16}, uint64_t{33}, 64 - first}) {
      if (first + count > 64) continue;
      std::vector<float> part(count);
      r.read(first, count, Dtype::F32, std::as_writable_bytes(std::span(part)));
      EXPECT_TRUE(std::equal(part.begin(), part.end(), out.begin() + static_cast<ptrdiff_t>(first)))
          << first << " +" << count;
    }
  std::vector<float> one(1);
  EXPECT_THROW(r.read(64, 1, Dtype::F32, std::as_writable_bytes(std::span(one))), Error);
  EXPECT_THROW(QuantizedReader(f, "w.qweight"), Error);
}

// A file image with the given header entries; data is zeros.
std::vector<std::byte> file_with(const Metadata& meta, std::vector<TensorData> tensors) {
  std::vector<std::vector<std::byte>> storage;
  for (auto& t : tensors) {
    storage.emplace_back(*tensor_bytes(t.dtype, t.shape));
    t.bytes = storage.back();
  }
  return serialize(tensors, meta);
}

std::string int4_rejection(const Metadata& meta, std::vector<TensorData> tensors) {
  File f = File::from_bytes(file_with(meta, std::move(tensors)), "q.safetensors");
  try {
    find_quantized_weights(f);
    return "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::format);
    EXPECT_EQ(e.rule_name(), "int4");
    EXPECT_EQ(std::string(e.what()).rfind("q.safetensors: int4: ", 0), 0u) << e.what();
    return e.tensor();
  }
}

TEST(Int4, MalformedPairsAreRejectedNamingTheTensor) {
  const Metadata g8 = {{"format", "tinyllm"}, {"quant", "int4-g8-sym"}};
  EXPECT_EQ(int4_rejection(
                g8, {{"w.qweight", Dtype::U8, {4, 8}, {}}, {"w.scales", Dtype::F16, {4, 2}, {}}}),
            "accepted");
  EXPECT_EQ(int4_rejection(g8, {{"w.qweight", Dtype::U8, {4, 8}, {}}}), "w.qweight");
  EXPECT_EQ(int4_rejection(g8, {{"w.scales", Dtype::F16, {4, 2}, {}}}), "w.scales");
  EXPECT_EQ(int4_rejection(
                g8, {{"w.qweight", Dtype::I8, {4, 8}, {}}, {"w.scales", Dtype::F16, {4, 2}, {}}}),
            "w.qweight");
  EXPECT_EQ(int4_rejection(
                g8, {{"w.qweight", Dtype::U8, {4, 8}, {}}, {"w.scales", Dtype::F32, {4, 2}, {}}}),
            "w.scales");
  EXPECT_EQ(int4_rejection(
                g8, {{"w.qweight", Dtype::U8, {4, 8}, {}}, {"w.scales", Dtype::F16, {4, 4}, {}}}),
            "w.scales");
  EXPECT_EQ(int4_rejection(
                g8, {{"w.qweight", Dtype::U8, {4, 8}, {}}, {"w.scales", Dtype::F16, {3, 2}, {}}}),
            "w.scales");
  EXPECT_EQ(int4_rejection(
                g8, {{"w.qweight", Dtype::U8, {32}, {}}, {"w.scales", Dtype::F16, {4, 2}, {}}}),
            "w.qweight");
  EXPECT_EQ(int4_rejection({{"quant", "nf4"}}, {}), "__metadata__");
  EXPECT_EQ(int4_rejection({{"quant", "int4-g0-sym"}}, {}), "__metadata__");
  // Without metadata the group comes from the shapes, and must divide.
  EXPECT_EQ(int4_rejection(
                {}, {{"w.qweight", Dtype::U8, {4, 8}, {}}, {"w.scales", Dtype::F16, {4, 3}, {}}}),
            "w.scales");
  // Two weights implying different groups.
  EXPECT_EQ(int4_rejection({}, {{"a.qweight", Dtype::U8, {4, 8}, {}},
                                {"a.scales", Dtype::F16, {4, 2}, {}},
                                {"b.qweight", Dtype::U8, {4, 8}, {}},
                                {"b.scales", Dtype::F16, {4, 4}, {}}}),
            "b.scales");
  // A .scales tensor in a file that has nothing to do with int4 is left alone.
  EXPECT_EQ(int4_rejection({}, {{"layer.scales", Dtype::F32, {3}, {}}}), "accepted");
}

TEST(Int4, HfGoldenWithTwoKeysDeclaresAGroupItsShapesContradict) {
  File f = File::open(test::data_dir() / "hf" / "metadata_quant_two_keys.safetensors");
  EXPECT_THROW(find_quantized_weights(f), Error);
}

// ---- whole files ------------------------------------------------------------------------------

struct TinyModel {
  std::mt19937_64 rng{5};
  std::vector<float> q_proj = random_matrix(8, 64, 0.05, rng);
  std::vector<float> odd_proj = random_matrix(4, 30, 0.05, rng);  // 30 % 32 != 0
  std::vector<float> embed = random_matrix(16, 8, 1.0, rng);
  std::vector<float> norm = std::vector<float>(8, 1.0f);
  std::vector<uint16_t> up_bf16;

  TinyModel() {
    std::vector<float> up = random_matrix(6, 32, 0.1, rng);
    for (float x : up) up_bf16.push_back(f32_to_bf16(x));
  }
  std::vector<TensorData> tensors() const {
    return {{"model.layers.0.self_attn.q_proj.weight",
             Dtype::F32,
             {8, 64},
             std::as_bytes(std::span(q_proj))},
            {"model.layers.0.self_attn.o_proj.weight",
             Dtype::F32,
             {4, 30},
             std::as_bytes(std::span(odd_proj))},
            {"model.layers.0.mlp.up_proj.weight",
             Dtype::BF16,
             {6, 32},
             std::as_bytes(std::span(up_bf16))},
            {"model.embed_tokens.weight", Dtype::F32, {16, 8}, std::as_bytes(std::span(embed))},
            {"model.norm.weight", Dtype::F32, {8}, std::as_bytes(std::span(norm))}};
  }
};

TEST(Int4File, QuantizeDefaultSelectionThenDequantize) {
  TinyModel m;
  test::TempDir dir;
  save_file(dir / "m.safetensors", m.tensors(), {{"format", "pt"}, {"note", "kept"}});
  File src = File::open(dir / "m.safetensors");
  QuantizeReport r =
      quantize_file(src, dir / "q.safetensors", {QuantScheme::parse("int4-g32-sym"), "", "", {}});
  ASSERT_EQ(r.items.size(), 3u);
  size_t quantized = 0;
  for (const auto& item : r.items) {
    if (item.name == "model.layers.0.self_attn.o_proj.weight") {
      EXPECT_FALSE(item.quantized);
      EXPECT_NE(item.note.find("group 32"), std::string::npos);
    } else {
      EXPECT_TRUE(item.quantized) << item.name;
      EXPECT_GT(item.rmse, 0);
      EXPECT_LE(item.rmse, item.max_abs_error);
      ++quantized;
    }
  }
  EXPECT_EQ(quantized, 2u);
  EXPECT_LT(r.data_bytes_after, r.data_bytes_before);

  File q = File::open(dir / "q.safetensors");
  EXPECT_TRUE(q.is_canonical());
  EXPECT_EQ(q.metadata().at("format"), "tinyllm");
  EXPECT_EQ(q.metadata().at("quant"), "int4-g32-sym");
  EXPECT_EQ(q.metadata().at("note"), "kept");
  EXPECT_EQ(q.header().at("model.layers.0.self_attn.q_proj.weight.qweight").shape,
            (std::vector<uint64_t>{8, 32}));
  EXPECT_EQ(q.header().at("model.layers.0.self_attn.q_proj.weight.scales").shape,
            (std::vector<uint64_t>{8, 2}));
  EXPECT_FALSE(q.header().find("model.layers.0.self_attn.q_proj.weight"));
  EXPECT_TRUE(q.header().find("model.layers.0.self_attn.o_proj.weight"));
  EXPECT_EQ(q.copy_as<float>("model.embed_tokens.weight"), m.embed);
  EXPECT_EQ(find_quantized_weights(q).size(), 2u);

  // The stored codes are the kernel's on the same input.
  std::vector<uint8_t> qq(8 * 32);
  std::vector<uint16_t> ss(8 * 2);
  int4_quantize(m.q_proj, 8, 64, 32, qq, ss);
  EXPECT_EQ(q.copy_as<uint8_t>("model.layers.0.self_attn.q_proj.weight.qweight"), qq);

  dequantize_file(q, dir / "d.safetensors", Dtype::F32);
  File d = File::open(dir / "d.safetensors");
  EXPECT_EQ(d.metadata().count("quant"), 0u);
  EXPECT_EQ(d.tensors().size(), 5u);
  std::vector<float> want(8 * 64);
  int4_dequantize_rows(qq, ss, 8, 64, 32, 0, 8, Dtype::F32,
                       std::as_writable_bytes(std::span(want)));
  EXPECT_EQ(d.copy_as<float>("model.layers.0.self_attn.q_proj.weight"), want);
  EXPECT_EQ(d.header().at("model.layers.0.mlp.up_proj.weight").dtype, Dtype::F32);
  EXPECT_EQ(d.copy_as<float>("model.norm.weight"), m.norm);
}

TEST(Int4File, IncludeAndExclude) {
  TinyModel m;
  File src = File::from_bytes(serialize(m.tensors()));
  test::TempDir dir;
  // --include replaces the default: the embedding (16 x 8, group 8) is quantized, q_proj is not.
  quantize_file(src, dir / "a.safetensors", {QuantScheme::parse("int4-g8-sym"), "embed", "", {}});
  File a = File::open(dir / "a.safetensors");
  EXPECT_TRUE(a.header().find("model.embed_tokens.weight.qweight"));
  EXPECT_TRUE(a.header().find("model.layers.0.self_attn.q_proj.weight"));
  // A 1-D tensor is kept even when included, unless allow_1d: then a selection of nothing
  // else is an error that says so.
  try {
    quantize_file(src, dir / "b.safetensors", {QuantScheme::parse("int4-g8-sym"), "norm", "", {}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("1 1-D (biases, norms)"), std::string::npos) << e.what();
  }
  // With allow_1d, an explicitly included tensor the scheme cannot quantize is an error naming it.
  try {
    quantize_file(src, dir / "b.safetensors",
                  {QuantScheme::parse("int4-g8-sym"), "norm", "", {}, true});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.tensor(), "model.norm.weight");
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "b.safetensors"));
  quantize_file(src, dir / "c.safetensors", {QuantScheme::parse("int4-g32-sym"), "", "q_proj", {}});
  File c = File::open(dir / "c.safetensors");
  EXPECT_TRUE(c.header().find("model.layers.0.self_attn.q_proj.weight"));
  EXPECT_TRUE(c.header().find("model.layers.0.mlp.up_proj.weight.qweight"));
  EXPECT_THROW(QuantScheme::parse("nf5"), Error);
}

}  // namespace
}  // namespace tlio

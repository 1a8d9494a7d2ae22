// Tests for compare_files: across dtypes, against quantized weights (by logical name), NaN and
// infinities, shapes that differ, dtypes compared by bytes, natural order, and figures that do
// not depend on the number of threads.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "test_util.hpp"
#include "tlio/compare.hpp"
#include "tlio/convert.hpp"
#include "tlio/error.hpp"
#include "tlio/file.hpp"
#include "tlio/quant.hpp"
#include "tlio/writer.hpp"

namespace tlio {
namespace {

const TensorComparison& find(const CompareReport& r, const std::string& name) {
  for (const TensorComparison& c : r.tensors)
    if (c.name == name) return c;
  throw std::runtime_error("no comparison for " + name);
}

std::vector<float> ramp(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * std::sin(static_cast<float>(i) * 0.37f);
  return v;
}

TEST(CompareFiles, AFileEqualsItselfExactly) {
  const std::vector<float> w = ramp(1000, 3);
  const std::vector<int64_t> ids{1, 2, 3};
  const File f = File::from_bytes(
      serialize(std::vector<TensorData>{{"w", Dtype::F32, {10, 100}, std::as_bytes(std::span(w))},
                                        {"ids", Dtype::I64, {3}, std::as_bytes(std::span(ids))}}));
  const CompareReport r = compare_files(f, f);
  EXPECT_TRUE(r.equal);
  ASSERT_EQ(r.tensors.size(), 2u);
  for (const TensorComparison& c : r.tensors) {
    EXPECT_TRUE(c.compared && c.equal) << c.name;
    EXPECT_EQ(c.max_abs, 0);
    EXPECT_EQ(c.cosine, 1.0) << c.name;  // exactly: a . a / sqrt(a.a * a.a)
  }
}

TEST(CompareFiles, F32AgainstBF16GivesTheRoundingError) {
  const std::vector<float> w = ramp(4096, 2);
  std::vector<uint16_t> bf(w.size());
  convert(Dtype::F32, std::as_bytes(std::span(w)), Dtype::BF16,
          std::as_writable_bytes(std::span(bf)), w.size());
  std::vector<float> back(w.size());
  convert(Dtype::BF16, std::as_bytes(std::span(bf)), Dtype::F32,
          std::as_writable_bytes(std::span(back)), w.size());
  double max_abs = 0, max_rel = 0, squares = 0, dot = 0, na = 0, nb = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    const double u = w[i], v = back[i], d = std::fabs(u - v);
    max_abs = std::max(max_abs, d);
    if (d > 0) max_rel = std::max(max_rel, d / std::fabs(v));
    squares += d * d;
    dot += u * v;
    na += u * u;
    nb += v * v;
  }
  const File a = File::from_bytes(
      serialize(std::vector<TensorData>{{"w", Dtype::F32, {64, 64}, std::as_bytes(std::span(w))}}));
  const File b = File::from_bytes(serialize(
      std::vector<TensorData>{{"w", Dtype::BF16, {64, 64}, std::as_bytes(std::span(bf))}}));
  const CompareReport r = compare_files(a, b);
  const TensorComparison& c = find(r, "w");
  EXPECT_EQ(c.a_dtype, "F32");
  EXPECT_EQ(c.b_dtype, "BF16");
  EXPECT_TRUE(c.compared);
  EXPECT_FALSE(c.equal);
  EXPECT_FALSE(r.equal);
  EXPECT_EQ(c.max_abs, max_abs);
  EXPECT_EQ(c.max_rel, max_rel);
  EXPECT_NEAR(c.rmse, std::sqrt(squares / 4096), 1e-12);
  EXPECT_NEAR(c.cosine, dot / std::sqrt(na * nb), 1e-12);
  EXPECT_LT(max_rel, 1.0 / 256);  // BF16 keeps 8 bits
  // A tolerance that covers the rounding makes them equal.
  CompareOptions o;
  o.rtol = 1.0 / 256;
  EXPECT_TRUE(compare_files(a, b, o).equal);
  o.rtol = 0;
  o.atol = max_abs / 2;
  const TensorComparison half = compare_files(a, b, o).tensors[0];
  EXPECT_GT(half.outside, 0u);
  EXPECT_LT(half.outside, 4096u);
}

TEST(CompareFiles, NaNAndInfinities) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = INFINITY;
  const std::vector<float> x{1, nan, inf, -inf, 2}, same{1, nan, inf, -inf, 2},
      other{1, 0, inf, inf, 2};
  const auto file = [](const std::vector<float>& v) {
    return File::from_bytes(
        serialize(std::vector<TensorData>{{"v", Dtype::F32, {5}, std::as_bytes(std::span(v))}}));
  };
  const TensorComparison c = compare_files(file(x), file(same)).tensors[0];
  EXPECT_TRUE(c.equal);  // NaN equals NaN in the same place, an infinity itself
  EXPECT_EQ(c.max_abs, 0);
  const TensorComparison d = compare_files(file(x), file(other)).tensors[0];
  EXPECT_FALSE(d.equal);
  EXPECT_EQ(d.outside, 2u);
  EXPECT_TRUE(std::isinf(d.max_abs));
  EXPECT_EQ(d.rmse, 0);  // the finite pairs agree
}

TEST(CompareFiles, QuantizedWeightsAgainstPlainByLogicalName) {
  test::TempDir dir;
  const std::vector<float> w = ramp(128 * 64, 1), bias = ramp(128, 0.5f);
  save_file(
      dir / "plain.safetensors",
      std::vector<TensorData>{
          {"model.layers.0.mlp.up_proj.weight", Dtype::F32, {128, 64}, std::as_bytes(std::span(w))},
          {"model.layers.0.mlp.up_proj.bias", Dtype::F32, {128}, std::as_bytes(std::span(bias))}});
  for (const char* scheme : {"nf4", "int4-g32-sym", "int8"}) {
    QuantizeOptions q;
    q.scheme = QuantScheme::parse(scheme);
    quantize_file(File::open(dir / "plain.safetensors"), dir / "q.safetensors", q);
    const File plain = File::open(dir / "plain.safetensors"),
               quantized = File::open(dir / "q.safetensors");
    const CompareReport r = compare_files(plain, quantized);
    // The stored tensors (absmax, scales, SCB, ...) are not names of their own here.
    EXPECT_TRUE(r.only_in_a.empty() && r.only_in_b.empty()) << scheme;
    ASSERT_EQ(r.tensors.size(), 2u) << scheme;
    const TensorComparison& c = find(r, "model.layers.0.mlp.up_proj.weight");
    EXPECT_EQ(c.b_dtype, QuantScheme::parse(scheme).name());
    // The figures are those of the dequantized values.
    std::vector<float> d(w.size());
    QuantizedReader(quantized, c.name)
        .read(0, d.size(), Dtype::F32, std::as_writable_bytes(std::span(d)));
    double max_abs = 0, squares = 0;
    for (size_t i = 0; i < w.size(); ++i) {
      const double e = std::fabs(static_cast<double>(w[i]) - d[i]);
      max_abs = std::max(max_abs, e);
      squares += e * e;
    }
    EXPECT_EQ(c.max_abs, max_abs) << scheme;
    EXPECT_NEAR(c.rmse, std::sqrt(squares / static_cast<double>(w.size())), 1e-12) << scheme;
    EXPECT_GT(c.cosine, 0.98) << scheme;
    EXPECT_LT(c.cosine, 1.0) << scheme;
    EXPECT_TRUE(find(r, "model.layers.0.mlp.up_proj.bias").equal) << scheme;
  }
}

TEST(CompareFiles, WhatCannotBeComparedSaysWhy) {
  const std::vector<float> w(6, 1.0f);
  std::vector<std::byte> c64(64, std::byte{1}), c64b(64, std::byte{1});
  c64b[5] = std::byte{2};
  const File a = File::from_bytes(serialize(
      std::vector<TensorData>{{"w", Dtype::F32, {2, 3}, std::as_bytes(std::span(w))},
                              {"c", Dtype::C64, {8}, c64},
                              {"only_a", Dtype::F32, {1}, std::as_bytes(std::span(w).first(1))}}));
  const File b = File::from_bytes(serialize(
      std::vector<TensorData>{{"w", Dtype::F32, {3, 2}, std::as_bytes(std::span(w))},
                              {"c", Dtype::C64, {8}, c64b},
                              {"only_b", Dtype::F32, {1}, std::as_bytes(std::span(w).first(1))}}));
  const CompareReport r = compare_files(a, b);
  EXPECT_EQ(r.only_in_a, std::vector<std::string>{"only_a"});
  EXPECT_EQ(r.only_in_b, std::vector<std::string>{"only_b"});
  const TensorComparison& shape = find(r, "w");
  EXPECT_FALSE(shape.compared);
  EXPECT_EQ(shape.note, "shape [2, 3] vs [3, 2]");
  const TensorComparison& bytes = find(r, "c");  // no numeric values: its bytes
  EXPECT_TRUE(bytes.compared);
  EXPECT_FALSE(bytes.equal);
  EXPECT_EQ(bytes.note, "bytes differ");
  EXPECT_TRUE(compare_files(a, a).equal);
}

TEST(CompareFiles, NamesInNaturalOrder) {
  const std::vector<float> w(1, 1.0f);
  std::vector<TensorData> t;
  const std::vector<std::string> names{"layers.10.w", "layers.2.w", "layers.1.w", "emb"};
  for (const std::string& n : names) t.push_back({n, Dtype::F32, {1}, std::as_bytes(std::span(w))});
  const File f = File::from_bytes(serialize(t));
  std::vector<std::string> order;
  for (const TensorComparison& c : compare_files(f, f).tensors) order.push_back(c.name);
  EXPECT_EQ(order, (std::vector<std::string>{"emb", "layers.1.w", "layers.2.w", "layers.10.w"}));
  EXPECT_TRUE(natural_less("a01", "a1"));
  EXPECT_FALSE(natural_less("a1", "a01"));
  EXPECT_TRUE(natural_less("x9", "x10"));
  EXPECT_TRUE(natural_less("x99999999999999999999998", "x99999999999999999999999"));
  EXPECT_FALSE(natural_less("same", "same"));
}

TEST(CompareFiles, FiguresDoNotDependOnTheThreads) {
  const std::vector<float> w = ramp(3'000'000, 7);
  std::vector<uint16_t> h(w.size());
  convert(Dtype::F32, std::as_bytes(std::span(w)), Dtype::F16, std::as_writable_bytes(std::span(h)),
          w.size());
  const File a = File::from_bytes(serialize(
      std::vector<TensorData>{{"w", Dtype::F32, {3000, 1000}, std::as_bytes(std::span(w))}}));
  const File b = File::from_bytes(serialize(
      std::vector<TensorData>{{"w", Dtype::F16, {3000, 1000}, std::as_bytes(std::span(h))}}));
  std::vector<TensorComparison> runs;
  uint64_t last = 0, total = 0;
  for (unsigned threads : {1u, 2u, 5u}) {
    set_conversion_threads(threads);
    CompareOptions o;
    o.progress = [&](uint64_t done, uint64_t all) {
      EXPECT_GE(done, last);
      last = done;
      total = all;
    };
    last = 0;
    runs.push_back(compare_files(a, b, o).tensors[0]);
    EXPECT_EQ(last, total);
    EXPECT_EQ(total, w.size());
  }
  set_conversion_threads(0);
  for (const TensorComparison& c : runs) {
    EXPECT_EQ(c.rmse, runs[0].rmse);
    EXPECT_EQ(c.cosine, runs[0].cosine);
    EXPECT_EQ(c.max_abs, runs[0].max_abs);
    EXPECT_EQ(c.outside, runs[0].outside);
  }
}

TEST(CompareFiles, SixtyFourBitIntegersAreComparedExactly) {
  // 2^53 and 2^53 + 1 are one double: the bytes still tell them apart.
  const std::vector<int64_t> a{int64_t{1} << 53}, b{(int64_t{1} << 53) + 1};
  const File fa = File::from_bytes(
      serialize(std::vector<TensorData>{{"n", Dtype::I64, {1}, std::as_bytes(std::span(a))}}));
  const File fb = File::from_bytes(
      serialize(std::vector<TensorData>{{"n", Dtype::I64, {1}, std::as_bytes(std::span(b))}}));
  const CompareReport r = compare_files(fa, fb);
  EXPECT_FALSE(r.equal);
  EXPECT_EQ(r.tensors[0].note, "values differ beyond F64's precision");
  EXPECT_TRUE(compare_files(fa, fa).equal);
}

TEST(CompareFiles, ToleranceMustBeAFiniteNonNegativeNumber) {
  const std::vector<float> w(1, 1.0f);
  const File f = File::from_bytes(
      serialize(std::vector<TensorData>{{"w", Dtype::F32, {1}, std::as_bytes(std::span(w))}}));
  for (double bad : {-1.0, static_cast<double>(NAN), static_cast<double>(INFINITY)}) {
    CompareOptions o;
    o.atol = bad;
    EXPECT_THROW(compare_files(f, f, o), Error);
  }
}

TEST(CompareFiles, AnEmptySetIsRefused) {
  const std::vector<float> w(1, 1.0f);
  const File f = File::from_bytes(
      serialize(std::vector<TensorData>{{"w", Dtype::F32, {1}, std::as_bytes(std::span(w))}}));
  EXPECT_THROW(compare_files(std::span<const File>(), std::span(&f, 1)), Error);
  EXPECT_THROW(compare_files(std::span(&f, 1), std::span<const File>()), Error);
  EXPECT_TRUE(find_quantized_weights(std::span<const File>()).empty());
}

}  // namespace
}  // namespace tlio

namespace tlio {
namespace {

// A tie record ({alias: tensor} metadata) stands for its tensor: a file that stores both names
// equals one that ties them.
TEST(CompareTies, AnAliasComparesAsItsTensor) {
  const std::vector<float> w(12, 0.5f);
  const TensorData emb{"emb.weight", Dtype::F32, {4, 3}, std::as_bytes(std::span(w))};
  const TensorData head{"head.weight", Dtype::F32, {4, 3}, std::as_bytes(std::span(w))};
  const File tied = File::from_bytes(
      serialize(std::vector{emb}, Metadata{{"head.weight", "emb.weight"}}), "tied");
  const File both = File::from_bytes(serialize(std::vector{emb, head}), "both");
  const CompareReport r = compare_files(tied, both);
  EXPECT_TRUE(r.equal);
  EXPECT_TRUE(r.only_in_a.empty() && r.only_in_b.empty());
  EXPECT_EQ(r.tensors.size(), 2u);
}

}  // namespace
}  // namespace tlio

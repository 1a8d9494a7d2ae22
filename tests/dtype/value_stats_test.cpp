// Tests for tlio/value_stats.hpp: the figures against a plain reference computed here in long
// double (every value kind: NaN, infinities, zeros, odd lengths that leave SIMD tails), blocks
// merged in order, the histogram against numpy's binning rule written out, the sums of the
// differences of two runs against their definitions, and the refusals.
#include "tlio/value_stats.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <span>
#include <vector>

#include "tlio/convert.hpp"
#include "tlio/error.hpp"

namespace tlio {
namespace {

const double kInf = std::numeric_limits<double>::infinity();

template <class T>
std::span<const std::byte> bytes_of(const std::vector<T>& v) {
  return std::as_bytes(std::span(v));
}

// The figures as their definitions say, one value at a time, in long double.
ValueStats reference(const std::vector<double>& v) {
  ValueStats s;
  long double sum = 0;
  for (double x : v) {
    ++s.count;
    if (std::isnan(x)) {
      ++s.nan;
      continue;
    }
    if (std::isinf(x)) ++s.inf;
    if (x == 0) ++s.zero;
    s.min = std::min(s.min, x);
    s.max = std::max(s.max, x);
    if (std::isfinite(x)) sum += x;
  }
  const long double n = static_cast<long double>(s.finite()), mean = n > 0 ? sum / n : 0;
  long double m2 = 0;
  for (double x : v)
    if (std::isfinite(x)) m2 += (x - mean) * (x - mean);
  s.mean = static_cast<double>(mean);
  s.m2 = static_cast<double>(m2);
  return s;
}

void expect_like(const ValueStats& got, const ValueStats& want) {
  EXPECT_EQ(got.count, want.count);
  EXPECT_EQ(got.nan, want.nan);
  EXPECT_EQ(got.inf, want.inf);
  EXPECT_EQ(got.zero, want.zero);
  EXPECT_EQ(got.min, want.min);
  EXPECT_EQ(got.max, want.max);
  EXPECT_NEAR(got.mean, want.mean, 1e-12 * (1 + std::fabs(want.mean)));
  EXPECT_NEAR(got.std_dev(), want.std_dev(), 1e-12 * (1 + want.std_dev()));
}

std::vector<double> sample(size_t n, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(3.0, 50.0);
  std::vector<double> v(n);
  for (double& x : v) x = normal(rng);
  return v;
}

TEST(ValueStats, F32AndF64MatchTheDefinitionsWithEveryKindOfValue) {
  for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{4096}, size_t{4097}, size_t{100003}}) {
    std::vector<double> v = sample(n, static_cast<unsigned>(n));
    if (n > 10) {
      v[3] = std::numeric_limits<double>::quiet_NaN();
      v[5] = kInf;
      v[n - 1] = -kInf;
      v[n / 2] = 0.0;
      v[n / 2 + 1] = -0.0;
    }
    std::vector<float> f(v.begin(), v.end());
    expect_like(value_stats(Dtype::F64, bytes_of(v), n), reference(v));
    expect_like(value_stats(Dtype::F32, bytes_of(f), n),
                reference(std::vector<double>(f.begin(), f.end())));
  }
}

TEST(ValueStats, NarrowAndIntegerDtypesAreWidenedFirst) {
  const std::vector<double> v = sample(9000, 1);
  for (Dtype d :
       {Dtype::F16, Dtype::BF16, Dtype::I32, Dtype::U8, Dtype::BOOL, Dtype::F8_E4M3, Dtype::F4}) {
    std::vector<std::byte> raw(bytes_for(d, v.size()));
    if (d == Dtype::I32 || d == Dtype::U8 ||
        d == Dtype::BOOL) {  // (F64 converts to floating dtypes only)
      for (size_t i = 0; i < v.size(); ++i) {
        const int32_t x = static_cast<int32_t>(v[i]);
        if (d == Dtype::I32)
          std::memcpy(raw.data() + 4 * i, &x, 4);
        else if (d == Dtype::U8)
          raw[i] = static_cast<std::byte>(x & 0xff);
        else
          raw[i] = static_cast<std::byte>(x > 0);
      }
    } else {
      convert(Dtype::F64, bytes_of(v), d, raw, v.size());
    }
    std::vector<double> back(v.size());
    convert(d, raw, Dtype::F64, std::as_writable_bytes(std::span(back)), v.size());
    expect_like(value_stats(d, raw, v.size()), reference(back));
  }
}

TEST(ValueStats, PiecesMergedInOrderGiveTheWhole) {
  const std::vector<double> v = sample(50000, 2);
  ValueStats merged;
  for (size_t at = 0; at < v.size(); at += 12345) {
    const size_t n = std::min<size_t>(12345, v.size() - at);
    merged.merge(value_stats(Dtype::F64, bytes_of(v).subspan(at * 8, n * 8), n));
  }
  expect_like(merged, reference(v));
  ValueStats empty;
  empty.merge(ValueStats{});
  EXPECT_EQ(empty.count, 0u);
  EXPECT_EQ(empty.std_dev(), 0.0);
}

// numpy.histogram for float64: index = int((x - lo) * n / (hi - lo)), then corrected against
// the edges k * step + lo (the last one hi), the last bin closed.
std::vector<uint64_t> numpy_histogram(const std::vector<double>& v, size_t bins, double lo,
                                      double hi) {
  std::vector<uint64_t> out(bins, 0);
  const double norm = static_cast<double>(bins) / (hi - lo),
               step = (hi - lo) / static_cast<double>(bins);
  std::vector<double> edges(bins + 1);
  for (size_t k = 0; k <= bins; ++k) edges[k] = k == bins ? hi : static_cast<double>(k) * step + lo;
  for (double x : v) {
    if (!(x >= lo && x <= hi)) continue;
    long k = static_cast<long>((x - lo) * norm);
    if (k == static_cast<long>(bins)) --k;
    if (x < edges[k]) --k;
    if (x >= edges[k + 1] && k != static_cast<long>(bins) - 1) ++k;
    ++out[k];
  }
  return out;
}

TEST(ValueStats, HistogramBinsAsNumpyDoes) {
  std::vector<double> v = sample(30001, 3);
  v[10] = std::numeric_limits<double>::quiet_NaN();
  v[11] = kInf;
  // Values on the edges themselves, and outside the range, too.
  const double lo = -40, hi = 60;
  for (int k = 0; k <= 16; ++k) v.push_back(lo + k * (hi - lo) / 16);
  v.push_back(-1e9);
  for (size_t bins : {size_t{1}, size_t{16}, size_t{7}}) {
    std::vector<uint64_t> got(bins, 0);
    add_to_histogram(Dtype::F64, bytes_of(v), v.size(), lo, hi, got);
    EXPECT_EQ(got, numpy_histogram(v, bins, lo, hi)) << bins;
  }
  // Added to what the bins held: pieces of a run counted into the same bins.
  std::vector<uint64_t> twice(16, 0);
  add_to_histogram(Dtype::F64, bytes_of(v), v.size(), lo, hi, twice);
  add_to_histogram(Dtype::F64, bytes_of(v), v.size(), lo, hi, twice);
  std::vector<uint64_t> want = numpy_histogram(v, 16, lo, hi);
  for (uint64_t& b : want) b *= 2;
  EXPECT_EQ(twice, want);
}

TEST(ValueStats, Refusals) {
  const std::vector<double> v{1, 2, 3};
  std::vector<uint64_t> bins(4);
  EXPECT_THROW(value_stats(Dtype::C64, bytes_of(v), 1), Error);
  EXPECT_THROW(value_stats(Dtype::F64, bytes_of(v), 4), Error);  // 32 bytes asked, 24 given
  EXPECT_THROW(add_to_histogram(Dtype::F64, bytes_of(v), 3, 2, 2, bins), Error);
  EXPECT_THROW(add_to_histogram(Dtype::F64, bytes_of(v), 3, 0, kInf, bins), Error);
  EXPECT_THROW(add_to_histogram(Dtype::F64, bytes_of(v), 3, 0, 1, std::span<uint64_t>{}), Error);
}

// The sums of pairs as their definitions say, one pair at a time, in long double.
DifferenceSums difference_reference(const std::vector<double>& a, const std::vector<double>& b,
                                    double atol = 0, double rtol = 0) {
  DifferenceSums s;
  long double d2 = 0, a2 = 0, b2 = 0, ab = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i]) || !std::isfinite(b[i])) {
      ++s.nonfinite;
      s.mismatch += !(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])));
      continue;
    }
    const long double x = a[i], y = b[i];
    ++s.finite;
    d2 += (x - y) * (x - y), a2 += x * x, b2 += y * y, ab += x * y;
    const double d = std::fabs(a[i] - b[i]);
    s.max_abs = std::max(s.max_abs, d);
    if (d != 0) s.max_rel = std::max(s.max_rel, b[i] == 0 ? kInf : d / std::fabs(b[i]));
    s.outside += !(d <= atol + rtol * std::fabs(b[i]));
  }
  s.d2 = static_cast<double>(d2), s.a2 = static_cast<double>(a2), s.b2 = static_cast<double>(b2);
  s.ab = static_cast<double>(ab);
  return s;
}

TEST(DifferenceSums, EqualTheDefinitionsAcrossDtypesAndTails) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0, 3);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const size_t n : {size_t{1}, size_t{7}, size_t{2048}, size_t{5003}}) {
    std::vector<float> a(n), b(n);
    for (size_t i = 0; i < n; ++i) a[i] = normal(rng), b[i] = a[i] + 0.01f * normal(rng);
    if (n > 100)
      a[17] = static_cast<float>(nan), b[17] = static_cast<float>(nan),
      b[40] = static_cast<float>(kInf), a[41] = static_cast<float>(-kInf),
      b[41] = static_cast<float>(-kInf), a[99] = static_cast<float>(nan);
    std::vector<uint16_t> b16(n);
    convert(Dtype::F32, bytes_of(b), Dtype::BF16, std::as_writable_bytes(std::span(b16)), n);
    std::vector<float> b16_back(n);
    convert(Dtype::BF16, bytes_of(b16), Dtype::F32, std::as_writable_bytes(std::span(b16_back)), n);
    std::vector<double> a64(a.begin(), a.end()), b64(b.begin(), b.end()),
        bb(b16_back.begin(), b16_back.end());
    std::vector<int32_t> ints(n);
    for (size_t i = 0; i < n; ++i) ints[i] = static_cast<int32_t>(i % 11) - 5;
    std::vector<double> ints64(ints.begin(), ints.end());
    struct Case {
      Dtype ad;
      std::span<const std::byte> a;
      Dtype bd;
      std::span<const std::byte> b;
      const std::vector<double>&want_a, &want_b;
    };
    for (const Case& c :
         {Case{Dtype::F32, bytes_of(a), Dtype::F32, bytes_of(b), a64, b64},
          Case{Dtype::F32, bytes_of(a), Dtype::BF16, bytes_of(b16), a64, bb},
          Case{Dtype::F64, bytes_of(a64), Dtype::F32, bytes_of(b), a64, b64},
          Case{Dtype::I32, bytes_of(ints), Dtype::F64, bytes_of(b64), ints64, b64}}) {
      const double atol = 0.004, rtol = 0.001;
      const DifferenceSums got = difference_sums(c.ad, c.a, c.bd, c.b, n, atol, rtol),
                           want = difference_reference(c.want_a, c.want_b, atol, rtol);
      EXPECT_EQ(got.finite, want.finite) << n;
      EXPECT_EQ(got.nonfinite, want.nonfinite) << n;
      EXPECT_EQ(got.mismatch, want.mismatch) << n;
      EXPECT_EQ(got.outside, want.outside) << n;
      EXPECT_EQ(got.max_abs, want.max_abs) << n;
      EXPECT_EQ(got.max_rel, want.max_rel) << n;
      for (const auto& [g, w] :
           {std::pair{got.d2, want.d2}, {got.a2, want.a2}, {got.b2, want.b2}, {got.ab, want.ab}})
        EXPECT_NEAR(g, w, 1e-12 * (1 + std::fabs(w))) << n;
    }
  }
}

TEST(DifferenceSums, UnalignedRunsAndRefusals) {
  std::vector<float> a{1, 2, 3, 4, 5, 6, 7, 8, 9};
  std::vector<std::byte> shifted(a.size() * 4 + 1);
  std::memcpy(shifted.data() + 1, a.data(), a.size() * 4);
  const auto run = std::span<const std::byte>(shifted).subspan(1);
  const DifferenceSums s = difference_sums(Dtype::F32, run, Dtype::F32, bytes_of(a), a.size());
  EXPECT_EQ(s.finite, 9u);
  EXPECT_EQ(s.d2, 0);
  EXPECT_EQ(s.ab, s.a2);
  EXPECT_THROW(difference_sums(Dtype::F32, bytes_of(a), Dtype::F32, bytes_of(a), 10), Error);
  EXPECT_THROW(difference_sums(Dtype::C64, bytes_of(a), Dtype::F32, bytes_of(a), 2), Error);
}

// One set of rules for what the sums say, diff's and the report's: a NaN or an infinity on one
// side only is the worst difference; without a finite pair there is no RMSE or SQNR.
TEST(DifferenceFigures, OneSetOfRulesForDiffAndReports) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const auto figures = [](const std::vector<double>& a, const std::vector<double>& b) {
    return difference_figures(
        difference_sums(Dtype::F64, bytes_of(a), Dtype::F64, bytes_of(b), a.size()));
  };
  const DifferenceFigures all_nan = figures({nan, nan}, {nan, nan});
  EXPECT_TRUE(std::isnan(all_nan.rmse));
  EXPECT_TRUE(std::isnan(all_nan.sqnr_db));
  EXPECT_EQ(all_nan.outside, 0u);  // NaN equals NaN
  EXPECT_EQ(all_nan.max_abs, 0);
  const DifferenceFigures one_sided = figures({1, nan}, {1, 2});
  EXPECT_EQ(one_sided.max_abs, kInf);
  EXPECT_EQ(one_sided.max_rel, kInf);
  EXPECT_EQ(one_sided.sqnr_db, -kInf);
  EXPECT_EQ(one_sided.outside, 1u);
  EXPECT_EQ(one_sided.rmse, 0);  // over the one finite pair
  const DifferenceFigures none = figures({}, {});
  EXPECT_EQ(none.rmse, 0);
  EXPECT_EQ(none.cosine, 1);
  const DifferenceFigures off = figures({1, 3, 0}, {1, 2, 0});
  EXPECT_EQ(off.max_abs, 1);
  EXPECT_EQ(off.max_rel, 0.5);
  EXPECT_EQ(off.outside, 1u);
  EXPECT_DOUBLE_EQ(off.rmse, std::sqrt(1.0 / 3));
  // Sums past a double's range leave no cosine to give (not -1).
  EXPECT_TRUE(std::isnan(figures({1e200, 1e200}, {1e200, 1e200}).cosine));
  const DifferenceFigures from_zero = figures({0.5}, {0});
  EXPECT_EQ(from_zero.max_rel, kInf);
  EXPECT_EQ(from_zero.sqnr_db, -kInf);
}

}  // namespace
}  // namespace tlio

// Tests for tlio/convert.hpp and dtype/minifloat.hpp: exhaustive decoding checked against values
// computed here from each format's definition; narrowing checked against a brute-force nearest
// search over every value of the format; the SIMD kernels against the scalar helpers; F16
// against numpy's astype(float16) (vectors in tests/data/numpy).
#include "tlio/convert.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "dtype/convert_kernels.hpp"
#include "dtype/minifloat.hpp"
#include "test_util.hpp"
#include "tlio/error.hpp"

namespace tlio {
namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

// ---- Independent definitions of every format (sign, exponent, mantissa -> value) -------------

struct Def {
  Dtype dtype;
  int bits, e_bits, m_bits, bias;
  bool ieee;       // exponent all ones = Inf/NaN
  bool fn;         // S.1..1.1..1 = NaN, no Inf
  bool fnuz;       // 0x80 = NaN, no -0
  bool saturates;  // no NaN/Inf (F4)
};

const std::vector<Def>& defs() {
  static const std::vector<Def> d = {
      {Dtype::F16, 16, 5, 10, 15, true, false, false, false},
      {Dtype::BF16, 16, 8, 7, 127, true, false, false, false},
      {Dtype::F8_E5M2, 8, 5, 2, 15, true, false, false, false},
      {Dtype::F8_E4M3, 8, 4, 3, 7, false, true, false, false},
      {Dtype::F8_E4M3FNUZ, 8, 4, 3, 8, false, false, true, false},
      {Dtype::F8_E5M2FNUZ, 8, 5, 2, 16, false, false, true, false},
      {Dtype::F4, 4, 2, 1, 1, false, false, false, true},
  };
  return d;
}

double value_of(const Def& f, uint32_t b) {
  const uint32_t s = b >> (f.bits - 1), e = (b >> f.m_bits) & ((1u << f.e_bits) - 1),
                 m = b & ((1u << f.m_bits) - 1);
  const uint32_t emax = (1u << f.e_bits) - 1, mmax = (1u << f.m_bits) - 1;
  if (f.fnuz && b == (1u << (f.bits - 1))) return kNaN;
  if (f.ieee && e == emax) return m ? kNaN : (s ? -INFINITY : INFINITY);
  if (f.fn && e == emax && m == mmax) return kNaN;
  const double frac = static_cast<double>(m) / std::pow(2.0, f.m_bits);
  const double mag =
      e == 0 ? frac * std::pow(2.0, 1 - f.bias) : (1 + frac) * std::pow(2.0, int(e) - f.bias);
  return s ? -mag : mag;
}

bool same(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

TEST(Decode, EveryPatternOfEveryFormat) {
  for (const Def& f : defs()) {
    const detail::MiniFloatSpec* spec = detail::minifloat_spec(f.dtype);
    ASSERT_NE(spec, nullptr);
    for (uint32_t b = 0; b < (1u << f.bits); ++b)
      ASSERT_TRUE(same(detail::minifloat_decode(*spec, b), value_of(f, b)))
          << dtype_name(f.dtype) << " " << b;
  }
  for (uint32_t b = 0; b < 256; ++b) {
    double want = b == 0xFF ? kNaN : std::pow(2.0, int(b) - 127);
    ASSERT_TRUE(same(detail::e8m0_decode(static_cast<uint8_t>(b)), want)) << b;
  }
}

TEST(Decode, F16AndBF16ToF32AllPatternsEveryPath) {
  std::vector<uint16_t> all(65536);
  for (uint32_t i = 0; i < 65536; ++i) all[i] = static_cast<uint16_t>(i);
  for (Dtype d : {Dtype::F16, Dtype::BF16}) {
    const Def& f =
        *std::find_if(defs().begin(), defs().end(), [&](const Def& x) { return x.dtype == d; });
    std::vector<float> simd(65536);
    convert(d, std::as_bytes(std::span(all)), Dtype::F32, std::as_writable_bytes(std::span(simd)),
            65536);
    for (uint32_t b = 0; b < 65536; ++b) {
      const float one = d == Dtype::F16 ? f16_to_f32(static_cast<uint16_t>(b))
                                        : bf16_to_f32(static_cast<uint16_t>(b));
      ASSERT_TRUE(same(simd[b], value_of(f, b))) << dtype_name(d) << " " << b;
      ASSERT_TRUE(same(one, value_of(f, b))) << dtype_name(d) << " " << b;
      if (!std::isnan(one)) {  // decoding keeps the bits exactly: F32 -> back gives b
        ASSERT_EQ(d == Dtype::F16 ? f32_to_f16(one) : f32_to_bf16(one), b);
      }
    }
  }
}

TEST(Decode, Byte8ToF32AndBF16Tables) {
  std::vector<uint8_t> all(256);
  for (int i = 0; i < 256; ++i) all[i] = static_cast<uint8_t>(i);
  for (Dtype d :
       {Dtype::F8_E5M2, Dtype::F8_E4M3, Dtype::F8_E8M0, Dtype::F8_E4M3FNUZ, Dtype::F8_E5M2FNUZ}) {
    std::vector<float> f32(256);
    std::vector<uint16_t> bf16(256);
    convert(d, std::as_bytes(std::span(all)), Dtype::F32, std::as_writable_bytes(std::span(f32)),
            256);
    convert(d, std::as_bytes(std::span(all)), Dtype::BF16, std::as_writable_bytes(std::span(bf16)),
            256);
    for (int b = 0; b < 256; ++b) {
      const double want = detail::decode_float(d, static_cast<uint64_t>(b));
      ASSERT_TRUE(same(f32[b], want)) << dtype_name(d) << " " << b;
      ASSERT_TRUE(same(bf16_to_f32(bf16[b]), want)) << dtype_name(d) << " " << b;  // exact
    }
  }
}

// ---- Narrowing against a brute-force nearest search ------------------------------------------

// Every finite non-negative value of a format with its bits, sorted.
struct ValueTable {
  std::vector<std::pair<double, uint32_t>> finite;  // ascending, +0 first
  double max;
  uint32_t max_bits;
};

ValueTable table_of(const Def& f) {
  ValueTable t;
  for (uint32_t b = 0; b < (1u << (f.bits - 1)); ++b) {
    double v = value_of(f, b);
    if (std::isfinite(v)) t.finite.emplace_back(v, b);
  }
  std::sort(t.finite.begin(), t.finite.end());
  t.max = t.finite.back().first;
  t.max_bits = t.finite.back().second;
  return t;
}

// The expected bits of x per docs/dtypes.md ("Narrowing"), found by search (no rounding
// arithmetic).
uint32_t expected_bits(const Def& f, const ValueTable& t, double x) {
  const uint32_t sign = std::signbit(x) ? 1u << (f.bits - 1) : 0;
  const double a = std::fabs(x);
  auto overflow = [&]() -> uint32_t {
    if (f.ieee) return sign | (((1u << f.e_bits) - 1) << f.m_bits);
    if (f.fn) return sign | ((1u << (f.bits - 1)) - 1);
    if (f.fnuz) return 1u << (f.bits - 1);
    return sign | t.max_bits;  // saturating
  };
  if (std::isinf(a)) return overflow();
  auto it = std::lower_bound(t.finite.begin(), t.finite.end(), std::make_pair(a, 0u));
  uint32_t mag;
  if (it == t.finite.end()) {
    // Above max: the next value would be max + spacing at max.
    const double spacing = t.max - std::prev(t.finite.end(), 2)->first;
    const double half = t.max + spacing / 2;
    if (a < half || (a == half && (t.max_bits & 1) == 0))
      mag = t.max_bits;
    else
      return overflow();
  } else if (it->first == a) {
    mag = it->second;
  } else {
    auto lo = std::prev(it);
    const double dlo = a - lo->first, dhi = it->first - a;
    if (dlo < dhi)
      mag = lo->second;
    else if (dhi < dlo)
      mag = it->second;
    else
      mag = (lo->second & 1) == 0 ? lo->second : it->second;
  }
  if (f.fnuz && mag == 0) return 0;  // no negative zero
  return sign | mag;
}

// Inputs: random magnitudes across (and beyond) the range, every value, every midpoint, the
// neighbours of each midpoint, subnormal and overflow boundaries, zeros, infinities.
std::vector<double> probe_values(const ValueTable& t, std::mt19937_64& rng) {
  std::vector<double> xs = {0.0, -0.0, INFINITY, -INFINITY, 1e300, -1e300, 1e-300, 5e-324};
  for (size_t i = 0; i + 1 < t.finite.size(); ++i) {
    const double lo = t.finite[i].first, hi = t.finite[i + 1].first, mid = (lo + hi) / 2;
    for (double v : {lo, mid, std::nextafter(mid, 0.0), std::nextafter(mid, INFINITY),
                     static_cast<double>(std::nextafter(static_cast<float>(mid), 0.0f)),
                     static_cast<double>(std::nextafter(static_cast<float>(mid), INFINITY))}) {
      xs.push_back(v);
      xs.push_back(-v);
    }
  }
  const double spacing = t.max - t.finite[t.finite.size() - 2].first;
  for (double v : {t.max, t.max + spacing / 2, std::nextafter(t.max + spacing / 2, 0.0),
                   std::nextafter(t.max + spacing / 2, INFINITY), t.max * 2, t.max + spacing})
    xs.push_back(v), xs.push_back(-v);
  std::uniform_real_distribution<double> expo(std::log2(t.finite[1].first) - 4,
                                              std::log2(t.max) + 4);
  for (int i = 0; i < 20000; ++i) {
    const double v = std::exp2(expo(rng));
    xs.push_back(rng() % 2 ? v : -v);
  }
  return xs;
}

TEST(Narrow, FromF64AndF32MatchTheNearestSearch) {
  std::mt19937_64 rng(7);
  for (const Def& f : defs()) {
    const ValueTable t = table_of(f);
    std::vector<double> xs = probe_values(t, rng);
    if (f.dtype == Dtype::F16 || f.dtype == Dtype::BF16) {  // keep the 16-bit cases quick
      std::shuffle(xs.begin() + 8, xs.end(), rng);
      xs.resize(std::min<size_t>(xs.size(), 60000));
    }
    const size_t n = xs.size() & ~size_t{1};  // even, for F4
    std::vector<float> fs(n);
    for (size_t i = 0; i < n; ++i) fs[i] = static_cast<float>(xs[i]);
    const uint64_t out_bytes = bytes_for(f.dtype, n);
    std::vector<std::byte> from64(out_bytes), from32(out_bytes);
    convert(Dtype::F64, std::as_bytes(std::span(xs.data(), n)), f.dtype, from64, n);
    convert(Dtype::F32, std::as_bytes(std::span(fs)), f.dtype, from32, n);
    auto get = [&](const std::vector<std::byte>& v, size_t i) -> uint32_t {
      if (f.bits == 16)
        return uint32_t(std::to_integer<uint8_t>(v[2 * i])) |
               uint32_t(std::to_integer<uint8_t>(v[2 * i + 1])) << 8;
      if (f.bits == 8) return std::to_integer<uint8_t>(v[i]);
      const uint8_t byte = std::to_integer<uint8_t>(v[i / 2]);
      return i % 2 ? byte >> 4 : byte & 15;
    };
    for (size_t i = 0; i < n; ++i) {
      ASSERT_EQ(get(from64, i), expected_bits(f, t, xs[i]))
          << dtype_name(f.dtype) << " from F64 " << std::hexfloat << xs[i];
      ASSERT_EQ(get(from32, i), expected_bits(f, t, fs[i]))
          << dtype_name(f.dtype) << " from F32 " << std::hexfloat << fs[i];
    }
  }
}

TEST(Narrow, NaNKeepsSignAndTopPayload) {
  const uint32_t qnan = 0x7FC00000u, neg_payload = 0xFFE00001u, snan = 0x7F800001u;
  std::vector<uint32_t> in = {qnan, neg_payload, snan};
  std::vector<uint16_t> bf(3), h(3);
  convert(Dtype::F32, std::as_bytes(std::span(in)), Dtype::BF16,
          std::as_writable_bytes(std::span(bf)), 3);
  convert(Dtype::F32, std::as_bytes(std::span(in)), Dtype::F16,
          std::as_writable_bytes(std::span(h)), 3);
  EXPECT_EQ(bf, (std::vector<uint16_t>{0x7FC0, 0xFFE0, 0x7FC0}));
  EXPECT_EQ(h, (std::vector<uint16_t>{0x7E00, 0xFF00, 0x7E00}));
  std::vector<uint8_t> e4(3), e5(3), uz(3), e8(3);
  convert(Dtype::F32, std::as_bytes(std::span(in)), Dtype::F8_E4M3,
          std::as_writable_bytes(std::span(e4)), 3);
  convert(Dtype::F32, std::as_bytes(std::span(in)), Dtype::F8_E5M2,
          std::as_writable_bytes(std::span(e5)), 3);
  convert(Dtype::F32, std::as_bytes(std::span(in)), Dtype::F8_E4M3FNUZ,
          std::as_writable_bytes(std::span(uz)), 3);
  convert(Dtype::F32, std::as_bytes(std::span(in)), Dtype::F8_E8M0,
          std::as_writable_bytes(std::span(e8)), 3);
  EXPECT_EQ(e4, (std::vector<uint8_t>{0x7F, 0xFF, 0x7F}));
  EXPECT_EQ(e5, (std::vector<uint8_t>{0x7E, 0xFF, 0x7E}));
  EXPECT_EQ(uz, (std::vector<uint8_t>{0x80, 0x80, 0x80}));
  EXPECT_EQ(e8, (std::vector<uint8_t>{0xFF, 0xFF, 0xFF}));
}

TEST(Narrow, E8M0Rules) {
  std::vector<double> in = {0.0,
                            -1.0,
                            kNaN,
                            1.0,
                            1.5,
                            1.4999,
                            3.0,
                            0.75,
                            std::ldexp(1.0, -130),
                            INFINITY,
                            1e300,
                            std::ldexp(1.0, 127),
                            std::ldexp(1.0, -127)};
  std::vector<uint8_t> out(in.size());
  convert(Dtype::F64, std::as_bytes(std::span(in)), Dtype::F8_E8M0,
          std::as_writable_bytes(std::span(out)), in.size());
  EXPECT_EQ(out, (std::vector<uint8_t>{0xFF, 0xFF, 0xFF, 127, 128, 127, 129, 127, 0, 0xFE, 0xFE,
                                       0xFE, 0}));
}

TEST(Narrow, F4PacksLowNibbleFirstSaturatesAndRefusesNaN) {
  std::vector<float> in = {0.5f, 6.0f, -1.0f, 100.0f, 5.0f, -0.0f};
  std::vector<uint8_t> out(3);
  convert(Dtype::F32, std::as_bytes(std::span(in)), Dtype::F4,
          std::as_writable_bytes(std::span(out)), 6);
  EXPECT_EQ(out, (std::vector<uint8_t>{0x71, 0x7A, 0x86}));  // 5 -> 4 (tie to even), -0 kept
  std::vector<float> back(6);
  convert(Dtype::F4, std::as_bytes(std::span(out)), Dtype::F32,
          std::as_writable_bytes(std::span(back)), 6);
  EXPECT_EQ(back, (std::vector<float>{0.5f, 6.0f, -1.0f, 6.0f, 4.0f, -0.0f}));
  in[2] = NAN;
  try {
    convert(Dtype::F32, std::as_bytes(std::span(in)), Dtype::F4,
            std::as_writable_bytes(std::span(out)), 6);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
  }
}

// ---- SIMD kernels against the scalar helpers --------------------------------------------------

TEST(Kernels, AgreeWithScalarOnSampledBitPatterns) {
  // Every 251st pattern of the 2^32 (coprime stride) plus whole neighbourhoods of the edges.
  std::vector<uint32_t> in;
  for (uint64_t b = 0; b < (uint64_t{1} << 32); b += 251) in.push_back(static_cast<uint32_t>(b));
  for (uint32_t edge : {0x00000000u, 0x33000000u, 0x387FC000u, 0x38800000u, 0x477FE000u,
                        0x477FF000u, 0x47800000u, 0x7F7FFFFFu, 0x7F800000u, 0x7FC00000u})
    for (uint32_t d = 0; d < 8192; ++d) {
      in.push_back(edge + d - 4096);
      in.push_back((edge + d - 4096) | 0x80000000u);
    }
  const size_t n = in.size();
  std::vector<uint16_t> bf(n), h(n);
  detail::simd_f32_to_bf16(reinterpret_cast<const std::byte*>(in.data()),
                           reinterpret_cast<std::byte*>(bf.data()), n);
  detail::simd_f32_to_f16(reinterpret_cast<const std::byte*>(in.data()),
                          reinterpret_cast<std::byte*>(h.data()), n);
  for (size_t i = 0; i < n; ++i) {
    float f;
    std::memcpy(&f, &in[i], 4);
    ASSERT_EQ(bf[i], f32_to_bf16(f)) << std::hex << in[i];
    ASSERT_EQ(h[i], f32_to_f16(f)) << std::hex << in[i];
  }
}

TEST(Kernels, ScalarHelpersMatchTheReference) {
  std::mt19937_64 rng(99);
  const auto* f16 = detail::minifloat_spec(Dtype::F16);
  const auto* b16 = detail::minifloat_spec(Dtype::BF16);
  for (int i = 0; i < 2000000; ++i) {
    uint32_t u = static_cast<uint32_t>(rng());
    if (i % 4 == 0)
      u = (u & 0x807FFFFFu) | ((100u + static_cast<uint32_t>(rng() % 60)) << 23);  // F16's range
    float f;
    std::memcpy(&f, &u, 4);
    const uint64_t payload = uint64_t{u & 0x7FFFFFu} << 29;
    ASSERT_EQ(f32_to_bf16(f), detail::minifloat_encode(*b16, f, payload)) << std::hex << u;
    ASSERT_EQ(f32_to_f16(f), detail::minifloat_encode(*f16, f, payload)) << std::hex << u;
  }
}

TEST(Kernels, OddLengthsAndUnalignedBuffers) {
  std::mt19937_64 rng(3);
  for (size_t n = 0; n < 70; ++n)
    for (size_t off = 0; off < 4; ++off) {
      std::vector<std::byte> src(4 * n + 8), a(4 * n + 8), b(4 * n + 8);
      for (auto& x : src) x = static_cast<std::byte>(rng());
      for (auto [from, to] : {std::pair{Dtype::F32, Dtype::BF16},
                              {Dtype::F32, Dtype::F16},
                              {Dtype::BF16, Dtype::F32},
                              {Dtype::F16, Dtype::F32}}) {
        const size_t sb = n * dtype_bits(from) / 8, db = n * dtype_bits(to) / 8;
        convert(from, std::span(src).subspan(off, sb), to, std::span(a).subspan(off + 1, db), n);
        detail::convert_scalar(from, src.data() + off, to, b.data() + off + 1, 0, n);
        for (size_t i = 0; i < db; ++i)
          if (to == Dtype::F32) {
            float x, y;  // NaN payloads may differ only in quietness through the F32 decode
            std::memcpy(&x, &a[off + 1 + (i & ~size_t{3})], 4);
            std::memcpy(&y, &b[off + 1 + (i & ~size_t{3})], 4);
            ASSERT_TRUE(same(x, y) || a[off + 1 + i] == b[off + 1 + i]);
          } else {
            ASSERT_EQ(a[off + 1 + i], b[off + 1 + i]) << n << " " << off << " " << i;
          }
      }
    }
}

TEST(Kernels, LargeArraysSplitOverCoresGiveTheSameBytes) {
  const size_t n = (size_t{3} << 20) + 77;
  std::mt19937 rng(5);
  std::vector<float> in(n);
  for (auto& x : in)
    x = std::ldexp(static_cast<float>(rng()) / 4294967296.0f - 0.5f,
                   static_cast<int>(rng() % 40) - 20);
  std::vector<uint16_t> whole(n), pieces(n);
  convert(Dtype::F32, std::as_bytes(std::span(in)), Dtype::BF16,
          std::as_writable_bytes(std::span(whole)), n);
  for (size_t i = 0; i < n; ++i) pieces[i] = f32_to_bf16(in[i]);
  EXPECT_EQ(whole, pieces);
  std::vector<uint8_t> f4(n / 2 * 2 / 2);
  convert(Dtype::F32, std::as_bytes(std::span(in.data(), n / 2 * 2)), Dtype::F4,
          std::as_writable_bytes(std::span(f4)), n / 2 * 2);
  std::vector<uint8_t> f4_ref(f4.size());
  detail::convert_scalar(Dtype::F32, reinterpret_cast<const std::byte*>(in.data()), Dtype::F4,
                         reinterpret_cast<std::byte*>(f4_ref.data()), 0, n / 2 * 2);
  EXPECT_EQ(f4, f4_ref);
}

// ---- numpy vectors ---------------------------------------------------------------------------

TEST(Numpy, F32ToF16MatchesAstype) {
  // tests/data/numpy/f32_to_f16.bin: (u32 input bits, u16 numpy result) pairs, little-endian,
  // made by tests/data/numpy/gen_f16_vectors.py with Debian's numpy.
  auto bytes = test::read_bytes(test::data_dir() / "numpy" / "f32_to_f16.bin");
  ASSERT_EQ(bytes.size() % 6, 0u);
  const size_t n = bytes.size() / 6;
  ASSERT_GT(n, 100000u);
  std::vector<uint32_t> in(n);
  std::vector<uint16_t> want(n), got(n);
  for (size_t i = 0; i < n; ++i) {
    std::memcpy(&in[i], bytes.data() + 6 * i, 4);
    std::memcpy(&want[i], bytes.data() + 6 * i + 4, 2);
  }
  convert(Dtype::F32, std::as_bytes(std::span(in)), Dtype::F16,
          std::as_writable_bytes(std::span(got)), n);
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], want[i]) << std::hex << in[i];
}

// ---- integers, refusals ----------------------------------------------------------------------

TEST(Integers, ToF32AndF64RoundOnce) {
  std::vector<int64_t> i64 = {0, -1, (int64_t{1} << 53) + 1, INT64_MIN, INT64_MAX, 16777217};
  std::vector<double> d(i64.size());
  std::vector<float> f(i64.size());
  convert(Dtype::I64, std::as_bytes(std::span(i64)), Dtype::F64,
          std::as_writable_bytes(std::span(d)), i64.size());
  convert(Dtype::I64, std::as_bytes(std::span(i64)), Dtype::F32,
          std::as_writable_bytes(std::span(f)), i64.size());
  for (size_t i = 0; i < i64.size(); ++i) {
    EXPECT_EQ(d[i], static_cast<double>(i64[i]));
    EXPECT_EQ(f[i], static_cast<float>(i64[i]));  // direct, not through double
  }
  std::vector<uint8_t> b = {0, 1, 2, 255};
  std::vector<float> bf(4);
  convert(Dtype::BOOL, std::as_bytes(std::span(b)), Dtype::F32,
          std::as_writable_bytes(std::span(bf)), 4);
  EXPECT_EQ(bf, (std::vector<float>{0, 1, 1, 1}));
  std::vector<uint16_t> u16 = {65535};
  std::vector<float> uf(1);
  convert(Dtype::U16, std::as_bytes(std::span(u16)), Dtype::F32,
          std::as_writable_bytes(std::span(uf)), 1);
  EXPECT_EQ(uf[0], 65535.0f);
}

TEST(Refusals, NonsenseConversionsNameBothDtypes) {
  std::vector<std::byte> buf(64);
  for (auto [from, to] : {std::pair{Dtype::C64, Dtype::F32},
                          {Dtype::F32, Dtype::C64},
                          {Dtype::F6_E2M3, Dtype::F32},
                          {Dtype::F32, Dtype::F6_E3M2},
                          {Dtype::F32, Dtype::I32},
                          {Dtype::I8, Dtype::BF16}}) {
    EXPECT_FALSE(can_convert(from, to));
    try {
      convert(from, std::span(buf).first(bytes_for(from, 4)), to,
              std::span(buf).first(bytes_for(to, 4)), 4);
      FAIL();
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::unsupported);
      EXPECT_NE(std::string(e.what()).find(std::string(dtype_name(from))), std::string::npos);
      EXPECT_NE(std::string(e.what()).find(std::string(dtype_name(to))), std::string::npos);
    }
  }
  EXPECT_THROW(
      convert(Dtype::F32, std::span(buf).first(8), Dtype::BF16, std::span(buf).first(3), 2), Error);
  EXPECT_THROW(bytes_for(Dtype::F4, 3), Error);
}

}  // namespace
}  // namespace tlio

// int4 and bitsandbytes 4-bit quantize/dequantize throughput on a matrix far larger than the
// caches (256 Mi weights), against memcpy of the output size measured in the same run.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "quant/bnb/bnb.hpp"
#include "quant/int4/int4.hpp"
#include "tlio/bnb.hpp"
#include "tlio/convert.hpp"
#include "tlio/quant.hpp"

namespace {

constexpr uint64_t kRows = 16384, kCols = 16384, kGroup = 32;  // 256 Mi weights: 1 GiB of F32
constexpr uint64_t kElems = kRows * kCols;

struct Matrix {
  std::vector<float> w;
  std::vector<uint8_t> q;
  std::vector<uint16_t> s;
};

const Matrix& matrix() {
  static const Matrix m = [] {
    Matrix x;
    x.w.resize(kElems);
    std::mt19937 rng(1);
    std::normal_distribution<float> d(0.0f, 0.02f);
    for (auto& v : x.w) v = d(rng);
    x.q.resize(kElems / 2);
    x.s.resize(kElems / kGroup);
    tlio::detail::int4_quantize(x.w, kRows, kCols, kGroup, x.q, x.s);
    return x;
  }();
  return m;
}

std::unique_ptr<std::byte[]> faulted(size_t n) {
  std::unique_ptr<std::byte[]> p(new std::byte[n]);
  std::memset(p.get(), 1, n);
  return p;
}

void BM_MemcpyF32Output(benchmark::State& state) {
  const size_t bytes = kElems * 4;
  auto a = faulted(bytes), b = faulted(bytes);
  for (auto _ : state) {
    std::memcpy(b.get(), a.get(), bytes);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(bytes));
}
BENCHMARK(BM_MemcpyF32Output)->Unit(benchmark::kMillisecond)->UseRealTime();

// Arg 0: output dtype (0 F32, 1 BF16); arg 1: threads. Bytes processed = output bytes.
void BM_Int4Dequantize(benchmark::State& state) {
  const Matrix& m = matrix();
  const tlio::Dtype out = state.range(0) ? tlio::Dtype::BF16 : tlio::Dtype::F32;
  const size_t bytes = kElems * (state.range(0) ? 2 : 4);
  auto dst = faulted(bytes);
  tlio::set_conversion_threads(static_cast<unsigned>(state.range(1)));
  for (auto _ : state) {
    tlio::detail::int4_dequantize_rows(m.q, m.s, kRows, kCols, kGroup, 0, kRows, out,
                                       {dst.get(), bytes});
    benchmark::ClobberMemory();
  }
  tlio::set_conversion_threads(0);
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(bytes));
}
BENCHMARK(BM_Int4Dequantize)
    ->Args({0, 1})
    ->Args({0, 2})
    ->Args({1, 1})
    ->Args({1, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Bytes processed = F32 input bytes.
void BM_Int4Quantize(benchmark::State& state) {
  const Matrix& m = matrix();
  std::vector<uint8_t> q(kElems / 2);
  std::vector<uint16_t> s(kElems / kGroup);
  for (auto _ : state) {
    tlio::detail::int4_quantize(m.w, kRows, kCols, kGroup, q, s);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(kElems * 4));
}
BENCHMARK(BM_Int4Quantize)->Unit(benchmark::kMillisecond)->UseRealTime();

// ---- bitsandbytes 4-bit (blocksize 64, the transformers default) ------------------------------

constexpr uint64_t kBnbBlock = 64;

struct Bnb4 {
  std::vector<uint8_t> packed;
  std::vector<float> absmax;
};

const Bnb4& bnb4(tlio::BnbQuantType type) {
  static Bnb4 cached[2];
  Bnb4& b = cached[static_cast<int>(type)];
  if (b.packed.empty()) {
    b.packed.resize(kElems / 2);
    b.absmax.resize(kElems / kBnbBlock);
    tlio::detail::bnb_quantize_4bit(matrix().w, type, kBnbBlock, b.packed, b.absmax);
  }
  return b;
}

// Arg 0: 0 nf4, 1 fp4; arg 1: output dtype (0 F32, 1 BF16); arg 2: threads.
// Bytes processed = output bytes.
void BM_Bnb4Dequantize(benchmark::State& state) {
  const auto type = static_cast<tlio::BnbQuantType>(state.range(0));
  const Bnb4& b = bnb4(type);
  const tlio::Dtype out = state.range(1) ? tlio::Dtype::BF16 : tlio::Dtype::F32;
  const size_t bytes = kElems * (state.range(1) ? 2 : 4);
  auto dst = faulted(bytes);
  tlio::set_conversion_threads(static_cast<unsigned>(state.range(2)));
  for (auto _ : state) {
    tlio::detail::bnb_dequantize_4bit(b.packed, b.absmax, type, kBnbBlock, 0, kElems, out,
                                      {dst.get(), bytes});
    benchmark::ClobberMemory();
  }
  tlio::set_conversion_threads(0);
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(bytes));
}
BENCHMARK(BM_Bnb4Dequantize)
    ->Args({0, 0, 1})
    ->Args({0, 0, 2})
    ->Args({0, 1, 1})
    ->Args({0, 1, 2})
    ->Args({1, 0, 1})
    ->Args({1, 1, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Arg 0: 0 nf4, 1 fp4; arg 1: threads. Bytes processed = F32 input bytes.
void BM_Bnb4Quantize(benchmark::State& state) {
  const auto type = static_cast<tlio::BnbQuantType>(state.range(0));
  std::vector<uint8_t> packed(kElems / 2);
  std::vector<float> absmax(kElems / kBnbBlock);
  tlio::set_conversion_threads(static_cast<unsigned>(state.range(1)));
  for (auto _ : state) {
    tlio::detail::bnb_quantize_4bit(matrix().w, type, kBnbBlock, packed, absmax);
    benchmark::ClobberMemory();
  }
  tlio::set_conversion_threads(0);
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(kElems * 4));
}
BENCHMARK(BM_Bnb4Quantize)
    ->Args({0, 1})
    ->Args({0, 2})
    ->Args({1, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The straightforward scalar NF4 quantizer (what a direct port of bnb's torch code does one
// element at a time): absmax per block, then the nearest of the 16 table values by a scan.
// Bytes processed = F32 input bytes; it runs on the first 32 Mi weights.
void BM_Bnb4QuantizeScalarBaseline(benchmark::State& state) {
  const uint64_t n = kElems / 8;
  const float* w = matrix().w.data();
  const auto& table = tlio::detail::bnb_4bit_table(tlio::BnbQuantType::nf4);
  std::vector<uint8_t> packed(n / 2);
  std::vector<float> absmax(n / kBnbBlock);
  for (auto _ : state) {
    for (uint64_t b = 0; b < n / kBnbBlock; ++b) {
      float am = 0;
      for (uint64_t k = 0; k < kBnbBlock; ++k) am = std::max(am, std::fabs(w[b * kBnbBlock + k]));
      absmax[b] = am;
      const float inv = 1.0f / std::max(am, 1e-38f);
      for (uint64_t k = 0; k < kBnbBlock; k += 2) {
        uint8_t code[2];
        for (int j = 0; j < 2; ++j) {
          const float s = std::min(std::max(w[b * kBnbBlock + k + j] * inv, -1.0f), 1.0f);
          int best = 0;
          for (int c = 1; c < 16; ++c)
            if (std::fabs(table[c] - s) < std::fabs(table[best] - s)) best = c;
          code[j] = static_cast<uint8_t>(best);
        }
        packed[(b * kBnbBlock + k) / 2] = static_cast<uint8_t>(code[0] << 4 | code[1]);
      }
    }
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(n * 4));
}
BENCHMARK(BM_Bnb4QuantizeScalarBaseline)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();

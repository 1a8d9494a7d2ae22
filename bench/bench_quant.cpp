// int4 quantize/dequantize throughput on a matrix far larger than the caches (256 Mi weights),
// against memcpy of the output size measured in the same run.
#include <benchmark/benchmark.h>

#include <cstring>
#include <memory>
#include <random>
#include <vector>

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
    tlio::int4_quantize(x.w, kRows, kCols, kGroup, x.q, x.s);
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
    tlio::int4_dequantize_rows(m.q, m.s, kRows, kCols, kGroup, 0, kRows, out, {dst.get(), bytes});
    benchmark::ClobberMemory();
  }
  tlio::set_conversion_threads(0);
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(bytes));
}
BENCHMARK(BM_Int4Dequantize)->Args({0, 1})->Args({0, 2})->Args({1, 1})->Args({1, 2})
    ->Unit(benchmark::kMillisecond)->UseRealTime();

// Bytes processed = F32 input bytes.
void BM_Int4Quantize(benchmark::State& state) {
  const Matrix& m = matrix();
  std::vector<uint8_t> q(kElems / 2);
  std::vector<uint16_t> s(kElems / kGroup);
  for (auto _ : state) {
    tlio::int4_quantize(m.w, kRows, kCols, kGroup, q, s);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(kElems * 4));
}
BENCHMARK(BM_Int4Quantize)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();

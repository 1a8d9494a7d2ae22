// Dtype conversion throughput on arrays far larger than the caches (1 GiB of F32), one thread
// and all cores, against memcpy of the output size measured in the same run.
#include <benchmark/benchmark.h>

#include <cstring>
#include <memory>
#include <random>

#include "tlio/convert.hpp"

namespace {

constexpr size_t kElems = size_t{1} << 28;  // 1 GiB of F32

std::unique_ptr<std::byte[]> faulted(size_t n, int fill) {
  std::unique_ptr<std::byte[]> p(new std::byte[n]);
  std::memset(p.get(), fill, n);
  return p;
}

const std::byte* f32_input() {
  static const auto buf = [] {
    auto p = faulted(kElems * 4, 0);
    std::mt19937 rng(1);
    auto* f = reinterpret_cast<float*>(p.get());
    for (size_t i = 0; i < kElems; ++i) f[i] = static_cast<float>(rng()) * 1e-9f - 2.0f;
    return p;
  }();
  return buf.get();
}

const std::byte* bf16_input() {
  static const auto buf = [] {
    auto p = faulted(kElems * 2, 0);
    tlio::convert(tlio::Dtype::F32, {f32_input(), kElems * 4}, tlio::Dtype::BF16,
                  {p.get(), kElems * 2}, kElems);
    return p;
  }();
  return buf.get();
}

void BM_MemcpyOutputSize(benchmark::State& state) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  auto src = faulted(bytes, 1), dst = faulted(bytes, 2);
  for (auto _ : state) {
    std::memcpy(dst.get(), src.get(), bytes);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(bytes));
}
BENCHMARK(BM_MemcpyOutputSize)
    ->Arg(int64_t{1} << 29)
    ->Arg(int64_t{1} << 30)
    ->Unit(benchmark::kMillisecond);

// One thread only reading the 1 GiB F32 input in the narrowing kernels' order (four 4 KiB
// pages side by side, prefetching two such blocks ahead, 16-byte loads into independent sums):
// the ceiling of a narrowing conversion on one thread, which writes half the bytes it reads.
// Bytes processed = bytes read.
void BM_ReadOnlyInput(benchmark::State& state) {
  using V = uint64_t __attribute__((vector_size(16)));
  const std::byte* in = f32_input();
  const size_t bytes = kElems * 4;
  constexpr size_t kPage = 4096, kPages = 4, kBlock = kPage * kPages;
  for (auto _ : state) {
    V acc[8] = {};
    for (size_t b = 0; b < bytes; b += kBlock)
      for (size_t line = 0; line < kPage; line += 128)
        for (size_t p = 0; p < kPages; ++p) {
          const std::byte* at = in + b + p * kPage + line;
          if (b + 3 * kBlock <= bytes)
            __builtin_prefetch(at + 2 * kBlock), __builtin_prefetch(at + 2 * kBlock + 64);
          for (size_t k = 0; k < 8; ++k) {
            V v;
            std::memcpy(&v, at + 16 * k, 16);
            acc[k] += v;
          }
        }
    uint64_t total = 0;
    for (const V& a : acc) total += a[0] + a[1];
    benchmark::DoNotOptimize(total);
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(bytes));
}
BENCHMARK(BM_ReadOnlyInput)->Unit(benchmark::kMillisecond)->UseRealTime();

// Arg: threads. Bytes processed = bytes written.
void BM_F32ToBF16(benchmark::State& state) {
  tlio::set_conversion_threads(static_cast<unsigned>(state.range(0)));
  const std::byte* in = f32_input();
  auto out = faulted(kElems * 2, 3);
  for (auto _ : state) {
    tlio::convert(tlio::Dtype::F32, {in, kElems * 4}, tlio::Dtype::BF16, {out.get(), kElems * 2},
                  kElems);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(kElems * 2));
  tlio::set_conversion_threads(0);
}
BENCHMARK(BM_F32ToBF16)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_BF16ToF32(benchmark::State& state) {
  tlio::set_conversion_threads(static_cast<unsigned>(state.range(0)));
  const std::byte* in = bf16_input();
  auto out = faulted(kElems * 4, 3);
  for (auto _ : state) {
    tlio::convert(tlio::Dtype::BF16, {in, kElems * 2}, tlio::Dtype::F32, {out.get(), kElems * 4},
                  kElems);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(kElems * 4));
  tlio::set_conversion_threads(0);
}
BENCHMARK(BM_BF16ToF32)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_F32ToF16(benchmark::State& state) {
  tlio::set_conversion_threads(static_cast<unsigned>(state.range(0)));
  const std::byte* in = f32_input();
  auto out = faulted(kElems * 2, 3);
  for (auto _ : state) {
    tlio::convert(tlio::Dtype::F32, {in, kElems * 4}, tlio::Dtype::F16, {out.get(), kElems * 2},
                  kElems);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(kElems * 2));
  tlio::set_conversion_threads(0);
}
BENCHMARK(BM_F32ToF16)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_F8E4M3ToF32(benchmark::State& state) {
  tlio::set_conversion_threads(static_cast<unsigned>(state.range(0)));
  const size_t n = kElems / 4;
  auto in = faulted(n, 0x3C);
  auto out = faulted(n * 4, 3);
  for (auto _ : state) {
    tlio::convert(tlio::Dtype::F8_E4M3, {in.get(), n}, tlio::Dtype::F32, {out.get(), n * 4}, n);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(n * 4));
  tlio::set_conversion_threads(0);
}
BENCHMARK(BM_F8E4M3ToF32)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();

// Reading tensor bytes out of a warm 1 GB file against this machine's memcpy bandwidth, and
// open time against data size. The file lives in $TLIO_BENCH_DIR (default /tmp).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <memory>

#include "bench_files.hpp"
#include "tlio/file.hpp"

namespace {

std::filesystem::path bench_dir() {
  const char* d = std::getenv("TLIO_BENCH_DIR");
  return d ? d : "/tmp";
}

std::filesystem::path big_file() {
  static const std::filesystem::path p = [] {
    auto path = bench_dir() / "tlio-bench-1g.safetensors";
    tlio::bench::ensure_big_file(path);
    return path;
  }();
  return p;
}

std::filesystem::path small_file() {
  static const std::filesystem::path p = [] {
    auto path = bench_dir() / "tlio-bench-1m.safetensors";
    tlio::bench::ensure_big_file(path, 200, 1);  // same 200-tensor header, 0.8 MB of data
    return path;
  }();
  return p;
}

// A pre-faulted buffer of n bytes.
std::unique_ptr<std::byte[]> faulted(size_t n) {
  std::unique_ptr<std::byte[]> p(new std::byte[n]);
  std::memset(p.get(), 1, n);
  return p;
}

constexpr size_t kGiB = size_t{1} << 30;

void BM_Memcpy1GiB(benchmark::State& state) {
  auto src = faulted(kGiB), dst = faulted(kGiB);
  for (auto _ : state) {
    std::memcpy(dst.get(), src.get(), kGiB);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(kGiB));
}
BENCHMARK(BM_Memcpy1GiB)->Unit(benchmark::kMillisecond)->MinTime(2.0);

void BM_CopyAllTensorsWarm1G(benchmark::State& state) {
  tlio::File f = tlio::File::open(big_file());
  const uint64_t total = f.header().data_size();
  auto dst = faulted(total);
  for (const auto& t : f.tensors()) f.read(t.name, {dst.get() + t.begin, t.byte_size()});  // warm
  for (auto _ : state) {
    for (const auto& t : f.tensors()) f.read(t.name, {dst.get() + t.begin, t.byte_size()});
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(total));
}
BENCHMARK(BM_CopyAllTensorsWarm1G)->Unit(benchmark::kMillisecond)->MinTime(2.0);

// The same bytes with one glibc memcpy of the whole mapped data buffer: what the page-cache
// mapping itself allows (4 KiB pages, unlike anonymous memory that may use huge pages).
void BM_MemcpyWholeMapping1G(benchmark::State& state) {
  tlio::File f = tlio::File::open(big_file());
  auto data = f.mapped_data();
  auto dst = faulted(data.size());
  std::memcpy(dst.get(), data.data(), data.size());  // warm
  for (auto _ : state) {
    std::memcpy(dst.get(), data.data(), data.size());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(data.size()));
}
BENCHMARK(BM_MemcpyWholeMapping1G)->Unit(benchmark::kMillisecond)->MinTime(2.0);

void BM_CopyAllTensorsWarm1GPread(benchmark::State& state) {
  tlio::File f = tlio::File::open(big_file(), {tlio::Backend::pread});
  const uint64_t total = f.header().data_size();
  auto dst = faulted(total);
  for (auto _ : state) {
    for (const auto& t : f.tensors()) f.read(t.name, {dst.get() + t.begin, t.byte_size()});
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(total));
}
BENCHMARK(BM_CopyAllTensorsWarm1GPread)->Unit(benchmark::kMillisecond)->MinTime(2.0);

void BM_Open(benchmark::State& state) {
  auto path = state.range(0) ? big_file() : small_file();
  for (auto _ : state) {
    tlio::File f = tlio::File::open(path);
    benchmark::DoNotOptimize(f.tensors().data());
  }
  state.SetLabel(state.range(0) ? "1 GB of data" : "0.8 MB of data");
}
BENCHMARK(BM_Open)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();

// Header parse + validate of 50,000 tensors (a 3.8 MB header), as File::from_buffer does it.
#include <benchmark/benchmark.h>
#include <simdjson.h>

#include <thread>

#include "bench_files.hpp"
#include "format/header_parse.hpp"
#include "tlio/file.hpp"

namespace {

const std::vector<std::byte>& many() {
  static const std::vector<std::byte> bytes = tlio::bench::many_small_tensors();
  return bytes;
}

// Steady state: the thread's parser buffers are already faulted in (repeated opens).
void BM_ParseHeader50k(benchmark::State& state) {
  const auto& bytes = many();
  for (auto _ : state) {
    tlio::File f = tlio::File::from_buffer(bytes);
    benchmark::DoNotOptimize(f.tensors().data());
  }
  state.SetItemsProcessed(state.iterations() * 50'000);
  state.counters["header_MB"] = double(tlio::File::from_buffer(bytes).header_size()) / 1e6;
}
BENCHMARK(BM_ParseHeader50k)->Unit(benchmark::kMillisecond);

// The parser's walks, A/B in one run: the On-Demand fast path on two threads (what File::open
// uses on a valid header of 1 MiB or more) and on one, and the DOM walk it hands invalid headers
// to (what every header took before).
enum class Walk { halves, whole, one_piece, dom };
void parse_walk(benchmark::State& state, Walk walk, const std::vector<std::byte>& bytes) {
  const uint64_t n = tlio::File::from_buffer(bytes).header_size();
  const std::span<const std::byte> json(bytes.data() + 8, n);  // the data after it pads it
  const uint64_t data_size = bytes.size() - 8 - n;
  for (auto _ : state) {
    if (walk == Walk::dom) {
      auto h = tlio::detail::parse_header_dom(json, data_size, true);
      benchmark::DoNotOptimize(h);
    } else {
      auto h = tlio::detail::parse_header_on_demand(
          json, data_size, walk == Walk::halves ? 0 : ~size_t{0},
          walk == Walk::one_piece ? ~size_t{0} : tlio::detail::kHeaderPieceBytes);
      if (!h) state.SkipWithError("the fast walk handed over");
      benchmark::DoNotOptimize(h);
    }
  }
  const tlio::File file = tlio::File::from_buffer(bytes);
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(file.tensors().size()));
}
void BM_Walk50kHalves(benchmark::State& state) { parse_walk(state, Walk::halves, many()); }
void BM_Walk50kWhole(benchmark::State& state) { parse_walk(state, Walk::whole, many()); }
void BM_Walk50kWholeOnePiece(benchmark::State& state) {
  parse_walk(state, Walk::one_piece, many());
}
void BM_Walk50kDom(benchmark::State& state) { parse_walk(state, Walk::dom, many()); }
BENCHMARK(BM_Walk50kHalves)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Walk50kWhole)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Walk50kWholeOnePiece)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Walk50kDom)->Unit(benchmark::kMillisecond)->UseRealTime();

// A small header (200 tensors, 15 KB): below the size that is split.
const std::vector<std::byte>& few() {
  static const std::vector<std::byte> bytes = tlio::bench::many_small_tensors(200);
  return bytes;
}
void BM_Walk200Whole(benchmark::State& state) { parse_walk(state, Walk::whole, few()); }
void BM_Walk200Dom(benchmark::State& state) { parse_walk(state, Walk::dom, few()); }
BENCHMARK(BM_Walk200Whole)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Walk200Dom)->Unit(benchmark::kMicrosecond);

// First open in a fresh thread: includes growing and faulting in the parser's buffers.
void BM_ParseHeader50kFreshThread(benchmark::State& state) {
  const auto& bytes = many();
  for (auto _ : state) {
    std::thread t([&] {
      tlio::File f = tlio::File::from_buffer(bytes);
      benchmark::DoNotOptimize(f.tensors().data());
    });
    t.join();
  }
  state.SetItemsProcessed(state.iterations() * 50'000);
}
BENCHMARK(BM_ParseHeader50kFreshThread)->Unit(benchmark::kMillisecond)->UseRealTime();

// Floor: simdjson's DOM parse of the same header alone (no validation, nothing built).
void BM_SimdjsonDomOnly50k(benchmark::State& state) {
  const auto& bytes = many();
  tlio::File f = tlio::File::from_buffer(bytes);
  simdjson::dom::parser parser;
  const auto* json = reinterpret_cast<const uint8_t*>(bytes.data() + 8);
  for (auto _ : state) {
    simdjson::dom::element root;
    if (parser.parse(json, f.header_size(), false).get(root)) state.SkipWithError("parse failed");
    benchmark::DoNotOptimize(root);
  }
  state.SetItemsProcessed(state.iterations() * 50'000);
}
BENCHMARK(BM_SimdjsonDomOnly50k)->Unit(benchmark::kMillisecond);

// Name lookup in the parsed header.
void BM_FindByName(benchmark::State& state) {
  tlio::File f = tlio::File::from_buffer(many());
  int i = 0;
  for (auto _ : state) {
    std::string name = "layers." + std::to_string(i++ % 50'000) + ".w";
    benchmark::DoNotOptimize(f.header().find(name));
  }
}
BENCHMARK(BM_FindByName);

}  // namespace

BENCHMARK_MAIN();

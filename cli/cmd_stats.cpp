// cli/cmd_stats.cpp: `tlio stats FILE [NAME...] [--filter RE] [--json]`: per-tensor figures and
// a histogram (tlio/value_stats.hpp), chunk by chunk straight from the file's bytes (quantized
// weights dequantized a chunk at a time), so any size works in bounded memory, the chunks
// spread over every core.
#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <functional>
#include <limits>
#include <mutex>
#include <numeric>
#include <optional>
#include <regex>
#include <set>
#include <thread>

#include <fmt/core.h>
#include <fmt/format.h>

#include "arg_checks.hpp"
#include "cli_util.hpp"
#include "commands.hpp"
#include "weights.hpp"
#include "tlio/convert_file.hpp"
#include "tlio/error.hpp"
#include "tlio/file.hpp"
#include "tlio/quant.hpp"
#include "tlio/value_stats.hpp"

namespace tlio::cli {
namespace {

// Values per chunk (a thread's unit of work).
constexpr uint64_t kChunk = uint64_t{1} << 20;
constexpr int kBins = 16;

// `count` values from element `first` of one tensor: their dtype and bytes (a view of the file,
// or `scratch` filled with them decoded). Thread-safe.
struct Chunk {
  tlio::Dtype dtype;
  std::span<const std::byte> bytes;
};
using ChunkReader = std::function<Chunk(uint64_t first, uint64_t count, std::vector<std::byte>& scratch)>;

// One tensor stats looks at: how to start reading it (a view, a dequantizer: made when its turn
// comes and dropped after, so a remote file's tensors are not all in memory at once), and what it
// shows.
struct StatsInput {
  std::string name, kind, shape_json;
  uint64_t elements = 0, bytes = 0;
  std::function<ChunkReader()> open;
  tlio::ValueStats stats;
  std::vector<uint64_t> bins;
};

// Runs fn(i) for i in [0, n) on every core (the calling thread too, which also draws the
// progress of `done` bytes out of `total`); the first exception is rethrown.
void parallel_for(size_t n, const std::function<void(size_t)>& fn, std::atomic<uint64_t>& done,
                  uint64_t total, ProgressBar& bar, bool many_threads) {
  std::atomic<size_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  const auto work = [&](bool draws) {
    for (size_t i; (i = next.fetch_add(1)) < n;) {
      try {
        fn(i);
      } catch (...) {
        const std::lock_guard lock(failure_mutex);
        if (!failure) failure = std::current_exception();
        next = n;
      }
      if (draws) bar.update(done.load(), total);
    }
  };
  std::vector<std::thread> threads;
  const unsigned cores = many_threads ? std::max(1u, std::thread::hardware_concurrency()) : 1;
  for (unsigned t = 1; t < cores; ++t) threads.emplace_back(work, false);
  work(true);
  for (std::thread& t : threads) t.join();
  if (failure) std::rethrow_exception(failure);
}

// Fills each input's stats (tlio::value_stats), then its histogram (16 bins over [min, max]):
// tensor by tensor, a pass over its values for each, split in chunks of kChunk over every core
// when it is big. Chunks are merged in order, so the figures do not depend on the threads.
void compute_stats(std::vector<StatsInput>& inputs) {
  uint64_t total = 0;
  for (const StatsInput& in : inputs) total += 2 * in.bytes;  // two passes
  ProgressBar bar("stats");
  std::atomic<uint64_t> done{0};
  for (StatsInput& in : inputs) {
    const ChunkReader read = in.open();
    const size_t chunks = static_cast<size_t>((in.elements + kChunk - 1) / kChunk);
    const bool many_threads = chunks > 4;  // else threads cost more than they save
    const auto count_of = [&](size_t k) { return std::min(kChunk, in.elements - k * kChunk); };
    const auto bytes_of = [&](size_t k) {
      return static_cast<uint64_t>(static_cast<double>(in.bytes) * static_cast<double>(count_of(k)) /
                                   static_cast<double>(in.elements));
    };
    std::vector<tlio::ValueStats> partial(chunks);
    parallel_for(chunks, [&](size_t k) {
      thread_local std::vector<std::byte> scratch;
      const Chunk c = read(k * kChunk, count_of(k), scratch);
      partial[k] = tlio::value_stats(c.dtype, c.bytes, count_of(k));
      done += bytes_of(k);
    }, done, total, bar, many_threads);
    for (const tlio::ValueStats& p : partial) in.stats.merge(p);
    const tlio::ValueStats& s = in.stats;
    in.bins.assign(kBins, 0);
    if (s.finite() > 0 && s.max == s.min) in.bins[0] = s.finite();  // one value: one bin, as numpy
    if (s.finite() == 0 || !(s.max > s.min) || std::isinf(s.min) || std::isinf(s.max)) {
      done += in.bytes;
      continue;
    }
    std::vector<std::array<uint64_t, kBins>> bins(chunks);
    parallel_for(chunks, [&](size_t k) {
      thread_local std::vector<std::byte> scratch;
      bins[k].fill(0);
      const Chunk c = read(k * kChunk, count_of(k), scratch);
      tlio::add_to_histogram(c.dtype, c.bytes, count_of(k), s.min, s.max, bins[k]);
      done += bytes_of(k);
    }, done, total, bar, many_threads);
    for (const auto& b : bins)
      for (int i = 0; i < kBins; ++i) in.bins[i] += b[i];
  }
  bar.finish();
}

std::string histogram(const std::vector<uint64_t>& bins) {
  static const char* kBars[] = {" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  const uint64_t top = bins.empty() ? 0 : *std::max_element(bins.begin(), bins.end());
  if (top == 0) return "";
  std::string out;
  for (uint64_t b : bins) out += kBars[b == 0 ? 0 : 1 + (b * 7 + top - 1) / top];
  return out;
}

}  // namespace

void add_stats(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("stats", "Per-tensor min, max, mean, std, NaN/inf/zero counts");
  cmd->footer("Quantized weights and GGUF tensors are shown dequantized. The histogram spans [min, max] in 16 bins.\n"
              "The values are read in chunks on every core (a progress bar on a terminal for\n"
              "big inputs); the figures do not depend on the number of cores. A NAME may be a\n"
              "glob pattern ('*.norm.weight', quoted from the shell); --filter REGEX keeps the\n"
              "names it finds.\n\n"
              "Example: tlio stats model.safetensors model.norm.weight\n"
              "         tlio stats model/ --filter 'layers\\.0\\.'");
  struct Args {
    std::string file, filter;
    std::vector<std::string> names;
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("FILE", a->file, "File or model folder, or its URL (http(s)://, s3://, gs://, hf://)")->required();
  add_remote_options(cmd);
  cmd->add_option("NAME", a->names, "Tensors or glob patterns (default: all)");
  cmd->add_option("--filter", a->filter, "Only names matching REGEX (a search)")->check(regex_check());
  cmd->add_flag("--json", a->json,
                "One JSON document on stdout: {\"path\", \"tensors\": [{\"name\", \"dtype\", \"shape\", "
                "\"numeric\", \"count\", \"nan\", \"inf\", \"zero\", \"min\", \"max\", \"mean\", \"std\", "
                "\"histogram\" (16 counts over [min, max])}]}");
  cmd->callback([a, &exit_code] {
    exit_code = guarded_output(a->json, [&] {
      const auto number = [](double v) { return std::isfinite(v) ? fmt::format("{}", v) : std::string("null"); };
      const Weights w = Weights::open(a->file);
      const std::vector<std::string> all = w.value_names();  // quantized weights by their logical names
      std::vector<std::string> names = a->names.empty() ? all : expand_globs(a->names, all, w.name());
      if (!a->filter.empty()) {
        const std::regex filter(a->filter, std::regex::ECMAScript);
        std::erase_if(names, [&](const std::string& n) { return !std::regex_search(n, filter); });
      }
      // What each name is, in order: a numeric input, or a line saying it has no statistics.
      std::vector<StatsInput> inputs;
      std::vector<std::pair<std::string, std::optional<size_t>>> rows;  // non-numeric: its line
      for (const std::string& name : names) {
        StatsInput in;
        in.name = name;
        if (std::optional<DecodedValues> d = w.decoded(name)) {  // a quantized weight, a GGUF tensor
          in.elements = std::accumulate(d->shape.begin(), d->shape.end(), uint64_t{1}, std::multiplies<>());
          in.bytes = d->stored_bytes;
          in.kind = fmt::format("{} [{}]", d->type, fmt::join(d->shape, ", "));
          in.shape_json = fmt::format("[{}]", fmt::join(d->shape, ","));
          in.open = [read = std::move(d->read)]() -> ChunkReader {
            return [read](uint64_t first, uint64_t count, std::vector<std::byte>& scratch) {
              scratch.resize(count * sizeof(float));
              read(first, count, scratch);
              return Chunk{tlio::Dtype::F32, scratch};
            };
          };
        } else {
          const auto [file, info] = w.at(name);
          const tlio::TensorInfo& t = *info;
          if (!has_numeric_values(t.dtype)) {
            rows.emplace_back(
                a->json ? fmt::format("{{\"name\":{},\"dtype\":\"{}\",\"shape\":[{}],\"numeric\":false}}",
                                      json_string(name), tlio::dtype_name(t.dtype), fmt::join(t.shape, ","))
                        : fmt::format("{}: {} [{}]: no numeric statistics\n", display_name(name),
                                      tlio::dtype_name(t.dtype), fmt::join(t.shape, ", ")),
                std::nullopt);
            continue;
          }
          in.elements = t.element_count();
          in.bytes = t.byte_size();
          in.open = [file, name = t.name, dtype = t.dtype]() -> ChunkReader {
            const tlio::TensorView view = file->view(name);  // a copy for a URL: one tensor at a time
            return [view, dtype](uint64_t first, uint64_t count, std::vector<std::byte>&) {
              const unsigned bits = tlio::dtype_bits(dtype);  // chunks start on whole bytes
              return Chunk{dtype, view.bytes().subspan(first * bits / 8, (count * bits + 7) / 8)};
            };
          };
          in.kind = fmt::format("{} [{}]", tlio::dtype_name(t.dtype), fmt::join(t.shape, ", "));
          in.shape_json = fmt::format("[{}]", fmt::join(t.shape, ","));
        }
        rows.emplace_back(std::string(), inputs.size());
        inputs.push_back(std::move(in));
      }
      compute_stats(inputs);
      std::vector<std::string> docs;
      for (const auto& [line, index] : rows) {
        if (!index) {
          if (a->json) docs.push_back(line);
          else fmt::print("{}", line);
          continue;
        }
        const StatsInput& in = inputs[*index];
        const tlio::ValueStats& s = in.stats;
        const double sd = s.std_dev();
        if (a->json) {
          const std::string type = in.kind.substr(0, in.kind.find(' '));
          const bool any = s.count > 0;
          docs.push_back(fmt::format(
              "{{\"name\":{},\"dtype\":{},\"shape\":{},\"numeric\":true,\"count\":{},\"nan\":{},"
              "\"inf\":{},\"zero\":{},\"min\":{},\"max\":{},\"mean\":{},\"std\":{},\"histogram\":[{}]}}",
              json_string(in.name), json_string(type), in.shape_json, s.count, s.nan, s.inf, s.zero,
              any ? number(s.min) : "null", any ? number(s.max) : "null",
              s.finite() ? number(s.mean) : "null", s.finite() ? number(sd) : "null", fmt::join(in.bins, ",")));
          continue;
        }
        fmt::print("{}: {}\n", display_name(in.name), in.kind);
        if (s.count == 0) {
          fmt::print("  (empty)\n");
          continue;
        }
        fmt::print("  min {:.6g}  max {:.6g}  mean {:.6g}  std {:.6g}\n", s.min, s.max, s.mean, sd);
        fmt::print("  count {}  nan {}  inf {}  zero {}\n", s.count, s.nan, s.inf, s.zero);
        const std::string h = histogram(in.bins);
        if (!h.empty()) fmt::print("  {:.3g} |{}| {:.3g}\n", s.min, h, s.max);
      }
      if (a->json)
        fmt::print("{{\"path\":{},\"tensors\":[{}]}}\n", json_string(w.name()), fmt::join(docs, ","));
      return kExitOk;
    });
  });
}

}  // namespace tlio::cli

// cli/cmd_values.cpp: commands that look at tensor values: `tlio cat`, `tlio stats` (`tlio diff` is
// cmd_diff.cpp). Values are converted to F64 chunk by chunk (through the public convert API), so
// any size works in bounded memory; stats spreads the chunks over every core.
#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstring>
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
#include "slice_spec.hpp"
#include "weights.hpp"
#include "tlio/convert_file.hpp"
#include "tlio/error.hpp"
#include "tlio/file.hpp"
#include "tlio/quant.hpp"

namespace tlio::cli {
namespace {

// Elements converted per step.
constexpr uint64_t kChunk = uint64_t{1} << 20;

bool numeric(tlio::Dtype d) { return tlio::can_convert(d, tlio::Dtype::F64); }

// ---- cat ----------------------------------------------------------------------------------------

// The block of positions [lo, hi) a pick lies in.
std::pair<uint64_t, uint64_t> pick_block(const DimPick& p) {
  if (p.count == 0) return {0, 0};
  const uint64_t last = static_cast<uint64_t>(static_cast<int64_t>(p.start) +
                                              static_cast<int64_t>(p.count - 1) * p.step);
  return {std::min(p.start, last), std::max(p.start, last) + 1};
}

// The picked elements of a row-major `block` (whose dimensions start at `block_lo`), each
// `size` bytes, in the result's row-major order.
std::vector<std::byte> gather(std::span<const std::byte> block, const std::vector<uint64_t>& block_shape,
                              const std::vector<uint64_t>& block_lo, const std::vector<DimPick>& picks,
                              size_t size) {
  const size_t dims = picks.size();
  std::vector<uint64_t> stride(dims, size);
  for (size_t d = dims; d-- > 1;) stride[d - 1] = stride[d] * block_shape[d];
  uint64_t total = 1;
  for (const DimPick& p : picks) total *= p.count;
  std::vector<std::byte> out(total * size);
  std::vector<uint64_t> k(dims, 0);
  for (uint64_t n = 0; n < total; ++n) {
    uint64_t at = 0;
    for (size_t d = 0; d < dims; ++d)
      at += (static_cast<uint64_t>(static_cast<int64_t>(picks[d].start) +
                                   static_cast<int64_t>(k[d]) * picks[d].step) - block_lo[d]) * stride[d];
    std::memcpy(out.data() + n * size, block.data() + at, size);
    for (size_t d = dims; d-- > 0;) {  // the odometer: last dimension fastest
      if (++k[d] < picks[d].count) break;
      k[d] = 0;
    }
  }
  return out;
}

// What cat shows: the values' dtype (F32 for a dequantized weight), the result's shape, and
// each element's bytes in that dtype (8-byte doubles for floating types, whose bits vary).
// numpy's print options: past kSummaryThreshold values, kEdgeItems at each end of a dimension.
constexpr uint64_t kSummaryThreshold = 1000, kEdgeItems = 3;

struct CatValues {
  tlio::Dtype dtype;
  std::vector<uint64_t> shape;
  // The positions of dimension 0 held (a summary reads only the rows it shows); empty: all.
  std::vector<uint64_t> rows;
  std::vector<double> floats;       // floating and BOOL values
  std::vector<std::byte> integers;  // integer values, exact, dtype_bits / 8 bytes each
};

CatValues cat_values(const Weights& w, const std::string& name, const std::string& spec,
                     std::string* scheme, bool summarize) {
  const std::vector<SliceEntry> entries = parse_slice_spec(spec);
  const auto& quantized = w.quantized();
  const auto q = std::find_if(quantized.begin(), quantized.end(), [&](const auto& x) { return x.name == name; });
  CatValues v;
  std::vector<uint64_t> shape;
  if (q != quantized.end()) {
    v.dtype = tlio::Dtype::F32;
    shape.assign(q->shape.begin(), q->shape.end());
    *scheme = q->scheme.name();
  } else {
    const tlio::TensorInfo& t = *w.at(name).second;
    if (!numeric(t.dtype))
      throw tlio::Error(tlio::ErrorCode::unsupported, Rule::none, t.name, std::nullopt,
                        fmt::format("cannot show {} values", tlio::dtype_name(t.dtype)));
    v.dtype = t.dtype;
    shape.assign(t.shape.begin(), t.shape.end());
  }
  const std::vector<DimPick> picks = resolve_slice(entries, shape, name, "--slice");
  for (const DimPick& p : picks)
    if (p.keep) v.shape.push_back(p.count);
  // The picked elements of a block, appended to the result (integers exact, the rest as doubles).
  const auto take = [&](std::span<const std::byte> block, const std::vector<uint64_t>& block_shape,
                        const std::vector<uint64_t>& block_lo, const std::vector<DimPick>& block_picks,
                        uint64_t elements) {
    if (tlio::is_integer(v.dtype)) {
      const std::vector<std::byte> picked =
          gather(block, block_shape, block_lo, block_picks, tlio::dtype_bits(v.dtype) / 8);
      v.integers.insert(v.integers.end(), picked.begin(), picked.end());
      return;
    }
    std::vector<double> values(elements);
    tlio::convert(v.dtype, block, tlio::Dtype::F64, std::as_writable_bytes(std::span(values)), elements);
    const std::vector<std::byte> picked =
        gather(std::as_bytes(std::span(values)), block_shape, block_lo, block_picks, sizeof(double));
    const size_t at = v.floats.size();
    v.floats.resize(at + picked.size() / sizeof(double));
    std::memcpy(v.floats.data() + at, picked.data(), picked.size());
  };
  const bool is_quantized = q != quantized.end();
  const tlio::File& f = is_quantized ? w.files().front() : *w.at(name).first;
  if (shape.empty()) {  // a scalar
    take(f.read_slice(name, {}), {}, {}, picks, 1);
    return v;
  }
  for (const DimPick& p : picks)
    if (p.count == 0) return v;  // nothing to show, nothing to read
  // A summary shows the first and last rows of dimension 0 only: only those are read.
  std::vector<std::pair<uint64_t, uint64_t>> row_runs{{0, picks[0].count}};
  if (summarize && picks[0].keep && picks[0].count > 2 * kEdgeItems &&
      std::accumulate(v.shape.begin(), v.shape.end(), uint64_t{1}, std::multiplies<>()) > kSummaryThreshold) {
    row_runs = {{0, kEdgeItems}, {picks[0].count - kEdgeItems, picks[0].count}};
    for (const auto& [begin, end] : row_runs)
      for (uint64_t r = begin; r < end; ++r) v.rows.push_back(r);
  }
  // The other dimensions' blocks (a quantized weight: whole rows, as it dequantizes by element).
  std::vector<uint64_t> rest_shape, rest_lo;
  uint64_t row_elements = 1;
  for (size_t d = 1; d < shape.size(); ++d) {
    const auto [lo, hi] = is_quantized ? std::pair<uint64_t, uint64_t>{0, shape[d]} : pick_block(picks[d]);
    rest_lo.push_back(lo);
    rest_shape.push_back(hi - lo);
    row_elements *= hi - lo;
  }
  // Rows of dimension 0 are read in groups whose block is at most kCatBlockBytes (as doubles),
  // so a sparse slice of a big tensor reads about what it shows; a step longer than a group
  // reads one row at a time.
  constexpr uint64_t kCatBlockBytes = uint64_t{64} << 20;
  const uint64_t rows_per_block = std::max<uint64_t>(1, kCatBlockBytes / (row_elements * 12));
  const DimPick& first = picks[0];
  const uint64_t stride = static_cast<uint64_t>(first.step > 0 ? first.step : -first.step);
  for (const auto& [run_begin, run_end] : row_runs) {
    for (uint64_t k = run_begin; k < run_end;) {
      const uint64_t n = std::min(run_end - k, (rows_per_block - 1) / stride + 1);
      const DimPick group{static_cast<uint64_t>(static_cast<int64_t>(first.start) + static_cast<int64_t>(k) * first.step),
                          n, first.step, first.keep};
      const auto [lo, hi] = pick_block(group);
      std::vector<uint64_t> block_shape{hi - lo}, block_lo{lo};
      block_shape.insert(block_shape.end(), rest_shape.begin(), rest_shape.end());
      block_lo.insert(block_lo.end(), rest_lo.begin(), rest_lo.end());
      const uint64_t elements = (hi - lo) * row_elements;
      std::vector<std::byte> block;
      if (is_quantized) {
        block.resize(elements * 4);
        w.reader(*q).read(lo * row_elements, elements, tlio::Dtype::F32, block);
      } else {
        std::vector<tlio::SliceIndex> ranges{tlio::SliceIndex::range(lo, hi)};
        for (size_t d = 1; d < shape.size(); ++d)
          ranges.push_back(tlio::SliceIndex::range(rest_lo[d - 1], rest_lo[d - 1] + rest_shape[d - 1]));
        block = f.read_slice(name, ranges);
      }
      std::vector<DimPick> block_picks{group};
      block_picks.insert(block_picks.end(), picks.begin() + 1, picks.end());
      take(block, block_shape, block_lo, block_picks, elements);
      k += n;
    }
  }
  return v;
}

std::string format_value(double v, tlio::Dtype d) {
  if (d == tlio::Dtype::BOOL) return v != 0 ? "True" : "False";
  if (tlio::is_integer(d)) return fmt::format("{:.0f}", v);
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::string s = fmt::format("{:.8g}", v);
  if (s.find_first_of(".e") == std::string::npos) s += ".";
  return s;
}

// The cells as nested JSON lists of `shape` (a scalar: the cell itself).
std::string json_array(const std::vector<std::string>& cells, const std::vector<uint64_t>& shape) {
  if (shape.empty()) return cells.empty() ? "null" : cells[0];
  std::string out;
  std::function<void(size_t, uint64_t)> rec = [&](size_t dim, uint64_t offset) {
    uint64_t stride = 1;
    for (size_t k = dim + 1; k < shape.size(); ++k) stride *= shape[k];
    out += "[";
    for (uint64_t i = 0; i < shape[dim]; ++i) {
      if (i) out += ",";
      if (dim + 1 == shape.size()) out += cells[offset + i];
      else rec(dim + 1, offset + i * stride);
    }
    out += "]";
  };
  rec(0, 0);
  return out;
}

// numpy's str() layout: nested brackets, right-aligned columns (as wide as the widest value
// shown), "..." past 1,000 elements. `rows`: the positions of dimension 0 that `cells` holds
// (CatValues::rows; empty: all).
void print_array(const std::vector<std::string>& cells, const std::vector<uint64_t>& shape,
                 const std::vector<uint64_t>& rows) {
  if (shape.empty()) {
    fmt::print("{}\n", cells.empty() ? "" : cells[0]);
    return;
  }
  const bool summarize =
      std::accumulate(shape.begin(), shape.end(), uint64_t{1}, std::multiplies<>()) > kSummaryThreshold;
  // Where row i of dimension 0 is in `cells`.
  const auto held_row = [&](uint64_t i) {
    if (rows.empty()) return i;
    return static_cast<uint64_t>(std::lower_bound(rows.begin(), rows.end(), i) - rows.begin());
  };
  size_t width = 0;
  std::string out;
  bool measuring = true;  // first pass: the width of what is shown; second: the text
  std::function<void(size_t, uint64_t, size_t)> rec = [&](size_t dim, uint64_t offset, size_t indent) {
    if (!measuring) out += "[";
    uint64_t stride = 1;
    for (size_t k = dim + 1; k < shape.size(); ++k) stride *= shape[k];
    const uint64_t n = shape[dim];
    const bool elide = summarize && n > 2 * kEdgeItems;
    for (uint64_t i = 0; i < n; ++i) {
      if (elide && i == kEdgeItems) {
        if (!measuring) {
          out += dim + 1 == shape.size() ? " ..." : "\n" + std::string(indent + 1, ' ') + "...";
          if (dim + 1 == shape.size()) out += " ";
          else out += std::string(shape.size() - dim - 1, '\n') + std::string(indent + 1, ' ');
        }
        i = n - kEdgeItems;
      }
      const uint64_t at = offset + (dim == 0 ? held_row(i) : i) * stride;
      const bool after_gap = elide && i == n - kEdgeItems;
      if (dim + 1 == shape.size()) {
        if (measuring) {
          width = std::max(width, display_width(cells[at]));
          continue;
        }
        if (i > 0 && !after_gap) out += " ";
        out += pad(cells[at], width, true);
      } else {
        if (!measuring && i > 0 && !after_gap)
          out += std::string(shape.size() - dim - 1, '\n') + std::string(indent + 1, ' ');
        rec(dim + 1, at, indent + 1);
      }
    }
    if (!measuring) out += "]";
  };
  rec(0, 0, 0);
  measuring = false;
  rec(0, 0, 0);
  fmt::print("{}\n", out);
}

}  // namespace

void add_cat(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("cat", "Print the values of a tensor (or a slice), like numpy");
  cmd->footer("--slice takes one entry per leading dimension, as numpy: an index (4, -1) or a\n"
              "range with an optional step (0:2, :, 3:, ::2, ::-1). Values of any numeric dtype are\n"
              "shown converted to decimal; a quantized weight's (by its logical name) dequantized.\n\n"
              "Examples:\n  tlio cat model.safetensors bigram.weight --slice 10,0:8");
  struct Args {
    std::string file, name, slice;
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("FILE", a->file, "File or model folder, or its URL (http(s)://, s3://, gs://, hf://)")->required();
  add_remote_options(cmd);
  cmd->add_option("NAME", a->name, "Tensor name")->required();
  cmd->add_option("--slice", a->slice, "e.g. 4,7 or 0:2,: or ::2,-1")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            try {
              parse_slice_spec(v);
            } catch (const UsageError& e) {
              return e.what();
            }
            return {};
          },
          ""));
  cmd->add_flag("--json", a->json,
                "One JSON document on stdout: {\"name\", \"dtype\", \"scheme\" (quantized weights), "
                "\"shape\", \"values\"} (nested "
                "lists; NaN and infinities as null)");
  cmd->callback([a, &exit_code] {
    exit_code = guarded_output(a->json, [&] {
      const Weights w = Weights::open(a->file);
      std::string scheme;
      const CatValues v = cat_values(w, a->name, a->slice, &scheme, !a->json);
      std::vector<std::string> cells;
      const bool as_json = a->json;
      if (tlio::is_integer(v.dtype)) {
        const unsigned size = tlio::dtype_bits(v.dtype) / 8;
        const bool is_signed = v.dtype == tlio::Dtype::I8 || v.dtype == tlio::Dtype::I16 ||
                               v.dtype == tlio::Dtype::I32 || v.dtype == tlio::Dtype::I64;
        for (size_t at = 0; at < v.integers.size(); at += size) {
          uint64_t u = 0;
          std::memcpy(&u, v.integers.data() + at, size);
          if (is_signed && size < 8 && (u >> (size * 8 - 1)) & 1) u |= ~uint64_t{0} << (size * 8);
          cells.push_back(is_signed ? std::to_string(static_cast<int64_t>(u)) : std::to_string(u));
        }
      } else {
        cells.reserve(v.floats.size());
        for (double x : v.floats)
          cells.push_back(!as_json ? format_value(x, v.dtype)
                          : v.dtype == tlio::Dtype::BOOL ? (x != 0 ? "true" : "false")
                          : std::isfinite(x)             ? fmt::format("{}", x)
                                                         : "null");
      }
      const std::vector<uint64_t>& shape = v.shape;
      if (as_json) {
        fmt::print("{{\"name\":{},\"dtype\":\"{}\",{}\"shape\":[{}],\"values\":{}}}\n",
                   json_string(a->name), tlio::dtype_name(v.dtype),
                   scheme.empty() ? "" : fmt::format("\"scheme\":{},", json_string(scheme)),
                   fmt::join(shape, ","), json_array(cells, shape));
        return kExitOk;
      }
      print_array(cells, shape, v.rows);
      return kExitOk;
    });
  });
}

// ---- stats ---------------------------------------------------------------------------------------

namespace {

struct Stats {
  uint64_t count = 0, nan = 0, inf = 0, zero = 0;
  double min = std::numeric_limits<double>::infinity(), max = -min;
  double mean = 0, m2 = 0;  // Welford, over the finite values
  void add(std::span<const double> v) {
    for (double x : v) {
      ++count;
      if (std::isnan(x)) { ++nan; continue; }
      if (std::isinf(x)) { ++inf; }
      if (x == 0) ++zero;
      min = std::min(min, x);
      max = std::max(max, x);
      if (std::isinf(x)) continue;
      const uint64_t k = count - nan - inf;
      const double d = x - mean;
      mean += d / static_cast<double>(k);
      m2 += d * (x - mean);
    }
  }
  // Chan et al.'s combination of two partial results: chunks merged in order give the same
  // figures whatever the number of threads.
  void merge(const Stats& b) {
    const uint64_t na = finite(), nb = b.finite();
    if (nb > 0) {
      const double n = static_cast<double>(na + nb), delta = b.mean - mean;
      mean += delta * static_cast<double>(nb) / n;
      m2 += b.m2 + delta * delta * static_cast<double>(na) * static_cast<double>(nb) / n;
    }
    count += b.count;
    nan += b.nan;
    inf += b.inf;
    zero += b.zero;
    min = std::min(min, b.min);
    max = std::max(max, b.max);
  }
  uint64_t finite() const { return count - nan - inf; }
};

constexpr int kBins = 16;

// Reads `count` values from element `first` of one tensor as doubles; thread-safe.
using ChunkReader = std::function<void(uint64_t first, uint64_t count, std::vector<double>&)>;

// One tensor stats looks at: how to start reading it (a view, a dequantizer: made when its turn
// comes and dropped after, so a remote file's tensors are not all in memory at once), and what it
// shows.
struct StatsInput {
  std::string name, kind, shape_json;
  uint64_t elements = 0, bytes = 0;
  std::function<ChunkReader()> open;
  Stats stats;
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

// Fills each input's stats, then its histogram (16 bins over [min, max]): tensor by tensor, two
// passes over its values, each split in chunks of kChunk over every core when it is big.
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
    std::vector<Stats> partial(chunks);
    parallel_for(chunks, [&](size_t k) {
      std::vector<double> values;
      read(k * kChunk, count_of(k), values);
      partial[k].add(values);
      done += bytes_of(k);
    }, done, total, bar, many_threads);
    for (const Stats& p : partial) in.stats.merge(p);  // in chunk order: the same figures always
    const Stats& s = in.stats;
    in.bins.assign(kBins, 0);
    if (s.finite() > 0 && s.max == s.min) in.bins[0] = s.finite();  // one value: one bin, as numpy
    if (s.finite() == 0 || !(s.max > s.min) || std::isinf(s.min) || std::isinf(s.max)) {
      done += in.bytes;
      continue;
    }
    std::vector<std::array<uint64_t, kBins>> bins(chunks);
    parallel_for(chunks, [&](size_t k) {
      bins[k].fill(0);
      std::vector<double> values;
      read(k * kChunk, count_of(k), values);
      for (double x : values) {
        if (!std::isfinite(x)) continue;
        const int b = static_cast<int>((x - s.min) / (s.max - s.min) * kBins);
        bins[k][std::clamp(b, 0, kBins - 1)]++;
      }
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
  cmd->footer("Quantized weights are shown dequantized. The histogram spans [min, max] in 16 bins.\n"
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
                "One JSON document on stdout: {\"file\", \"tensors\": [{\"name\", \"type\", \"shape\", "
                "\"numeric\", \"count\", \"nan\", \"inf\", \"zero\", \"min\", \"max\", \"mean\", \"std\", "
                "\"histogram\" (16 counts over [min, max])}]}");
  cmd->callback([a, &exit_code] {
    exit_code = guarded_output(a->json, [&] {
      const auto number = [](double v) { return std::isfinite(v) ? fmt::format("{}", v) : std::string("null"); };
      const Weights w = Weights::open(a->file);
      const auto& quantized = w.quantized();
      std::set<std::string> parts;
      for (const auto& q : quantized) parts.insert(q.stored.begin(), q.stored.end());
      std::vector<std::string> all;  // every name, quantized weights by their logical names
      for (const tlio::TensorInfo* t : w.tensors())
        if (!parts.count(t->name)) all.push_back(t->name);
      for (const auto& q : quantized) all.push_back(q.name);
      std::vector<std::string> names = a->names.empty() ? all : expand_globs(a->names, all, w.name());
      if (!a->filter.empty()) {
        const std::regex filter(a->filter, std::regex::ECMAScript);
        std::erase_if(names, [&](const std::string& n) { return !std::regex_search(n, filter); });
      }
      // What each name is, in order: a numeric input, or a line saying it has no statistics.
      std::vector<StatsInput> inputs;
      std::vector<std::pair<std::string, std::optional<size_t>>> rows;  // non-numeric: its line
      for (const std::string& name : names) {
        auto q = std::find_if(quantized.begin(), quantized.end(), [&](const auto& x) { return x.name == name; });
        StatsInput in;
        in.name = name;
        if (q != quantized.end()) {
          in.elements = std::accumulate(q->shape.begin(), q->shape.end(), uint64_t{1}, std::multiplies<>());
          in.bytes = q->stored_bytes;
          in.open = [&w, weight = *q]() -> ChunkReader {
            auto reader = std::make_shared<const tlio::QuantizedReader>(w.reader(weight));
            return [reader](uint64_t first, uint64_t count, std::vector<double>& out) {
              std::vector<float> values(count);
              reader->read(first, count, tlio::Dtype::F32, std::as_writable_bytes(std::span(values)));
              out.assign(values.begin(), values.end());
            };
          };
          in.kind = fmt::format("{} [{}]", q->scheme.name(), fmt::join(q->shape, ", "));
          in.shape_json = fmt::format("[{}]", fmt::join(q->shape, ","));
        } else {
          const auto [file, info] = w.at(name);
          const tlio::TensorInfo& t = *info;
          if (!numeric(t.dtype)) {
            rows.emplace_back(
                a->json ? fmt::format("{{\"name\":{},\"type\":\"{}\",\"shape\":[{}],\"numeric\":false}}",
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
            return [view, dtype](uint64_t first, uint64_t count, std::vector<double>& out) {
              const unsigned bits = tlio::dtype_bits(dtype);
              out.resize(count);
              tlio::convert(dtype, view.bytes().subspan(first * bits / 8, (count * bits + 7) / 8),
                            tlio::Dtype::F64, std::as_writable_bytes(std::span(out)), count);
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
        const Stats& s = in.stats;
        const double sd = s.finite() > 0 ? std::sqrt(s.m2 / static_cast<double>(s.finite())) : 0;
        if (a->json) {
          const std::string type = in.kind.substr(0, in.kind.find(' '));
          const bool any = s.count > 0;
          docs.push_back(fmt::format(
              "{{\"name\":{},\"type\":{},\"shape\":{},\"numeric\":true,\"count\":{},\"nan\":{},"
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
        fmt::print("{{\"file\":{},\"tensors\":[{}]}}\n", json_string(w.name()), fmt::join(docs, ","));
      return kExitOk;
    });
  });
}

}  // namespace tlio::cli

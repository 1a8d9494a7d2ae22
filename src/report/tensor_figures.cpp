// report/tensor_figures.cpp: per-tensor figures (tlio/value_stats.hpp) and errors against a
// reference, chunk by chunk straight from the inputs (quantized weights and GGUF tensors decoded
// a chunk at a time), so any size works in bounded memory, the chunks spread over every core.
#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <thread>

#include "common/parallel.hpp"
#include "report/pairing.hpp"
#include "report/report_figures.hpp"
#include "report/weight_values.hpp"
#include "tlio/convert.hpp"
#include "tlio/error.hpp"
#include "tlio/report.hpp"

namespace tlio {
namespace {

using detail::Chunk;
using detail::ChunkReader;
using detail::not_compared;
using detail::Values;
using detail::values_of;

// Values per chunk (a thread's unit of work).
constexpr uint64_t kChunk = uint64_t{1} << 20;
constexpr unsigned kMaxBins = 4096;
// A decoded tensor up to this size (as F32) keeps its chunks for the histogram's pass.
constexpr uint64_t kMaxKeptDecoded = uint64_t{128} << 20;

// A tensor's error from the sums of its pairs, by the rules diff uses too (difference_figures).
TensorError error_of(const DifferenceSums& s) {
  const DifferenceFigures f = difference_figures(s);
  TensorError e;
  e.nonfinite = s.nonfinite;
  e.nonfinite_mismatch = s.mismatch;
  e.max_abs = f.max_abs;
  e.rmse = f.rmse;
  e.cosine = f.cosine;
  e.sqnr_db = f.sqnr_db;
  return e;
}

// Runs fn(k) for every chunk k of [0, chunks): on every core when there are enough of them.
template <class Fn>
void for_chunks(uint64_t chunks, Fn&& fn) {
  detail::parallel_for(chunks, 4, 1, detail::thread_count(detail::configured_threads()),
                       [&](uint64_t begin, uint64_t end) {
                         for (uint64_t k = begin; k < end; ++k) fn(k);
                       });
}

class Progress {
 public:
  Progress(const ProgressCallback& callback, uint64_t total) : callback_(callback), total_(total) {}
  void add(uint64_t bytes) {
    const uint64_t now = done_ += bytes;
    if (callback_ && std::this_thread::get_id() == caller_)
      callback_(std::min(now, total_), total_);
  }
  void finish() {
    if (callback_) callback_(total_, total_);
  }

 private:
  const ProgressCallback& callback_;
  uint64_t total_;
  std::atomic<uint64_t> done_{0};
  std::thread::id caller_ = std::this_thread::get_id();
};

// The figures of one numeric tensor: stats and errors in one pass over its chunks, then the
// histogram over [min, max] in a second: the chunks read again (from the page cache), or, for a
// decoded tensor of at most kMaxKeptDecoded bytes, kept from the first pass rather than decoded
// (or fetched) twice. `ref` is the reference's tensor when the two are compared, `pair` how.
void compute(TensorFigures& f, const Values& v, const Values* ref, const detail::Pairing* pair,
             unsigned bins, Progress& progress) {
  f.histogram.assign(bins, 0);
  const auto set_error = [&](const DifferenceSums& sums) {
    f.error = error_of(sums);
    f.error->reference = pair->reference;
    f.error->reference_type = ref->type;
  };
  if (f.elements == 0) {
    if (ref) set_error({});
    return;
  }
  const ChunkReader read = v.open();
  const ChunkReader read_ref = ref ? ref->open() : ChunkReader();
  // A permuted pair is read in whole rows (a 1-D tensor's rows are its values), each of the
  // reference's found by the permutation.
  const bool by_rows = ref && pair->permute_heads > 0;
  const uint64_t rows = f.shape.empty() ? 1 : f.shape[0], cols = f.elements / rows;
  const uint64_t chunk = by_rows ? std::max<uint64_t>(1, kChunk / cols) * cols : kChunk;
  const uint64_t chunks = (f.elements + chunk - 1) / chunk;
  const auto count_of = [&](uint64_t k) { return std::min(chunk, f.elements - k * chunk); };
  const auto share = [&](uint64_t bytes, uint64_t k) {
    return static_cast<uint64_t>(static_cast<double>(bytes) * static_cast<double>(count_of(k)) /
                                 static_cast<double>(f.elements));
  };
  const bool keep = v.decoded && f.elements <= kMaxKeptDecoded / sizeof(float);
  std::vector<std::vector<std::byte>> kept(keep ? chunks : 0);
  std::vector<ValueStats> partial(chunks);
  std::vector<DifferenceSums> sums(ref ? chunks : 0);
  for_chunks(chunks, [&](uint64_t k) {
    thread_local std::vector<std::byte> scratch, ref_scratch;
    const uint64_t first = k * chunk, count = count_of(k);
    const Chunk c = read(first, count, scratch);
    partial[k] = value_stats(c.dtype, c.bytes, count);
    if (keep) kept[k].assign(c.bytes.begin(), c.bytes.end());
    if (ref) {
      sums[k] = detail::pair_sums(c, first, count, rows, cols, read_ref, *pair, ref_scratch);
      progress.add(share(ref->stored_bytes, k));
    }
    progress.add(share(v.stored_bytes, k));
  });
  for (const ValueStats& p : partial) f.stats.merge(p);
  if (ref) {
    DifferenceSums total;
    for (const DifferenceSums& s : sums) total.merge(s);
    set_error(total);
  }
  const ValueStats& s = f.stats;
  if (s.finite() > 0 && s.max == s.min)
    f.histogram[0] = s.finite();  // one value: one bin, as numpy
  if (s.finite() == 0 || !(s.max > s.min) || !std::isfinite(s.max - s.min)) {
    progress.add(v.stored_bytes);
    return;
  }
  std::vector<std::vector<uint64_t>> counts(chunks);
  for_chunks(chunks, [&](uint64_t k) {
    thread_local std::vector<std::byte> scratch;
    counts[k].assign(bins, 0);
    const Chunk c = keep ? Chunk{Dtype::F32, kept[k]} : read(k * chunk, count_of(k), scratch);
    add_to_histogram(c.dtype, c.bytes, count_of(k), s.min, s.max, counts[k]);
    progress.add(share(v.stored_bytes, k));
  });
  for (const auto& part : counts)
    for (unsigned i = 0; i < bins; ++i) f.histogram[i] += part[i];
}

}  // namespace

namespace detail {

std::vector<TensorFigures> tensor_figures(const Weights& model, std::span<const std::string> names,
                                          const FigureOptions& options, const Pairings* pairs) {
  if (options.bins == 0 || options.bins > kMaxBins)
    throw_invalid(fmt::format("bins must be in 1..{}, not {}", kMaxBins, options.bins));
  struct Input {
    Values values;
    std::optional<Values> reference;  // when compared
    const Pairing* pair = nullptr;
    std::string note;
  };
  std::vector<Input> inputs;
  uint64_t total = 0;  // for progress only
  for (const std::string& name : names) {
    Input in{values_of(model, name), std::nullopt, pairs ? pairs->find(name) : nullptr, {}};
    if (in.pair && in.values.numeric) {
      Values ref = values_of(*options.reference, in.pair->reference);
      in.note = not_compared(in.values, ref, *in.pair);
      if (in.note.empty()) in.reference = std::move(ref);
    }
    if (!in.values.numeric) in.note = in.values.note;
    if (in.values.numeric)
      total += 2 * in.values.stored_bytes + (in.reference ? in.reference->stored_bytes : 0);
    inputs.push_back(std::move(in));
  }
  Progress progress(options.progress, total);
  std::vector<TensorFigures> out;
  out.reserve(names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    const Input& in = inputs[i];
    TensorFigures f;
    f.name = names[i];
    f.type = in.values.type;
    f.shape = in.values.shape;
    f.elements = in.values.elements;
    f.stored_bytes = in.values.stored_bytes;
    f.layer = layer_of(f.name);
    f.numeric = in.values.numeric;
    f.note = in.note;
    if (f.numeric)
      compute(f, in.values, in.reference ? &*in.reference : nullptr, in.pair, options.bins,
              progress);
    out.push_back(std::move(f));
  }
  progress.finish();
  return out;
}

}  // namespace detail

std::vector<TensorFigures> tensor_figures(const Weights& model, std::span<const std::string> names,
                                          const FigureOptions& options) {
  if (!options.reference) return detail::tensor_figures(model, names, options, nullptr);
  const detail::Pairings pairs = detail::pair_names(model, *options.reference);
  return detail::tensor_figures(model, names, options, &pairs);
}

}  // namespace tlio

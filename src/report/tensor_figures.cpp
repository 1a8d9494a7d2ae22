// report/tensor_figures.cpp: per-tensor figures (tlio/value_stats.hpp) and errors against a
// reference, chunk by chunk straight from the inputs (quantized weights and GGUF tensors decoded
// a chunk at a time), so any size works in bounded memory, the chunks spread over every core.
#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <numeric>
#include <thread>

#include <fmt/core.h>
#include <fmt/format.h>

#include "common/parallel.hpp"
#include "report/pairing.hpp"
#include "report/report_figures.hpp"
#include "tlio/convert.hpp"
#include "tlio/error.hpp"
#include "tlio/report.hpp"

namespace tlio {
namespace {

// Values per chunk (a thread's unit of work).
constexpr uint64_t kChunk = uint64_t{1} << 20;
constexpr unsigned kMaxBins = 4096;

// `count` values from element `first` of one tensor: their dtype and bytes (a view of the file,
// or `scratch` filled with them decoded). Thread-safe.
struct Chunk {
  Dtype dtype;
  std::span<const std::byte> bytes;
};
using ChunkReader = std::function<Chunk(uint64_t first, uint64_t count, std::vector<std::byte>& scratch)>;

// A tensor to read: what it is, and how to start reading it (a view, a dequantizer: made when its
// turn comes and dropped after, so a remote file's tensors are not all in memory at once).
struct Values {
  std::string type;
  std::vector<uint64_t> shape;
  uint64_t elements = 0, stored_bytes = 0;
  unsigned bits = 32;  // of each value the chunks hold
  bool numeric = true;
  std::function<ChunkReader()> open;
};

Values values_of(const Weights& w, const std::string& name) {
  Values v;
  if (std::optional<DecodedValues> d = w.decoded(name)) {  // a quantized weight, a GGUF tensor
    v.type = d->type;
    v.shape = d->shape;
    v.elements = std::accumulate(v.shape.begin(), v.shape.end(), uint64_t{1}, std::multiplies<>());
    v.stored_bytes = d->stored_bytes;
    v.open = [read = std::move(d->read)]() -> ChunkReader {
      return [read](uint64_t first, uint64_t count, std::vector<std::byte>& scratch) {
        scratch.resize(count * sizeof(float));
        read(first, count, scratch);
        return Chunk{Dtype::F32, scratch};
      };
    };
    return v;
  }
  const auto [file, t] = w.at(name);
  v.type = std::string(dtype_name(t->dtype));
  v.shape.assign(t->shape.begin(), t->shape.end());
  v.elements = t->element_count();
  v.stored_bytes = t->byte_size();
  v.bits = dtype_bits(t->dtype);
  v.numeric = can_convert(t->dtype, Dtype::F64);
  v.open = [file, name = t->name, dtype = t->dtype]() -> ChunkReader {
    const TensorView view = file->view(name);  // a copy for a URL: one tensor at a time
    return [view, dtype](uint64_t first, uint64_t count, std::vector<std::byte>&) {
      const unsigned bits = dtype_bits(dtype);
      if (first * bits % 8 != 0)  // chunks and whole rows of sub-byte dtypes start on whole bytes
        throw_invalid(fmt::format("values from element {} do not start on a whole byte", first), std::string(view.name()));
      return Chunk{dtype, view.bytes().subspan(first * bits / 8, (count * bits + 7) / 8)};
    };
  };
  return v;
}

// A tensor's error from the sums of its pairs.
TensorError error_of(const DifferenceSums& s) {
  TensorError e;
  e.nonfinite = s.nonfinite;
  e.nonfinite_mismatch = s.mismatch;
  e.max_abs = s.max_abs;
  e.rmse = s.finite ? std::sqrt(s.d2 / static_cast<double>(s.finite)) : 0.0;
  if (s.a2 == 0 && s.b2 == 0) e.cosine = 1;
  else if (s.a2 == 0 || s.b2 == 0) e.cosine = 0;
  else if (const double norms = s.a2 * s.b2; std::isfinite(norms)) e.cosine = s.ab / std::sqrt(norms);  // 1 for a == b
  else e.cosine = s.ab / (std::sqrt(s.a2) * std::sqrt(s.b2));
  e.sqnr_db = s.d2 == 0 ? std::numeric_limits<double>::infinity() : 10 * std::log10(s.b2 / s.d2);
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
    if (callback_ && std::this_thread::get_id() == caller_) callback_(std::min(now, total_), total_);
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
// histogram over [min, max] in a second (the chunks read again, from the page cache).
void compute(TensorFigures& f, const Values& v, const Values* ref, const detail::Pairing* pair, unsigned bins,
             Progress& progress) {
  const ChunkReader read = v.open();
  const ChunkReader read_ref = ref ? ref->open() : ChunkReader();
  // A permuted pair is read in whole rows, each of the reference's found by the permutation.
  const uint64_t rows = f.shape.empty() ? 1 : f.shape[0];
  const uint64_t cols = rows ? f.elements / std::max<uint64_t>(rows, 1) : 0;
  const bool by_rows = pair && pair->permute_heads > 0;
  const uint64_t chunk = by_rows ? std::max<uint64_t>(1, kChunk / std::max<uint64_t>(cols, 1)) * cols : kChunk;
  const uint64_t chunks = (f.elements + chunk - 1) / chunk;
  const auto count_of = [&](uint64_t k) { return std::min(chunk, f.elements - k * chunk); };
  const auto share = [&](uint64_t bytes, uint64_t k) {
    return static_cast<uint64_t>(static_cast<double>(bytes) * static_cast<double>(count_of(k)) /
                                 static_cast<double>(std::max<uint64_t>(f.elements, 1)));
  };
  std::vector<ValueStats> partial(chunks);
  std::vector<DifferenceSums> sums(ref ? chunks : 0);
  for_chunks(chunks, [&](uint64_t k) {
    thread_local std::vector<std::byte> scratch, ref_scratch;
    const uint64_t first = k * chunk, count = count_of(k);
    const Chunk c = read(first, count, scratch);
    partial[k] = value_stats(c.dtype, c.bytes, count);
    if (ref) {
      if (!by_rows) {
        const Chunk r = read_ref(first, count, ref_scratch);
        sums[k] = difference_sums(c.dtype, c.bytes, r.dtype, r.bytes, count);
      } else {
        const unsigned bits = dtype_bits(c.dtype);
        for (uint64_t row = 0; row < count / cols; ++row) {
          const Chunk r = read_ref(pair->reference_row(first / cols + row, rows) * cols, cols, ref_scratch);
          sums[k].merge(difference_sums(c.dtype, c.bytes.subspan(row * cols * bits / 8), r.dtype, r.bytes, cols));
        }
      }
      progress.add(share(ref->stored_bytes, k));
    }
    progress.add(share(v.stored_bytes, k));
  });
  for (const ValueStats& p : partial) f.stats.merge(p);
  if (ref) {
    DifferenceSums total;
    for (const DifferenceSums& s : sums) total.merge(s);
    f.error = error_of(total);
    f.error->reference = pair->reference;
    f.error->reference_type = ref->type;
  }
  const ValueStats& s = f.stats;
  f.histogram.assign(bins, 0);
  if (s.finite() > 0 && s.max == s.min) f.histogram[0] = s.finite();  // one value: one bin, as numpy
  if (s.finite() == 0 || !(s.max > s.min) || std::isinf(s.min) || std::isinf(s.max)) {
    progress.add(v.stored_bytes);
    return;
  }
  std::vector<std::vector<uint64_t>> counts(chunks);
  for_chunks(chunks, [&](uint64_t k) {
    thread_local std::vector<std::byte> scratch;
    counts[k].assign(bins, 0);
    const Chunk c = read(k * chunk, count_of(k), scratch);
    add_to_histogram(c.dtype, c.bytes, count_of(k), s.min, s.max, counts[k]);
    progress.add(share(v.stored_bytes, k));
  });
  for (const auto& part : counts)
    for (unsigned i = 0; i < bins; ++i) f.histogram[i] += part[i];
}

}  // namespace

std::vector<TensorFigures> tensor_figures(const Weights& model, std::span<const std::string> names,
                                          const FigureOptions& options) {
  if (options.bins == 0 || options.bins > kMaxBins)
    throw_invalid(fmt::format("bins must be in 1..{}, not {}", kMaxBins, options.bins));
  const std::optional<detail::Pairings> pairs =
      options.reference ? std::optional(detail::pair_names(model, *options.reference)) : std::nullopt;
  std::vector<std::pair<Values, std::optional<Values>>> inputs;
  uint64_t total = 0;
  for (const std::string& name : names) {
    Values v = values_of(model, name);
    std::optional<Values> ref;
    if (pairs)
      if (const detail::Pairing* p = pairs->find(name)) ref = values_of(*options.reference, p->reference);
    if (v.numeric) total += 2 * v.stored_bytes + (ref ? ref->stored_bytes : 0);  // for progress only
    inputs.emplace_back(std::move(v), std::move(ref));
  }
  Progress progress(options.progress, total);
  std::vector<TensorFigures> out;
  out.reserve(names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    const auto& [v, ref] = inputs[i];
    TensorFigures f;
    f.name = names[i];
    f.type = v.type;
    f.shape = v.shape;
    f.elements = v.elements;
    f.stored_bytes = v.stored_bytes;
    f.layer = detail::layer_of(f.name);
    f.numeric = v.numeric;
    const detail::Pairing* pair = pairs ? pairs->find(f.name) : nullptr;
    const Values* compared = nullptr;
    if (ref && v.numeric) {
      if (!ref->numeric)
        f.note = fmt::format("the reference's {} has no numeric values", ref->type);
      else if (ref->elements != v.elements || (pair->permute_heads && ref->shape != v.shape))
        f.note = fmt::format("shapes differ: [{}] here, [{}] in the reference", fmt::join(v.shape, ", "),
                             fmt::join(ref->shape, ", "));
      else if (pair->permute_heads && (v.shape.size() != 2 || v.shape[0] % (2 * pair->permute_heads) != 0))
        f.note = fmt::format("its rows cannot be split into {} heads of pairs", pair->permute_heads);
      else if (pair->permute_heads && (v.shape[1] * v.bits % 8 != 0 || v.shape[1] * ref->bits % 8 != 0))
        f.note = "its rows do not start on whole bytes";
      else
        compared = &*ref;
    }
    if (v.numeric) compute(f, v, compared, pair, options.bins, progress);
    out.push_back(std::move(f));
  }
  progress.finish();
  return out;
}

}  // namespace tlio

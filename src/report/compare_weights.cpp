// report/compare_weights.cpp: diff of any two inputs of weights. Files and folders go to
// compare_files; with a GGUF file on a side, names are paired as the report pairs them and each
// pair is compared chunk by chunk over every core (whole rows where Q/K rows are interleaved).
#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "common/parallel.hpp"
#include "common/text.hpp"
#include "quant/compare_values.hpp"
#include "report/pairing.hpp"
#include "report/weight_values.hpp"
#include "tlio/compare.hpp"
#include "tlio/error.hpp"
#include "tlio/weights.hpp"

namespace tlio {

namespace {

// Values per chunk: each chunk's sums are added in one order, whatever the thread count.
constexpr uint64_t kChunk = uint64_t{1} << 18;

struct Progress {
  const ProgressCallback& callback;
  uint64_t total = 0;
  std::atomic<uint64_t> done{0};
};

// Compares the model's values `v` with the reference's `ref` paired by `pair` into c.
void compare_pair(const detail::Values& v, const detail::Values& ref, const detail::Pairing& pair,
                  const CompareOptions& options, TensorComparison& c, Progress& progress) {
  const uint64_t n = c.elements;
  const detail::ChunkReader read = v.open(), read_ref = ref.open();
  // Interleaved rows are compared a whole row at a time, each of the reference's found by the
  // permutation (a 1-D tensor's rows are its values).
  const uint64_t rows = v.shape.empty() ? 1 : v.shape[0], cols = n / rows;
  const bool by_rows = pair.permute_heads > 0;
  const uint64_t chunk = by_rows ? std::max<uint64_t>(1, kChunk / cols) * cols : kChunk;
  const uint64_t chunks = (n + chunk - 1) / chunk;
  std::vector<DifferenceSums> sums(chunks);
  const auto caller = std::this_thread::get_id();
  detail::parallel_for(chunks, 2, 1, detail::thread_count(detail::configured_threads()),
                       [&](uint64_t begin, uint64_t end) {
                         std::vector<std::byte> scratch, ref_scratch;
                         for (uint64_t k = begin; k < end; ++k) {
                           const uint64_t first = k * chunk, count = std::min(chunk, n - first);
                           sums[k] = detail::pair_sums(read(first, count, scratch), first, count,
                                                       rows, cols, read_ref, pair, ref_scratch,
                                                       options.atol, options.rtol);
                           const uint64_t now = progress.done += count;
                           if (progress.callback && std::this_thread::get_id() == caller)
                             progress.callback(std::min(now, progress.total), progress.total);
                         }
                       });
  DifferenceSums total;
  for (const DifferenceSums& s : sums) total.merge(s);
  detail::fill_comparison(total, c);
}

}  // namespace

CompareReport compare_weights(const Weights& a, const Weights& b, const CompareOptions& options) {
  if (a.kind() != WeightsKind::gguf &&
      b.kind() != WeightsKind::gguf) {  // safetensors on both sides
    CompareOptions o = options;
    o.quantization_config_a = a.quantization_config();
    o.quantization_config_b = b.quantization_config();
    return compare_files(a.files(), b.files(), o);
  }
  detail::check_tolerances(options);
  const detail::Pairings pairs = detail::pair_names(a, b);
  const detail::NameFilter filter(options.filter, "");
  const auto selected = [&](const std::string& name) {
    return options.filter.empty() || filter.includes(name, true);
  };

  CompareReport report;
  struct Job {
    TensorComparison c;
    detail::Values v, ref;
    const detail::Pairing* pair;
  };
  std::vector<Job> jobs;
  Progress progress{options.progress};
  for (const std::string& name : a.value_names()) {
    const detail::Pairing* pair = pairs.find(name);
    if (!selected(name) && !(pair && selected(pair->reference))) continue;
    if (!pair) {
      if (!pairs.made(name)) report.only_in_a.push_back(name);
      continue;
    }
    Job j{{}, detail::values_of(a, name), detail::values_of(b, pair->reference), pair};
    j.c.name = name;
    if (pair->reference != name) j.c.b_name = pair->reference;
    j.c.a_dtype = j.v.type;
    j.c.b_dtype = j.ref.type;
    j.c.shape = Shape(j.v.shape);
    j.c.elements = j.v.elements;
    if (!j.v.numeric)
      j.c.note = j.v.note;
    else if (const std::string why = detail::not_compared(j.v, j.ref, *pair); !why.empty())
      j.c.note = why;
    else
      progress.total += j.c.elements;
    jobs.push_back(std::move(j));
  }
  for (const std::string& name : pairs.unpaired_reference())
    if (selected(name)) report.only_in_b.push_back(name);
  for (Job& j : jobs) {
    if (j.c.note.empty() && j.c.elements > 0)
      compare_pair(j.v, j.ref, *j.pair, options, j.c, progress);
    else if (j.c.note.empty())
      j.c.compared = j.c.equal = true;  // empty tensors of one shape
    report.tensors.push_back(std::move(j.c));
  }
  if (options.progress) options.progress(progress.total, progress.total);
  const auto natural = [](const std::string& p, const std::string& q) {
    return natural_less(p, q);
  };
  std::sort(report.only_in_a.begin(), report.only_in_a.end(), natural);
  std::sort(report.only_in_b.begin(), report.only_in_b.end(), natural);
  std::sort(report.tensors.begin(), report.tensors.end(),
            [](const TensorComparison& p, const TensorComparison& q) {
              return natural_less(p.name, q.name);
            });
  report.equal = report.only_in_a.empty() && report.only_in_b.empty() &&
                 std::all_of(report.tensors.begin(), report.tensors.end(),
                             [](const TensorComparison& c) { return c.equal; });
  return report;
}

}  // namespace tlio

// quant/compare_files.cpp: the values of two files compared name by name, across dtypes and
// against quantized weights (dequantized), in chunks over every core.
#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/json_text.hpp"
#include "common/parallel.hpp"
#include "common/text.hpp"
#include "quant/compare_values.hpp"
#include "quant/schemes.hpp"
#include "tlio/compare.hpp"
#include "tlio/convert.hpp"
#include "tlio/error.hpp"
#include "tlio/quant.hpp"

namespace tlio {

namespace {

// Elements per chunk: each chunk's sums are added in one order, whatever the thread count.
constexpr uint64_t kCompareChunk = uint64_t{1} << 18;

// What a name stands for in one set of files: a plain tensor (of `file`) or a quantized weight.
struct Entry {
  const File* file = nullptr;
  const TensorInfo* plain = nullptr;
  std::optional<QuantizedReader> quantized;
  Shape shape;
  std::string type;
  bool numeric = false;  // values convert to F64 (or dequantize)
};

std::map<std::string, Entry> entries_of(std::span<const File> files,
                                        const std::string& quantization_config) {
  std::map<std::string, Entry> out;
  std::vector<const File*> set;
  for (const File& f : files) set.push_back(&f);
  detail::TensorSet tensors(set);
  tensors.set_quantization_config(quantization_config);
  const std::vector<QuantizedWeight> weights = detail::find_quantized_weights(tensors);
  const auto parts = detail::stored_tensor_names(weights);
  for (const QuantizedWeight& w : weights) {
    Entry e;
    e.shape = w.shape;
    e.type = w.scheme.name();
    e.numeric = true;
    e.quantized.emplace(files, w);
    out.emplace(w.name, std::move(e));
  }
  for (const File& f : files)
    for (const TensorInfo& t : f.tensors()) {
      if (parts.contains(t.name)) continue;
      Entry e;
      e.file = &f;
      e.plain = &t;
      e.shape = t.shape;
      e.type = dtype_name(t.dtype);
      e.numeric = can_convert(t.dtype, Dtype::F64);
      if (!out.emplace(t.name, std::move(e)).second)
        throw Error(
            ErrorCode::format, Rule::index, t.name, std::nullopt,
            fmt::format("tensor {} is in two of the files compared", detail::quote_name(t.name)));
    }
  // Tie records ({alias: tensor} metadata, as save_model writes for tied weights): the alias has
  // its tensor's values, so a file that stores both names compares equal to one that ties them.
  for (const File& f : files)
    for (const auto& [alias, tensor] : f.metadata())
      if (const auto it = out.find(tensor);
          it != out.end() && it->second.plain && !out.contains(alias))
        out.emplace(alias, it->second);
  return out;
}

// Elements [first, first + count) of an entry in a dtype of their own, as the engine of
// differences takes them: a view of a mapped file, the bytes read into `raw`, or a quantized
// weight decoded into `raw` in the dtype dequantize writes (its rounding: a weight equals its
// output).
struct Run {
  Dtype dtype;
  std::span<const std::byte> bytes;
};
Run read_run(const Entry& e, uint64_t first, uint64_t count, std::vector<std::byte>& raw) {
  if (e.quantized) {
    const Dtype d = e.quantized->weight().dtype;
    const Dtype as = d == Dtype::F16 || d == Dtype::BF16 ? d : Dtype::F32;
    raw.resize(static_cast<size_t>(bytes_for(as, count)));
    e.quantized->read(first, count, as, raw);
    return {as, raw};
  }
  const File& f = *e.file;
  const Dtype d = e.plain->dtype;
  const unsigned bits = dtype_bits(d);
  const uint64_t offset = first * bits / 8, bytes = bytes_for(d, count);
  if (const std::span<const std::byte> mapped = f.mapped_data(); !mapped.empty())
    return {d, mapped.subspan(static_cast<size_t>(e.plain->begin + offset),
                              static_cast<size_t>(bytes))};
  raw.resize(static_cast<size_t>(bytes));
  f.read_data(e.plain->begin + offset, raw);
  return {d, raw};
}

// Progress across the whole comparison: elements done so far, reported from the calling thread.
struct Progress {
  const ProgressCallback& callback;
  uint64_t done = 0, total = 0;
  void report(uint64_t now) const {
    if (callback) callback(std::min(now, total), total);
  }
};

void compare_numeric(const Entry& a, const Entry& b, const CompareOptions& options,
                     TensorComparison& c, Progress& progress) {
  const uint64_t n = c.elements, chunks = (n + kCompareChunk - 1) / kCompareChunk;
  std::vector<DifferenceSums> sums(static_cast<size_t>(chunks));
  std::atomic<uint64_t> compared{0};
  detail::parallel_for(chunks, 2, 1, detail::thread_count(detail::configured_threads()),
                       [&](uint64_t begin, uint64_t end) {
                         std::vector<std::byte> raw_a, raw_b;
                         for (uint64_t k = begin; k < end; ++k) {
                           const uint64_t first = k * kCompareChunk;
                           const uint64_t m = std::min(kCompareChunk, n - first);
                           const Run ra = read_run(a, first, m, raw_a),
                                     rb = read_run(b, first, m, raw_b);
                           sums[k] = difference_sums(ra.dtype, ra.bytes, rb.dtype, rb.bytes, m,
                                                     options.atol, options.rtol);
                           compared += m;
                           if (begin == 0) progress.report(progress.done + compared.load());
                         }
                       });
  progress.done += n;
  progress.report(progress.done);
  DifferenceSums total;
  for (const DifferenceSums& s : sums) total.merge(s);
  detail::fill_comparison(total, c);
}

// Dtypes without numeric values, the same on both sides: equal bytes or not, a piece at a time.
void compare_bytes(const Entry& ea, const Entry& eb, TensorComparison& c) {
  constexpr uint64_t kPiece = uint64_t{16} << 20;
  const TensorInfo &a = *ea.plain, &b = *eb.plain;
  std::vector<std::byte> x, y;
  c.equal = true;
  for (uint64_t at = 0; at < a.byte_size() && c.equal; at += kPiece) {
    const uint64_t m = std::min(kPiece, a.byte_size() - at);
    x.resize(static_cast<size_t>(m));
    y.resize(static_cast<size_t>(m));
    ea.file->read_data(a.begin + at, x);
    eb.file->read_data(b.begin + at, y);
    c.equal = x == y;
  }
  c.compared = true;
  c.note = c.equal ? "" : "bytes differ";
  c.max_abs = c.max_rel = c.equal ? 0 : INFINITY;
  c.outside = c.equal ? 0 : c.elements;
  c.cosine = c.equal ? 1 : 0;
}

}  // namespace

CompareReport compare_files(std::span<const File> a, std::span<const File> b,
                            const CompareOptions& options) {
  if (a.empty() || b.empty()) throw_invalid("compare_files: each side is at least one file");
  detail::check_tolerances(options);
  std::map<std::string, Entry> ea = entries_of(a, options.quantization_config_a),
                               eb = entries_of(b, options.quantization_config_b);
  if (!options.filter.empty()) {
    const detail::NameFilter filter(options.filter, "");
    std::erase_if(ea, [&](const auto& e) { return !filter.includes(e.first, true); });
    std::erase_if(eb, [&](const auto& e) { return !filter.includes(e.first, true); });
  }
  CompareReport report;
  for (const auto& [name, e] : ea)
    if (!eb.contains(name)) report.only_in_a.push_back(name);
  for (const auto& [name, e] : eb)
    if (!ea.contains(name)) report.only_in_b.push_back(name);

  Progress progress{options.progress};
  for (const auto& [name, x] : ea)
    if (const auto y = eb.find(name);
        y != eb.end() && x.numeric && y->second.numeric && x.shape == y->second.shape)
      progress.total += x.quantized ? x.quantized->element_count() : x.plain->element_count();

  for (const auto& [name, x] : ea) {
    const auto it = eb.find(name);
    if (it == eb.end()) continue;
    const Entry& y = it->second;
    TensorComparison c;
    c.name = name;
    c.a_dtype = x.type;
    c.b_dtype = y.type;
    c.shape = x.shape;
    c.elements = x.quantized ? x.quantized->element_count() : x.plain->element_count();
    if (!(x.shape == y.shape)) {
      c.note =
          fmt::format("shape [{}] vs [{}]", fmt::join(x.shape, ", "), fmt::join(y.shape, ", "));
    } else if (x.numeric && y.numeric) {
      compare_numeric(x, y, options, c, progress);
      // 64-bit integers differ beyond F64's 53 bits unseen: the same dtype is checked exactly.
      if (c.equal && c.max_abs == 0 && x.plain && y.plain && x.plain->dtype == y.plain->dtype &&
          (x.plain->dtype == Dtype::I64 || x.plain->dtype == Dtype::U64)) {
        TensorComparison exact = c;
        compare_bytes(x, y, exact);
        if (!exact.equal) {
          c.equal = false;
          c.outside = std::max<uint64_t>(c.outside, 1);
          c.note = "values differ beyond F64's precision";
        }
      }
    } else if (x.plain && y.plain && x.plain->dtype == y.plain->dtype) {
      compare_bytes(x, y, c);
    } else {
      c.note = fmt::format("{} and {} cannot be compared by value", x.type, y.type);
    }
    report.tensors.push_back(std::move(c));
  }
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

CompareReport compare_files(const File& a, const File& b, const CompareOptions& options) {
  return compare_files(std::span(&a, 1), std::span(&b, 1), options);
}

}  // namespace tlio

// cli/cmd_cat.cpp: `tlio cat FILE NAME... [--filter RE] [--slice SPEC] [--json]`: tensors' values,
// laid out as numpy prints them. Only the block the slice lies in is read, and a summarized print
// (past 1,000 values) reads only the rows it shows.
#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>
#include <regex>

#include "arg_checks.hpp"
#include "cli_util.hpp"
#include "commands.hpp"
#include "slice_spec.hpp"
#include "tlio/convert_file.hpp"
#include "tlio/error.hpp"
#include "tlio/file.hpp"
#include "tlio/quant.hpp"
#include "tlio/weights.hpp"

namespace tlio::cli {
namespace {

// The block of positions [lo, hi) a pick lies in.
std::pair<uint64_t, uint64_t> pick_block(const DimPick& p) {
  if (p.count == 0) return {0, 0};
  const uint64_t last = static_cast<uint64_t>(static_cast<int64_t>(p.start) +
                                              static_cast<int64_t>(p.count - 1) * p.step);
  return {std::min(p.start, last), std::max(p.start, last) + 1};
}

// The picked elements of a row-major `block` (whose dimensions start at `block_lo`), each
// `size` bytes, in the result's row-major order.
std::vector<std::byte> gather(std::span<const std::byte> block,
                              const std::vector<uint64_t>& block_shape,
                              const std::vector<uint64_t>& block_lo,
                              const std::vector<DimPick>& picks, size_t size) {
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
                                   static_cast<int64_t>(k[d]) * picks[d].step) -
             block_lo[d]) *
            stride[d];
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
  const std::optional<DecodedValues> decoded =
      w.decoded(name);  // a quantized weight, a GGUF tensor
  CatValues v;
  std::vector<uint64_t> shape;
  if (decoded) {
    v.dtype = tlio::Dtype::F32;
    shape = decoded->shape;
    *scheme = decoded->type;
  } else {
    const tlio::TensorInfo& t = *w.at(name).second;
    if (!has_numeric_values(t.dtype))
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
                        const std::vector<uint64_t>& block_lo,
                        const std::vector<DimPick>& block_picks, uint64_t elements) {
    if (tlio::is_integer(v.dtype)) {
      const std::vector<std::byte> picked =
          gather(block, block_shape, block_lo, block_picks, tlio::dtype_bits(v.dtype) / 8);
      v.integers.insert(v.integers.end(), picked.begin(), picked.end());
      return;
    }
    std::vector<double> values(elements);
    tlio::convert(v.dtype, block, tlio::Dtype::F64, std::as_writable_bytes(std::span(values)),
                  elements);
    const std::vector<std::byte> picked = gather(std::as_bytes(std::span(values)), block_shape,
                                                 block_lo, block_picks, sizeof(double));
    const size_t at = v.floats.size();
    v.floats.resize(at + picked.size() / sizeof(double));
    std::memcpy(v.floats.data() + at, picked.data(), picked.size());
  };
  const bool is_quantized = decoded.has_value();
  const tlio::File* f = is_quantized ? nullptr : w.at(name).first;
  if (shape.empty()) {  // a scalar
    std::vector<std::byte> one(4);
    if (is_quantized) decoded->read(0, 1, one);
    take(is_quantized ? one : f->read_slice(name, {}), {}, {}, picks, 1);
    return v;
  }
  for (const DimPick& p : picks)
    if (p.count == 0) return v;  // nothing to show, nothing to read
  // A summary shows the first and last rows of dimension 0 only: only those are read.
  std::vector<std::pair<uint64_t, uint64_t>> row_runs{{0, picks[0].count}};
  if (summarize && picks[0].keep && picks[0].count > 2 * kEdgeItems &&
      std::accumulate(v.shape.begin(), v.shape.end(), uint64_t{1}, std::multiplies<>()) >
          kSummaryThreshold) {
    row_runs = {{0, kEdgeItems}, {picks[0].count - kEdgeItems, picks[0].count}};
    for (const auto& [begin, end] : row_runs)
      for (uint64_t r = begin; r < end; ++r) v.rows.push_back(r);
  }
  // The other dimensions' blocks (a quantized weight: whole rows, as it dequantizes by element).
  std::vector<uint64_t> rest_shape, rest_lo;
  uint64_t row_elements = 1;
  for (size_t d = 1; d < shape.size(); ++d) {
    const auto [lo, hi] =
        is_quantized ? std::pair<uint64_t, uint64_t>{0, shape[d]} : pick_block(picks[d]);
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
      const DimPick group{static_cast<uint64_t>(static_cast<int64_t>(first.start) +
                                                static_cast<int64_t>(k) * first.step),
                          n, first.step, first.keep};
      const auto [lo, hi] = pick_block(group);
      std::vector<uint64_t> block_shape{hi - lo}, block_lo{lo};
      block_shape.insert(block_shape.end(), rest_shape.begin(), rest_shape.end());
      block_lo.insert(block_lo.end(), rest_lo.begin(), rest_lo.end());
      const uint64_t elements = (hi - lo) * row_elements;
      std::vector<std::byte> block;
      if (is_quantized) {
        block.resize(elements * 4);
        decoded->read(lo * row_elements, elements, block);
      } else {
        std::vector<tlio::SliceIndex> ranges{tlio::SliceIndex::range(lo, hi)};
        for (size_t d = 1; d < shape.size(); ++d)
          ranges.push_back(
              tlio::SliceIndex::range(rest_lo[d - 1], rest_lo[d - 1] + rest_shape[d - 1]));
        block = f->read_slice(name, ranges);
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
      if (dim + 1 == shape.size())
        out += cells[offset + i];
      else
        rec(dim + 1, offset + i * stride);
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
  const bool summarize = std::accumulate(shape.begin(), shape.end(), uint64_t{1},
                                         std::multiplies<>()) > kSummaryThreshold;
  // Where row i of dimension 0 is in `cells`.
  const auto held_row = [&](uint64_t i) {
    if (rows.empty()) return i;
    return static_cast<uint64_t>(std::lower_bound(rows.begin(), rows.end(), i) - rows.begin());
  };
  size_t width = 0;
  std::string out;
  bool measuring = true;  // first pass: the width of what is shown; second: the text
  std::function<void(size_t, uint64_t, size_t)> rec = [&](size_t dim, uint64_t offset,
                                                          size_t indent) {
    if (!measuring) out += "[";
    uint64_t stride = 1;
    for (size_t k = dim + 1; k < shape.size(); ++k) stride *= shape[k];
    const uint64_t n = shape[dim];
    const bool elide = summarize && n > 2 * kEdgeItems;
    for (uint64_t i = 0; i < n; ++i) {
      if (elide && i == kEdgeItems) {
        if (!measuring) {
          out += dim + 1 == shape.size() ? " ..." : "\n" + std::string(indent + 1, ' ') + "...";
          if (dim + 1 == shape.size())
            out += " ";
          else
            out += std::string(shape.size() - dim - 1, '\n') + std::string(indent + 1, ' ');
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

// One tensor's values: printed as numpy prints them (after a "NAME: DTYPE [shape]" line with
// `header`), or, with `json`, returned as its JSON document.
std::string cat_one(const Weights& w, const std::string& name, const std::string& slice, bool json,
                    bool header) {
  std::string scheme;
  const CatValues v = cat_values(w, name, slice, &scheme, !json);
  std::vector<std::string> cells;
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
      cells.push_back(!json                          ? format_value(x, v.dtype)
                      : v.dtype == tlio::Dtype::BOOL ? (x != 0 ? "true" : "false")
                      : std::isfinite(x)             ? fmt::format("{}", x)
                                                     : "null");
  }
  if (json)
    return fmt::format("{{\"name\":{},\"dtype\":\"{}\",{}\"shape\":[{}],\"values\":{}}}",
                       json_string(name), tlio::dtype_name(v.dtype),
                       scheme.empty() ? "" : fmt::format("\"scheme\":{},", json_string(scheme)),
                       fmt::join(v.shape, ","), json_array(cells, v.shape));
  if (header)
    fmt::print("{}: {} {}\n", display_name(name),
               scheme.empty() ? std::string(tlio::dtype_name(v.dtype)) : scheme,
               shape_text(v.shape));
  print_array(cells, v.shape, v.rows);
  return {};
}

}  // namespace

void add_cat(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("cat", "Print the values of tensors (or slices), like numpy");
  cmd->footer(
      "--slice takes one entry per leading dimension, as numpy: an index (4, -1) or a\n"
      "range with an optional step (0:2, :, 3:, ::2, ::-1). Values of any numeric dtype are\n"
      "shown converted to decimal; a quantized weight's (by its logical name) dequantized.\n"
      "A NAME may be a glob pattern ('*.norm.weight', '*' crossing dots); --filter REGEX\n"
      "takes the names it finds. Several tensors are printed one after another, each after\n"
      "a 'NAME: DTYPE [shape]' line (--json: {\"path\", \"tensors\": [...]}).\n\n"
      "Examples:\n  tlio cat model.safetensors bigram.weight --slice 10,0:8\n"
      "  tlio cat model/ '*.norm.weight'");
  struct Args {
    std::string file, slice, filter;
    std::vector<std::string> names;
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("FILE", a->file,
                  "File or model folder, or its URL (http(s)://, s3://, gs://, hf://)")
      ->required();
  add_remote_options(cmd);
  cmd->add_option("NAME", a->names, "Tensor names or glob patterns (or none, with --filter)");
  cmd->add_option("--filter", a->filter, "The tensors whose names match REGEX (a search)")
      ->check(regex_check());
  cmd->add_option("--slice", a->slice, "e.g. 4,7 or 0:2,: or ::2,-1 (for every tensor named)")
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
  cmd->add_flag(
      "--json", a->json,
      "One JSON document on stdout: {\"name\", \"dtype\", \"scheme\" (quantized weights), "
      "\"shape\", \"values\"} (nested lists; NaN and infinities as null); several tensors: "
      "{\"path\", \"tensors\": [...]}");
  cmd->callback([a, &exit_code] {
    exit_code = guarded_output(a->json, [&] {
      if (a->names.empty() && a->filter.empty())
        throw UsageError("NAME is required (or --filter REGEX)");
      const std::unique_ptr<const Weights> opened = Weights::open(a->file, open_options());
      const Weights& w = *opened;
      // One plain name prints as it always has; patterns and --filter print a list.
      const bool one = a->names.size() == 1 && a->filter.empty() &&
                       a->names[0].find_first_of("*?[") == std::string::npos;
      if (one) {
        const std::string doc = cat_one(w, a->names[0], a->slice, a->json, false);
        if (a->json) fmt::print("{}\n", doc);
        return kExitOk;
      }
      const std::vector<std::string> all = w.value_names();
      std::vector<std::string> names =
          a->names.empty() ? all : expand_globs(a->names, all, w.name());
      if (!a->filter.empty()) {
        const std::regex filter(a->filter, std::regex::ECMAScript);
        std::erase_if(names, [&](const std::string& n) { return !std::regex_search(n, filter); });
        if (names.empty())
          throw UsageError(
              fmt::format("no tensor of {} matches --filter '{}'", w.name(), a->filter));
      }
      std::vector<std::string> docs;
      for (const std::string& name : names)
        docs.push_back(cat_one(w, name, a->slice, a->json, true));
      if (a->json)
        fmt::print("{{\"path\":{},\"tensors\":[{}]}}\n", json_string(w.name()),
                   fmt::join(docs, ","));
      return kExitOk;
    });
  });
}

}  // namespace tlio::cli

// cli/cmd_values.cpp: commands that look at tensor values: `tlio cat`, `tlio stats` (`tlio diff` is
// cmd_diff.cpp). Values are converted to F64 chunk by chunk (through the public convert API), so
// any size works in bounded memory.
#include <algorithm>
#include <cstring>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <set>

#include <fmt/core.h>
#include <fmt/format.h>

#include "cli_util.hpp"
#include "commands.hpp"
#include "tlio/convert_file.hpp"
#include "tlio/error.hpp"
#include "tlio/file.hpp"
#include "tlio/quant.hpp"

namespace tlio::cli {
namespace {

// Elements converted per step.
constexpr uint64_t kChunk = uint64_t{1} << 20;

bool numeric(tlio::Dtype d) { return tlio::can_convert(d, tlio::Dtype::F64); }

// Calls fn with consecutive chunks of a tensor's values as doubles.
void for_each_chunk(const tlio::File& f, const tlio::TensorInfo& t,
                    const std::function<void(std::span<const double>)>& fn) {
  const tlio::TensorView v = f.view(t.name);
  const uint64_t n = t.element_count();
  const unsigned bits = tlio::dtype_bits(t.dtype);
  std::vector<double> buf;
  for (uint64_t i = 0; i < n; i += kChunk) {
    const uint64_t m = std::min(kChunk, n - i);
    buf.resize(m);
    tlio::convert(t.dtype, v.bytes().subspan(i * bits / 8, m * bits / 8), tlio::Dtype::F64,
                  std::as_writable_bytes(std::span(buf)), m);
    fn(buf);
  }
}

// The values of a quantized weight, dequantized chunk by chunk.
void for_each_chunk(const tlio::File& f, const tlio::QuantizedWeight& q,
                    const std::function<void(std::span<const double>)>& fn) {
  const tlio::QuantizedReader r(f, q);
  const uint64_t n = r.element_count();
  std::vector<float> values;
  std::vector<double> buf;
  for (uint64_t i = 0; i < n; i += kChunk) {
    const uint64_t m = std::min(kChunk, n - i);
    values.resize(m);
    r.read(i, m, tlio::Dtype::F32, std::as_writable_bytes(std::span(values)));
    buf.assign(values.begin(), values.end());
    fn(buf);
  }
}

// ---- cat ----------------------------------------------------------------------------------------

std::vector<tlio::SliceIndex> parse_slice(const std::string& spec, const tlio::TensorInfo& t) {
  std::vector<tlio::SliceIndex> out;
  if (spec.empty()) return out;
  size_t start = 0, dim = 0;
  while (start <= spec.size()) {
    size_t comma = spec.find(',', start);
    std::string part = spec.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    part.erase(std::remove(part.begin(), part.end(), ' '), part.end());
    if (dim >= t.shape.size())
      tlio::throw_invalid(fmt::format("--slice {} has more entries than the {} dimensions", spec,
                                      t.shape.size()));
    const int64_t size = static_cast<int64_t>(t.shape[dim]);
    auto number = [&](const std::string& s, int64_t fallback) -> uint64_t {
      if (s.empty()) return static_cast<uint64_t>(fallback);
      size_t used = 0;
      long long v = 0;
      try {
        v = std::stoll(s, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != s.size()) tlio::throw_invalid(fmt::format("--slice: '{}' is not an integer", s));
      if (v < 0) v += size;  // numpy-style negative positions
      if (v < 0) tlio::throw_invalid(fmt::format("--slice: {} is before the start of dimension {}", s, dim));
      return static_cast<uint64_t>(v);
    };
    const size_t colon = part.find(':');
    if (colon == std::string::npos) {
      out.push_back(tlio::SliceIndex::at(number(part, 0)));
    } else {
      out.push_back(tlio::SliceIndex::range(number(part.substr(0, colon), 0),
                                            number(part.substr(colon + 1), size)));
    }
    ++dim;
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
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

// numpy's str() layout: nested brackets, right-aligned columns, "..." past 1,000 elements.
void print_array(const std::vector<std::string>& cells, const std::vector<uint64_t>& shape) {
  if (shape.empty()) {
    fmt::print("{}\n", cells.empty() ? "" : cells[0]);
    return;
  }
  size_t width = 0;
  for (const auto& c : cells) width = std::max(width, display_width(c));
  uint64_t total = 1;
  for (uint64_t d : shape) total *= d;
  const bool summarize = total > 1000;
  constexpr uint64_t kEdge = 3;
  std::string out;
  std::function<void(size_t, uint64_t, size_t)> rec = [&](size_t dim, uint64_t offset, size_t indent) {
    out += "[";
    uint64_t stride = 1;
    for (size_t k = dim + 1; k < shape.size(); ++k) stride *= shape[k];
    const uint64_t n = shape[dim];
    for (uint64_t i = 0; i < n; ++i) {
      if (summarize && n > 2 * kEdge && i == kEdge) {
        out += dim + 1 == shape.size() ? " ..." : "\n" + std::string(indent + 1, ' ') + "...";
        i = n - kEdge;
        if (dim + 1 == shape.size()) out += " ";
        else out += std::string(shape.size() - dim - 1, '\n') + std::string(indent + 1, ' ');
      }
      if (dim + 1 == shape.size()) {
        if (i > 0 && !(summarize && n > 2 * kEdge && i == n - kEdge)) out += " ";
        out += pad(cells[offset + i], width, true);
      } else {
        if (i > 0 && !(summarize && n > 2 * kEdge && i == n - kEdge))
          out += std::string(shape.size() - dim - 1, '\n') + std::string(indent + 1, ' ');
        rec(dim + 1, offset + i * stride, indent + 1);
      }
    }
    out += "]";
  };
  rec(0, 0, 0);
  fmt::print("{}\n", out);
}

}  // namespace

void add_cat(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("cat", "Print the values of a tensor (or a slice), like numpy");
  cmd->footer("--slice takes one entry per leading dimension: an index (4, -1) or a range\n"
              "(0:2, :, 3:). Values of any numeric dtype are shown converted to decimal.\n\n"
              "Examples:\n  tlio cat model.safetensors bigram.weight --slice 10,0:8");
  struct Args {
    std::string file, name, slice;
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("FILE", a->file, "File or http(s):// URL")->required();
  add_token_option(cmd);
  cmd->add_option("NAME", a->name, "Tensor name")->required();
  cmd->add_option("--slice", a->slice, "e.g. 4,7 or 0:2,:");
  cmd->add_flag("--json", a->json,
                "One JSON document on stdout: {\"name\", \"dtype\", \"shape\", \"values\"} (nested "
                "lists; NaN and infinities as null)");
  cmd->callback([a, &exit_code] {
    exit_code = guarded_output(a->json, [&] {
      tlio::File f = tlio::File::open(a->file, open_options());
      const tlio::TensorInfo& t = f.header().at(a->name);
      if (!numeric(t.dtype))
        throw tlio::Error(tlio::ErrorCode::unsupported, Rule::none, t.name, std::nullopt,
                          fmt::format("cannot show {} values", tlio::dtype_name(t.dtype)));
      const auto indices = parse_slice(a->slice, t);
      std::vector<uint64_t> shape;
      std::vector<std::byte> bytes = f.read_slice(t.name, indices, &shape);
      uint64_t n = 1;
      for (uint64_t d : shape) n *= d;
      std::vector<std::string> cells;
      cells.reserve(n);
      const bool as_json = a->json;
      if (tlio::is_integer(t.dtype)) {  // exact, not through double
        const unsigned size = tlio::dtype_bits(t.dtype) / 8;
        const bool is_signed = t.dtype == tlio::Dtype::I8 || t.dtype == tlio::Dtype::I16 ||
                               t.dtype == tlio::Dtype::I32 || t.dtype == tlio::Dtype::I64;
        for (uint64_t i = 0; i < n; ++i) {
          uint64_t u = 0;
          std::memcpy(&u, bytes.data() + i * size, size);
          if (is_signed && size < 8 && (u >> (size * 8 - 1)) & 1) u |= ~uint64_t{0} << (size * 8);
          cells.push_back(is_signed ? std::to_string(static_cast<int64_t>(u)) : std::to_string(u));
        }
      } else {
        std::vector<double> values(n);
        tlio::convert(t.dtype, bytes, tlio::Dtype::F64, std::as_writable_bytes(std::span(values)), n);
        for (double v : values)
          cells.push_back(!as_json ? format_value(v, t.dtype)
                          : t.dtype == tlio::Dtype::BOOL ? (v != 0 ? "true" : "false")
                          : std::isfinite(v)             ? fmt::format("{}", v)
                                                         : "null");
      }
      if (as_json) {
        fmt::print("{{\"name\":{},\"dtype\":\"{}\",\"shape\":[{}],\"values\":{}}}\n",
                   json_string(t.name), tlio::dtype_name(t.dtype), fmt::join(shape, ","),
                   json_array(cells, shape));
        return kExitOk;
      }
      print_array(cells, shape);
      return kExitOk;
    });
  });
}

// ---- stats ---------------------------------------------------------------------------------------

namespace {

struct Stats {
  uint64_t count = 0, nan = 0, inf = 0, zero = 0;
  double min = std::numeric_limits<double>::infinity(), max = -min;
  double mean = 0, m2 = 0;  // Welford
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
  uint64_t finite() const { return count - nan - inf; }
};

std::string histogram(const tlio::File& f, const std::function<void(const std::function<void(std::span<const double>)>&)>& each,
                      const Stats& s) {
  static const char* kBars[] = {" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  constexpr int kBins = 16;
  if (s.finite() == 0 || !(s.max > s.min) || std::isinf(s.min) || std::isinf(s.max)) return "";
  (void)f;
  std::vector<uint64_t> bins(kBins, 0);
  each([&](std::span<const double> v) {
    for (double x : v) {
      if (!std::isfinite(x)) continue;
      int b = static_cast<int>((x - s.min) / (s.max - s.min) * kBins);
      bins[std::clamp(b, 0, kBins - 1)]++;
    }
  });
  const uint64_t top = *std::max_element(bins.begin(), bins.end());
  std::string out;
  for (uint64_t b : bins) out += kBars[b == 0 ? 0 : 1 + (b * 7 + top - 1) / top];
  return out;
}

}  // namespace

void add_stats(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("stats", "Per-tensor min, max, mean, std, NaN/inf/zero counts");
  cmd->footer("Quantized weights are shown dequantized. The histogram spans [min, max] in 16 bins.\n\n"
              "Example: tlio stats model.safetensors model.norm.weight");
  struct Args {
    std::string file;
    std::vector<std::string> names;
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("FILE", a->file, "File or http(s):// URL")->required();
  add_token_option(cmd);
  cmd->add_option("NAME", a->names, "Tensors (default: all)");
  cmd->add_flag("--json", a->json,
                "One JSON document on stdout: {\"file\", \"tensors\": [{\"name\", \"type\", \"shape\", "
                "\"numeric\", \"count\", \"nan\", \"inf\", \"zero\", \"min\", \"max\", \"mean\", \"std\"}]}");
  cmd->callback([a, &exit_code] {
    exit_code = guarded_output(a->json, [&] {
      std::vector<std::string> docs;
      const auto number = [](double v) { return std::isfinite(v) ? fmt::format("{}", v) : std::string("null"); };
      tlio::File f = tlio::File::open(a->file, open_options());
      const auto quantized = tlio::find_quantized_weights(f);
      std::set<std::string> parts;
      for (const auto& q : quantized) parts.insert(q.stored.begin(), q.stored.end());
      std::vector<std::string> names = a->names;
      if (names.empty()) {
        for (const auto& t : f.tensors())
          if (!parts.count(t.name)) names.push_back(t.name);
        for (const auto& q : quantized) names.push_back(q.name);
      }
      for (const std::string& name : names) {
        std::function<void(const std::function<void(std::span<const double>)>&)> each;
        std::string kind, shape_json;
        auto q = std::find_if(quantized.begin(), quantized.end(), [&](const auto& x) { return x.name == name; });
        if (q != quantized.end()) {
          each = [&, q](const auto& fn) { for_each_chunk(f, *q, fn); };
          kind = fmt::format("{} [{}]", q->scheme.name(), fmt::join(q->shape, ", "));
          shape_json = fmt::format("[{}]", fmt::join(q->shape, ","));
        } else {
          const tlio::TensorInfo& t = f.header().at(name);
          if (!numeric(t.dtype)) {
            if (a->json)
              docs.push_back(fmt::format("{{\"name\":{},\"type\":\"{}\",\"shape\":[{}],\"numeric\":false}}",
                                         json_string(name), tlio::dtype_name(t.dtype), fmt::join(t.shape, ",")));
            else
              fmt::print("{}: {} [{}]: no numeric statistics\n", display_name(name),
                         tlio::dtype_name(t.dtype), fmt::join(t.shape, ", "));
            continue;
          }
          each = [&](const auto& fn) { for_each_chunk(f, t, fn); };
          kind = fmt::format("{} [{}]", tlio::dtype_name(t.dtype), fmt::join(t.shape, ", "));
          shape_json = fmt::format("[{}]", fmt::join(t.shape, ","));
        }
        Stats s;
        each([&](std::span<const double> v) { s.add(v); });
        const double sd = s.finite() > 0 ? std::sqrt(s.m2 / static_cast<double>(s.finite())) : 0;
        if (a->json) {
          const std::string type = kind.substr(0, kind.find(' '));
          const bool any = s.count > 0;
          docs.push_back(fmt::format(
              "{{\"name\":{},\"type\":{},\"shape\":{},\"numeric\":true,\"count\":{},\"nan\":{},"
              "\"inf\":{},\"zero\":{},\"min\":{},\"max\":{},\"mean\":{},\"std\":{}}}",
              json_string(name), json_string(type), shape_json, s.count, s.nan, s.inf, s.zero,
              any ? number(s.min) : "null", any ? number(s.max) : "null",
              s.finite() ? number(s.mean) : "null", s.finite() ? number(sd) : "null"));
          continue;
        }
        fmt::print("{}: {}\n", display_name(name), kind);
        if (s.count == 0) {
          fmt::print("  (empty)\n");
          continue;
        }
        fmt::print("  min {:.6g}  max {:.6g}  mean {:.6g}  std {:.6g}\n", s.min, s.max, s.mean, sd);
        fmt::print("  count {}  nan {}  inf {}  zero {}\n", s.count, s.nan, s.inf, s.zero);
        std::string h = histogram(f, each, s);
        if (!h.empty()) fmt::print("  {:.3g} |{}| {:.3g}\n", s.min, h, s.max);
      }
      if (a->json)
        fmt::print("{{\"file\":{},\"tensors\":[{}]}}\n", json_string(f.name()), fmt::join(docs, ","));
      return kExitOk;
    });
  });
}

}  // namespace tlio::cli

// cli/inspect_table.cpp: `tlio inspect`'s table of a file or a model directory: a row per
// tensor, or per quantized weight with its stored parts, layers folded into ranges with --group.
#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cli_util.hpp"
#include "inspect_listing.hpp"

namespace tlio::cli {
namespace {

// How a quantized weight is described in the dtype column: the scheme and, for bitsandbytes,
// its block, nesting and the dtype dequantize restores.
std::string quant_label(const tlio::QuantizedWeight& q) {
  switch (q.scheme.kind()) {
    case tlio::SchemeKind::bnb_4bit:
      return fmt::format("{} bs{}{} -> {}", q.scheme.name(), q.scheme.block(),
                         q.scheme.nested() ? " nested" : "", tlio::dtype_name(q.dtype));
    case tlio::SchemeKind::llm_int8:
      return "int8 (LLM.int8)";
    case tlio::SchemeKind::fp8:
    case tlio::SchemeKind::gptq:
    case tlio::SchemeKind::awq:  // the Hub's
    case tlio::SchemeKind::mxfp4:
    case tlio::SchemeKind::nvfp4:
    case tlio::SchemeKind::ct_int:
    case tlio::SchemeKind::mlx:
      return fmt::format("{} -> {}", q.scheme.name(), tlio::dtype_name(q.dtype));
    case tlio::SchemeKind::int4:
      break;
  }
  return q.scheme.name();
}

// The distinct schemes, in order of appearance.
std::string scheme_list(const std::vector<tlio::QuantizedWeight>& quantized) {
  std::vector<std::string> schemes;
  for (const auto& q : quantized)
    if (std::find(schemes.begin(), schemes.end(), q.scheme.name()) == schemes.end())
      schemes.push_back(q.scheme.name());
  return fmt::format("{}", fmt::join(schemes, ", "));
}

std::string ranges(std::vector<uint64_t> v);

// A line of inspect's table: a tensor, or a quantized weight with its stored parts.
struct TableRow {
  std::string name, dtype, shape, bytes, where;
  std::string key;  // the name itself (name is as shown: quoted when it must be)
  std::vector<TableRow> parts;
  std::vector<uint64_t> dims;
  uint64_t byte_count = 0;
};

// Rows that differ only in their numbered path components (layers.0, layers.1, ...), with the
// same dtype and shape, folded into one: model.layers.{0..31}.mlp.up_proj.weight  32x [..].
std::vector<TableRow> grouped(std::vector<TableRow> rows) {
  // A name as pieces: literal text, or a numbered component (kNumber) whose value is kept apart.
  static const std::string kNumber(1, '\0');
  struct Group {
    std::vector<std::string> pieces;
    std::vector<std::vector<uint64_t>> numbers;  // per numbered component
    size_t count = 0;
    uint64_t bytes = 0;
    TableRow first;
  };
  std::vector<Group> groups;
  std::map<std::string, size_t> index;  // pieces + dtype + shape -> group
  for (TableRow& r : rows) {
    std::vector<std::string> pieces;
    std::vector<uint64_t> numbers;
    size_t start = 0;
    while (start <= r.key.size()) {
      const size_t dot = std::min(r.key.find('.', start), r.key.size());
      const std::string_view part(r.key.data() + start, dot - start);
      const bool number =
          !part.empty() && part.size() <= 18 &&
          std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
      if (number) numbers.push_back(std::stoull(std::string(part)));
      pieces.push_back(number ? kNumber : std::string(part));
      start = dot + 1;
    }
    // The key separates pieces with a byte no piece holds next to the number marker ("\0\1").
    std::string key;
    for (const std::string& p : pieces) key += p + '\1';
    key += '\2' + r.dtype + '\2' + r.shape;
    auto [it, fresh] = index.try_emplace(key, groups.size());
    if (fresh)
      groups.push_back({pieces, std::vector<std::vector<uint64_t>>(numbers.size()), 0, 0, r});
    Group& g = groups[it->second];
    for (size_t i = 0; i < numbers.size() && i < g.numbers.size(); ++i)
      g.numbers[i].push_back(numbers[i]);
    ++g.count;
    g.bytes += r.byte_count;
  }
  std::vector<TableRow> out;
  for (Group& g : groups) {
    if (g.count == 1) {
      g.first.parts.clear();
      out.push_back(std::move(g.first));
      continue;
    }
    std::string name;
    size_t k = 0;
    for (size_t i = 0; i < g.pieces.size(); ++i) {
      if (i) name += '.';
      if (g.pieces[i] == kNumber && k < g.numbers.size()) {
        const std::string r = ranges(g.numbers[k++]);
        name += r.find_first_of(".,o") == std::string::npos ? r : "{" + r + "}";
      } else {
        name += g.pieces[i];
      }
    }
    out.push_back({display_name(name),
                   g.first.dtype,
                   fmt::format("{}x {}", g.count, g.first.shape),
                   human_size(g.bytes),
                   "",
                   name,
                   {},
                   {},
                   g.bytes});
  }
  return out;
}

// 6738415616 as "6.74B", for a parameter count.
std::string short_count(uint64_t n) {
  const double v = static_cast<double>(n);
  if (n >= 1'000'000'000) return fmt::format("{:.3g}B", v / 1e9);
  if (n >= 1'000'000) return fmt::format("{:.3g}M", v / 1e6);
  if (n >= 1'000) return fmt::format("{:.3g}K", v / 1e3);
  return std::to_string(n);
}

// "0..31", or "0..3,7,9..10" when there are gaps.
std::string ranges(std::vector<uint64_t> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  std::vector<std::string> pieces;
  for (size_t i = 0; i < v.size();) {
    size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    pieces.push_back(j > i ? fmt::format("{}..{}", v[i], v[j]) : std::to_string(v[i]));
    i = j + 1;
  }
  // Scattered numbers would make the name unreadable: say how many, from where to where.
  if (pieces.size() > 6) return fmt::format("{} of {}..{}", v.size(), v.front(), v.back());
  return fmt::format("{}", fmt::join(pieces, ","));
}

}  // namespace

uint64_t parameter_count(const Listing& l) {
  std::set<std::string_view> stored;
  uint64_t n = 0;
  for (const auto& q : l.quantized) {
    for (const auto& s : q.stored) stored.insert(s);
    uint64_t e = 1;
    for (uint64_t d : q.shape) e *= d;
    n += e;
  }
  for (const auto& t : l.tensors)
    if (!stored.contains(t.info->name)) n += t.info->element_count();
  return n;
}

void print_table(const Listing& l, const InspectOptions& opt) {
  if (l.config) {
    const auto& c = *l.config;
    fmt::print("model:     {} ({}{})\n", l.name, c.arch.empty() ? "no config.json" : c.arch,
               c.arch == "llama" ? fmt::format(", {} layers", c.num_hidden_layers) : "");
    if (c.arch == "llama")
      fmt::print(
          "config:    vocab {}, hidden {}, intermediate {}, heads {} (kv {}), head_dim {}{}\n",
          c.vocab_size, c.hidden_size, c.intermediate_size, c.num_attention_heads,
          c.num_key_value_heads, c.head_dim, c.tie_word_embeddings ? ", tied embeddings" : "");
    else if (!c.arch.empty())
      fmt::print("config:    vocab {}\n", c.vocab_size);
    if (c.course) fmt::print("tokenizer: {}\n", c.tokenizer);
    fmt::print("files:\n");
    for (const auto& [name, size] : l.files) fmt::print("  {} ({})\n", name, human_size(size));
  } else {
    fmt::print("file:      {}\n", l.name);
    fmt::print("size:      {} (header {}, data {})\n", human_size(l.file_size),
               human_size(l.header_size), human_size(l.data_size));
    fmt::print("canonical: {}\n", *l.canonical ? "yes" : "no");
  }
  const tlio::File& f = *l.first;
  if (f.metadata().empty()) {
    fmt::print("metadata:  {}\n", f.header().has_metadata() ? "(empty)" : "(none)");
  } else {
    fmt::print("metadata:\n");
    for (const auto& [k, v] : f.metadata())
      fmt::print("  {}: {}\n", display_name(k), display_name(v));
  }
  // One row per logical tensor: a quantized weight once, with its stored parts under it.
  std::map<std::string, const tlio::QuantizedWeight*> part_of;
  for (const auto& q : l.quantized)
    for (const auto& s : q.stored) part_of[s] = &q;
  using Row = TableRow;
  std::vector<Row> rows;
  const bool dir = l.config != nullptr;
  std::set<const tlio::QuantizedWeight*> shown;
  std::map<std::string_view, uint64_t> counts;
  uint64_t listed = 0;
  for (const auto& e : l.tensors) {
    const auto& t = *e.info;
    ++counts[tlio::dtype_name(t.dtype)];
    auto q = part_of.find(t.name);
    if (q != part_of.end()) {
      if (!shown.insert(q->second).second) continue;
      const tlio::QuantizedWeight& w = *q->second;
      if (opt.filter && !std::regex_search(w.name, *opt.filter)) continue;
      Row row{display_name(w.name),
              quant_label(w),
              shape_text(w.shape),
              human_size(w.stored_bytes),
              "",
              w.name,
              {},
              {w.shape.begin(), w.shape.end()},
              w.stored_bytes};
      for (const auto& s : w.stored)
        for (const auto& e2 : l.tensors)
          if (e2.info->name == s)
            row.parts.push_back({"  " + display_name(s),
                                 std::string(tlio::dtype_name(e2.info->dtype)),
                                 shape_text(e2.info->shape),
                                 human_size(e2.info->byte_size()),
                                 dir ? e2.file : std::to_string(e2.info->begin),
                                 s,
                                 {},
                                 {},
                                 0});
      rows.push_back(std::move(row));
      continue;
    }
    if (opt.filter && !std::regex_search(t.name, *opt.filter)) continue;
    rows.push_back({display_name(t.name),
                    std::string(tlio::dtype_name(t.dtype)),
                    shape_text(t.shape),
                    human_size(t.byte_size()),
                    dir ? e.file : std::to_string(t.begin),
                    t.name,
                    {},
                    {t.shape.begin(), t.shape.end()},
                    t.byte_size()});
  }
  listed = rows.size();
  // Natural order, as people read names: layers.2 before layers.10.
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Row& a, const Row& b) { return tlio::natural_less(a.key, b.key); });
  if (opt.group) {
    rows = grouped(std::move(rows));
    for (Row& r : rows) r.where.clear();  // a folded row has no one offset or file
  }
  std::vector<Row> lines{{"name",
                          "dtype",
                          "shape",
                          "bytes",
                          opt.group ? ""
                          : dir     ? "file"
                                    : "offset",
                          {},
                          {},
                          {},
                          0}};
  for (Row& r : rows) {
    std::vector<Row> parts = std::move(r.parts);
    lines.push_back(std::move(r));
    if (!opt.group)
      for (Row& p : parts) lines.push_back(std::move(p));
  }
  size_t w[4] = {0, 0, 0, 0};
  for (const auto& r : lines) {
    w[0] = std::max(w[0], display_width(r.name));
    w[1] = std::max(w[1], display_width(r.dtype));
    w[2] = std::max(w[2], r.shape.size());
    w[3] = std::max(w[3], r.bytes.size());
  }
  fmt::print("tensors:\n");
  for (const auto& r : lines)
    fmt::print("  {}  {}  {}  {}{}\n", pad(r.name, w[0]), pad(r.dtype, w[1]), pad(r.shape, w[2]),
               pad(r.bytes, w[3], true), r.where.empty() ? "" : "  " + r.where);
  std::vector<std::string> parts;
  for (const auto& [d, n] : counts) parts.push_back(fmt::format("{} {}", n, d));
  fmt::print("total:     {} tensor{}, {}{}{}", l.tensors.size(), l.tensors.size() == 1 ? "" : "s",
             human_size(l.data_size), parts.empty() ? "" : "; ", fmt::join(parts, ", "));
  if (!l.quantized.empty())
    fmt::print("; {} quantized weight{} ({})", l.quantized.size(),
               l.quantized.size() == 1 ? "" : "s", scheme_list(l.quantized));
  fmt::print("\n");
  const uint64_t parameters = parameter_count(l);
  fmt::print("params:    {} ({})\n", short_count(parameters), thousands(parameters));
  if (opt.filter)
    fmt::print("shown:     {} {} matching {}\n", listed, listed == 1 ? "tensor" : "tensors",
               opt.filter_text);
}

}  // namespace tlio::cli

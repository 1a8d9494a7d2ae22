// model/rewrite_counts.cpp: reports as small JSON documents and back (model/rewrite_counts.hpp).
#include "model/rewrite_counts.hpp"

#include <fmt/core.h>
#include <simdjson.h>

#include <bit>

#include "common/json_text.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {
namespace {

namespace dom = simdjson::dom;

std::string json_string(std::string_view s) {
  std::string out;
  append_json_string(out, s);
  return out;
}

// Reads what counts_text wrote; any other shape is a damaged job file.
class CountsReader {
 public:
  CountsReader(std::string_view text, const std::string& source) : source_(source) {
    if (parser_.parse(text.data(), text.size()).get(root_) != simdjson::SUCCESS) fail();
  }
  uint64_t uint(dom::element e, const char* key) const {
    uint64_t v = 0;
    if (e[key].get_uint64().get(v) != simdjson::SUCCESS) fail();
    return v;
  }
  double real(dom::element e, const char* key) const {  // stored as its bits
    return std::bit_cast<double>(uint(e, key));
  }
  std::string string(dom::element e, const char* key) const {
    std::string_view v;
    if (e[key].get_string().get(v) != simdjson::SUCCESS) fail();
    return std::string(v);
  }
  bool boolean(dom::element e, const char* key) const {
    bool v = false;
    if (e[key].get_bool().get(v) != simdjson::SUCCESS) fail();
    return v;
  }
  dom::array array(dom::element e, const char* key) const {
    dom::array a;
    if (e[key].get_array().get(a) != simdjson::SUCCESS) fail();
    return a;
  }
  dom::element root() const { return root_; }
  [[noreturn]] void fail() const { throw_io("a job's counts file is damaged", source_); }

 private:
  std::string source_;
  dom::parser parser_;
  dom::element root_;
};

uint64_t bits(double d) { return std::bit_cast<uint64_t>(d); }

}  // namespace

std::string counts_text(const ConvertFileReport& r) {
  std::string lost;
  for (const LostValues& l : r.lost)
    lost += fmt::format("{}{{\"tensor\":{},\"overflowed\":{},\"flushed\":{}}}",
                        lost.empty() ? "" : ",", json_string(l.tensor), l.overflowed, l.flushed);
  return fmt::format(
      "{{\"converted\":{},\"dequantized\":{},\"kept\":{},\"dropped\":{},\"renamed\":{},"
      "\"ties_removed\":{},\"ties_repointed\":{},\"data_bytes_in\":{},\"data_bytes_out\":{},"
      "\"lost\":[{}]}}",
      r.converted, r.dequantized, r.kept, r.dropped, r.renamed, r.ties_removed, r.ties_repointed,
      r.data_bytes_in, r.data_bytes_out, lost);
}

ConvertFileReport convert_counts(std::string_view text, const std::string& source) {
  const CountsReader in(text, source);
  const dom::element e = in.root();
  ConvertFileReport r;
  r.converted = in.uint(e, "converted");
  r.dequantized = in.uint(e, "dequantized");
  r.kept = in.uint(e, "kept");
  r.dropped = in.uint(e, "dropped");
  r.renamed = in.uint(e, "renamed");
  r.ties_removed = in.uint(e, "ties_removed");
  r.ties_repointed = in.uint(e, "ties_repointed");
  r.data_bytes_in = in.uint(e, "data_bytes_in");
  r.data_bytes_out = in.uint(e, "data_bytes_out");
  for (dom::element l : in.array(e, "lost"))
    r.lost.push_back({in.string(l, "tensor"), in.uint(l, "overflowed"), in.uint(l, "flushed")});
  return r;
}

std::string counts_text(const QuantizeReport& r) {
  std::string items, kept;
  for (const QuantizeReport::Item& i : r.items)
    items += fmt::format(
        "{}{{\"name\":{},\"quantized\":{},\"note\":{},\"rmse\":{},\"max_abs_error\":{},"
        "\"bytes_before\":{},\"bytes_after\":{}}}",
        items.empty() ? "" : ",", json_string(i.name), i.quantized, json_string(i.note),
        bits(i.rmse), bits(i.max_abs_error), i.bytes_before, i.bytes_after);
  for (const QuantizeReport::Kept& k : r.kept) {
    std::string names;
    for (const std::string& n : k.names) names += (names.empty() ? "" : ",") + json_string(n);
    kept += fmt::format("{}{{\"reason\":{},\"names\":[{}]}}", kept.empty() ? "" : ",",
                        json_string(k.reason), names);
  }
  return fmt::format(
      "{{\"items\":[{}],\"kept\":[{}],\"data_bytes_before\":{},\"data_bytes_after\":{}}}", items,
      kept, r.data_bytes_before, r.data_bytes_after);
}

QuantizeReport quantize_counts(std::string_view text, const std::string& source) {
  const CountsReader in(text, source);
  const dom::element e = in.root();
  QuantizeReport r;
  for (dom::element i : in.array(e, "items"))
    r.items.push_back({in.string(i, "name"), in.boolean(i, "quantized"), in.string(i, "note"),
                       in.real(i, "rmse"), in.real(i, "max_abs_error"), in.uint(i, "bytes_before"),
                       in.uint(i, "bytes_after")});
  for (dom::element k : in.array(e, "kept")) {
    QuantizeReport::Kept kept{in.string(k, "reason"), {}};
    for (dom::element n : in.array(k, "names")) {
      std::string_view v;
      if (n.get_string().get(v) != simdjson::SUCCESS) in.fail();
      kept.names.emplace_back(v);
    }
    r.kept.push_back(std::move(kept));
  }
  r.data_bytes_before = in.uint(e, "data_bytes_before");
  r.data_bytes_after = in.uint(e, "data_bytes_after");
  return r;
}

std::string counts_text(const DequantizeReport& r) {
  return fmt::format("{{\"restored\":{},\"scheme\":{}}}", r.restored, json_string(r.scheme));
}

DequantizeReport dequantize_counts(std::string_view text, const std::string& source) {
  const CountsReader in(text, source);
  return {in.uint(in.root(), "restored"), in.string(in.root(), "scheme")};
}

}  // namespace tlio::detail

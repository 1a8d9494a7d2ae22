// quant/bnb/bnb_quant_state.cpp: the quant_state JSON of a 4-bit weight, parsed strictly and
// written as Python's json.dumps writes it (with Python's float repr).
#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>

#include "common/checked.hpp"
#include "common/json_doc.hpp"
#include "common/json_text.hpp"
#include "quant/bnb/bnb.hpp"
#include "quant/bnb/bnb_common.hpp"
#include "quant/bnb/bnb_detail.hpp"

namespace tlio {

// The shared helpers of quant/bnb/bnb_common.hpp.
using namespace detail;

namespace {

// A quant_state shape is a torch.Size: torch allows at most 64 dimensions.
constexpr size_t kMaxQuantStateRank = 64;

// The dtypes bitsandbytes quantizes from, by the torch names its quant_state records.
std::optional<Dtype> dtype_of_torch_name(std::string_view name) {
  for (Dtype d : {Dtype::F16, Dtype::BF16, Dtype::F32})
    if (torch_dtype_name(d) == name) return d;
  return std::nullopt;
}

}  // namespace

BnbQuantState detail::parse_bnb_quant_state(std::string_view json) {
  namespace dom = simdjson::dom;
  const detail::JsonDoc doc(json, {}, Rule::bnb);
  static constexpr std::string_view kKeys[] = {"quant_type",   "blocksize",        "dtype",
                                               "shape",        "nested_blocksize", "nested_dtype",
                                               "nested_offset"};
  for (auto field : dom::object(doc.root()))
    if (std::find(std::begin(kKeys), std::end(kKeys), field.key) == std::end(kKeys))
      doc.fail(std::string(field.key),
               fmt::format("unknown quant_state key {}", detail::quote_name(field.key)));
  auto required_string = [&](const char* key) {
    auto s = doc.optional_string(key);
    if (!s) doc.fail(key, fmt::format("quant_state has no {}", key));
    return *s;
  };
  BnbQuantState st;
  const std::string type = required_string("quant_type");
  const auto parsed_type = parse_bnb_quant_type(type);
  if (!parsed_type)
    throw Error(ErrorCode::format, Rule::bnb_001, {}, std::nullopt,
                fmt::format("quant_type {} is not nf4 or fp4", detail::quote_name(type)));
  st.quant_type = *parsed_type;
  st.blocksize = doc.required_uint("blocksize");
  if (!is_bnb_4bit_blocksize(st.blocksize))
    throw Error(ErrorCode::format, Rule::bnb_001, {}, std::nullopt,
                fmt::format("blocksize {} is not one of 32, 64, ..., 4096", st.blocksize));
  const std::string dtype = required_string("dtype");
  const auto d = dtype_of_torch_name(dtype);
  if (!d)
    doc.fail("dtype", fmt::format("dtype {} is not float16, bfloat16 or float32",
                                  detail::quote_name(dtype)));
  st.dtype = *d;
  dom::array shape;
  if (doc.root()["shape"].get_array().get(shape) != simdjson::SUCCESS)
    doc.fail("shape", "quant_state has no shape list");
  std::vector<uint64_t> dims;
  for (dom::element e : shape) {
    uint64_t v;
    if (e.get_uint64().get(v) != simdjson::SUCCESS) doc.fail("shape", "shape holds a non-integer");
    dims.push_back(v);
  }
  if (dims.size() > kMaxQuantStateRank)
    doc.fail("shape",
             fmt::format("shape has {} dimensions (at most {})", dims.size(), kMaxQuantStateRank));
  if (!detail::checked_product(dims)) doc.fail("shape", "shape's element count overflows");
  st.shape = Shape(dims);

  const bool any_nested = doc.root()["nested_blocksize"].error() == simdjson::SUCCESS ||
                          doc.root()["nested_dtype"].error() == simdjson::SUCCESS ||
                          doc.root()["nested_offset"].error() == simdjson::SUCCESS;
  if (any_nested) {
    auto nested_fail = [](const char* key, std::string detail) {
      throw Error(ErrorCode::format, Rule::bnb_004, key, std::nullopt, std::move(detail));
    };
    st.nested = true;
    const auto nbs = doc.optional_uint("nested_blocksize");
    const auto ndt = doc.optional_string("nested_dtype");
    dom::element off;
    if (!nbs || *nbs == 0)
      nested_fail("nested_blocksize", "nested state without a positive nested_blocksize");
    if (!ndt) nested_fail("nested_dtype", "nested state without nested_dtype");
    if (doc.root()["nested_offset"].get(off) != simdjson::SUCCESS)
      nested_fail("nested_offset", "nested state without nested_offset");
    st.nested_blocksize = *nbs;
    const auto nd = dtype_of_torch_name(*ndt);
    if (!nd)
      doc.fail("nested_dtype",
               fmt::format("nested_dtype {} is not a float dtype", detail::quote_name(*ndt)));
    st.nested_dtype = *nd;
    double v;
    if (off.get_double().get(v) != simdjson::SUCCESS)  // integers convert too
      doc.fail("nested_offset", "nested_offset is not a number");
    st.nested_offset = v;
  }
  return st;
}

std::string detail::python_float_repr(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "Infinity" : "-Infinity";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::scientific);
  std::string_view sci(buf, static_cast<size_t>(res.ptr - buf));  // e.g. -5.738766863942146e-02
  std::string out;
  if (sci.front() == '-') {
    out += '-';
    sci.remove_prefix(1);
  }
  const size_t e_pos = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, e_pos))
    if (c != '.') digits += c;
  int exp10 = 0;
  std::string_view e_text = sci.substr(e_pos + 1);
  if (e_text.front() == '+') e_text.remove_prefix(1);
  std::from_chars(e_text.data(), e_text.data() + e_text.size(), exp10);
  if (exp10 < -4 || exp10 >= 16) {
    out += digits[0];
    if (digits.size() > 1) out += "." + digits.substr(1);
    out += fmt::format("e{}{:02d}", exp10 < 0 ? '-' : '+', std::abs(exp10));
    return out;
  }
  const int point = exp10 + 1;  // digits before the decimal point
  if (point <= 0) return out + "0." + std::string(static_cast<size_t>(-point), '0') + digits;
  if (static_cast<size_t>(point) >= digits.size())
    return out + digits + std::string(static_cast<size_t>(point) - digits.size(), '0') + ".0";
  return out + digits.substr(0, static_cast<size_t>(point)) + "." +
         digits.substr(static_cast<size_t>(point));
}

std::string detail::bnb_quant_state_json(const BnbQuantState& st) {
  std::string out =
      fmt::format("{{\"quant_type\": \"{}\", \"blocksize\": {}, \"dtype\": \"{}\", \"shape\": [{}]",
                  bnb_quant_type_name(st.quant_type), st.blocksize, torch_dtype_name(st.dtype),
                  fmt::join(st.shape, ", "));
  if (st.nested)
    out +=
        fmt::format(", \"nested_blocksize\": {}, \"nested_dtype\": \"{}\", \"nested_offset\": {}",
                    st.nested_blocksize, torch_dtype_name(st.nested_dtype),
                    detail::python_float_repr(st.nested_offset));
  return out + "}";
}

}  // namespace tlio

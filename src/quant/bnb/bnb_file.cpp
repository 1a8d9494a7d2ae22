// quant/bnb/bnb_file.cpp: see bnb_file.hpp.
#include "quant/bnb/bnb_file.hpp"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "common/checked.hpp"
#include "common/json_text.hpp"
#include "quant/bnb/bnb.hpp"
#include "tlio/convert_file.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {

namespace {

[[noreturn]] void bnb_error(Rule rule, const std::string& tensor, std::string detail) {
  throw_format(rule, tensor, std::move(detail));
}

std::string describe(const TensorInfo& t) {
  return fmt::format("{} is {} [{}]", quote_name(t.name), dtype_name(t.dtype),
                     fmt::join(t.shape, ", "));
}

const TensorInfo& companion(const TensorSet& f, const std::string& name, Rule rule,
                            const std::string& owner) {
  const TensorInfo* t = f.find(name);
  if (!t) bnb_error(rule, owner, fmt::format("{} has no {}", quote_name(owner), quote_name(name)));
  return *t;
}

uint64_t blocks_of(uint64_t n, uint64_t blocksize) { return n / blocksize + (n % blocksize != 0); }

// The dtypes bitsandbytes allows as quant_storage for the packed bytes.
// A non-nested absmax left by inference on some CPUs: [cols / blocksize, rows], transposed.
bool is_transposed_absmax(const TensorInfo& a, const Shape& shape, uint64_t blocksize) {
  if (a.shape.size() != 2 || shape.size() < 2) return false;
  const uint64_t rows = *checked_product(shape) / std::max<uint64_t>(shape[shape.size() - 1], 1);
  const uint64_t cols = shape[shape.size() - 1];
  return cols % blocksize == 0 && a.shape[0] == cols / blocksize && a.shape[1] == rows;
}

QuantizedWeight check_4bit(const TensorSet& f, const TensorInfo& state_tensor) {
  const std::string& sname = state_tensor.name;
  const size_t at = sname.find(kBnbStateInfix);
  const std::string base = sname.substr(0, at);
  const std::string type_name = sname.substr(at + kBnbStateInfix.size());
  const auto type = parse_bnb_quant_type(type_name);
  if (!type)
    bnb_error(Rule::bnb_001, sname,
              fmt::format("{}: quant_type {} is not nf4 or fp4", quote_name(sname),
                          quote_name(type_name)));
  if (state_tensor.dtype != Dtype::U8 || state_tensor.shape.size() != 1)
    bnb_error(Rule::bnb, sname, describe(state_tensor) + "; a quant_state is U8 [bytes of JSON]");
  const TensorView sv = f.view(sname);
  BnbQuantState st;
  try {
    st = parse_bnb_quant_state(
        {reinterpret_cast<const char*>(sv.bytes().data()), sv.bytes().size()});
  } catch (const Error& e) {
    throw e.with_tensor(sname, quote_name(sname));
  }
  if (st.quant_type != *type)
    bnb_error(Rule::bnb, sname,
              fmt::format("{} holds quant_type {}", quote_name(sname),
                          bnb_quant_type_name(st.quant_type)));
  const uint64_t n = *checked_product(st.shape);
  const uint64_t blocks = blocks_of(n, st.blocksize);

  const TensorInfo& packed = companion(f, base, Rule::bnb, sname);
  if (!is_bnb_storage_dtype(packed.dtype))
    bnb_error(Rule::bnb, base,
              describe(packed) +
                  "; packed 4-bit codes are stored as U8 (or the "
                  "quant_storage dtype F16, BF16, F32, F64, I8)");
  if (packed.byte_size() != n / 2 + n % 2)
    bnb_error(Rule::bnb_002, base,
              fmt::format("{} holds {} bytes; the {} values of shape [{}] pack two "
                          "to a byte into {}",
                          quote_name(base), packed.byte_size(), n, fmt::join(st.shape, ", "),
                          n / 2 + n % 2));

  const TensorInfo& qmap = companion(f, base + ".quant_map", Rule::bnb, base);
  if (qmap.dtype != Dtype::F32 || qmap.element_count() != 16)
    bnb_error(Rule::bnb_003, qmap.name, describe(qmap) + "; quant_map is F32 [16]");
  const std::vector<float> stored_map = f.f32(qmap.name);
  const auto& table = bnb_4bit_table(st.quant_type);
  for (size_t i = 0; i < 16; ++i)
    if (!(stored_map[i] == table[i]))  // == ignores the sign of zero, as it should
      bnb_error(Rule::bnb_003, qmap.name,
                fmt::format("{} entry {} is {}, the {} table has {}", quote_name(qmap.name), i,
                            stored_map[i], bnb_quant_type_name(st.quant_type), table[i]));

  const TensorInfo& absmax = companion(f, base + ".absmax", Rule::bnb, base);
  const TensorInfo* nested_absmax = f.find(base + ".nested_absmax");
  const TensorInfo* nested_map = f.find(base + ".nested_quant_map");
  QuantizedWeight w;
  w.name = base;
  w.scheme = QuantScheme(Bnb4bitOptions{st.quant_type, st.blocksize, st.nested, packed.dtype});
  w.shape = st.shape;
  w.dtype = st.dtype;
  w.stored = {base, absmax.name, qmap.name};
  if (st.nested) {
    if (!nested_absmax || !nested_map)
      bnb_error(
          Rule::bnb_004, base,
          fmt::format("{} has a nested quant_state but no {}", quote_name(base),
                      quote_name(base + (nested_absmax ? ".nested_quant_map" : ".nested_absmax"))));
    if (absmax.dtype != Dtype::U8 || absmax.element_count() != blocks || absmax.shape.size() != 1)
      bnb_error(Rule::bnb_004, absmax.name,
                fmt::format("{}; a nested absmax is U8 [{}] (one code per "
                            "block of {})",
                            describe(absmax), blocks, st.blocksize));
    const uint64_t nested_blocks = blocks_of(blocks, st.nested_blocksize);
    if (nested_absmax->dtype != Dtype::F32 || nested_absmax->element_count() != nested_blocks)
      bnb_error(Rule::bnb_004, nested_absmax->name,
                fmt::format("{}; it needs F32 [{}] ({} blocks in nested blocks of {})",
                            describe(*nested_absmax), nested_blocks, blocks, st.nested_blocksize));
    if (nested_map->dtype != Dtype::F32 || nested_map->element_count() != 256)
      bnb_error(Rule::bnb_004, nested_map->name,
                describe(*nested_map) + "; nested_quant_map is F32 [256]");
    w.stored.push_back(nested_absmax->name);
    w.stored.push_back(nested_map->name);
  } else {
    if (nested_absmax || nested_map)
      bnb_error(
          Rule::bnb_004, (nested_absmax ? nested_absmax : nested_map)->name,
          fmt::format("{} has nested tensors but its quant_state is not nested", quote_name(base)));
    const bool shape_ok =
        absmax.shape.size() == 1 || is_transposed_absmax(absmax, st.shape, st.blocksize);
    if ((absmax.dtype != Dtype::F32 && absmax.dtype != Dtype::BF16) ||
        absmax.element_count() != blocks || !shape_ok)
      bnb_error(Rule::bnb, absmax.name,
                fmt::format("{}; it needs F32 [{}] (one per block of {})", describe(absmax), blocks,
                            st.blocksize));
  }
  w.stored.push_back(sname);
  for (const std::string& s : w.stored) w.stored_bytes += f.at(s).byte_size();
  return w;
}

QuantizedWeight check_int8(const TensorSet& f, const TensorInfo& scb) {
  const std::string prefix = scb.name.substr(0, scb.name.size() - 4);  // without ".SCB"
  const std::string weight = prefix + ".weight";
  const TensorInfo& cb = companion(f, weight, Rule::bnb, scb.name);
  if (cb.dtype != Dtype::I8 || cb.shape.size() != 2)
    bnb_error(Rule::bnb, weight, describe(cb) + "; an LLM.int8 weight is I8 [out, in]");
  if (scb.dtype != Dtype::F32 || scb.shape.size() != 1 || scb.shape[0] != cb.shape[0])
    bnb_error(Rule::bnb, scb.name,
              fmt::format("{}; it needs F32 [{}] (one scale per row of {})", describe(scb),
                          cb.shape[0], quote_name(weight)));
  QuantizedWeight w;
  w.name = weight;
  w.scheme = QuantScheme(LlmInt8Options{});
  w.shape = cb.shape;
  w.stored = {weight, scb.name};
  if (const TensorInfo* format = f.find(prefix + ".weight_format")) {
    if (format->dtype != Dtype::U8 || format->element_count() != 1)
      bnb_error(Rule::bnb, format->name, describe(*format) + "; weight_format is a U8 scalar");
    const uint8_t value = static_cast<uint8_t>(f.view(format->name).bytes()[0]);
    if (value != 0)  // 1..3 were the col32/turing/ampere tile layouts of old GPUs
      bnb_error(Rule::bnb, format->name,
                fmt::format("{} is {}; only the row layout (0) is defined",
                            quote_name(format->name), value));
    w.stored.push_back(format->name);
  }
  for (const std::string& s : w.stored) w.stored_bytes += f.at(s).byte_size();
  return w;
}

}  // namespace

std::vector<QuantizedWeight> find_bnb_4bit_weights(const TensorSet& f) {
  std::vector<QuantizedWeight> found;
  std::map<std::string, std::string, std::less<>> state_of_base;
  for (const TensorInfo* tp : f.tensors()) {
    const TensorInfo& t = *tp;
    const size_t at = t.name.find(".quant_state.");
    if (at == std::string::npos) continue;
    if (t.name.find(kBnbStateInfix) != at)
      bnb_error(Rule::bnb, t.name,
                fmt::format("{} is not a bitsandbytes quant_state "
                            "(<weight>.quant_state.bitsandbytes__nf4 or __fp4)",
                            quote_name(t.name)));
    auto [it, fresh] = state_of_base.emplace(t.name.substr(0, at), t.name);
    if (!fresh)
      bnb_error(Rule::bnb, t.name,
                fmt::format("{} and {} both describe {}", quote_name(it->second),
                            quote_name(t.name), quote_name(it->first)));
    found.push_back(check_4bit(f, t));
  }
  for (const TensorInfo* tp : f.tensors())
    for (std::string_view suffix : {".quant_map", ".nested_absmax", ".nested_quant_map"})
      if (tp->name.ends_with(suffix)) {
        const std::string base = tp->name.substr(0, tp->name.size() - suffix.size());
        if (!state_of_base.count(base))
          bnb_error(
              Rule::bnb, tp->name,
              fmt::format("{} has no {}nf4 or {}fp4", quote_name(tp->name),
                          base + std::string(kBnbStateInfix), base + std::string(kBnbStateInfix)));
      }
  return found;
}

std::vector<QuantizedWeight> find_llm_int8_weights(const TensorSet& f) {
  std::vector<QuantizedWeight> found;
  for (const TensorInfo* tp : f.tensors())
    if (tp->name.ends_with(".SCB")) found.push_back(check_int8(f, *tp));
  for (const TensorInfo* tp : f.tensors()) {
    const std::string& name = tp->name;
    if (name.ends_with(".weight_format") && !f.find(name.substr(0, name.size() - 14) + ".SCB"))
      bnb_error(Rule::bnb, name,
                fmt::format("{} has no {}", quote_name(name),
                            quote_name(name.substr(0, name.size() - 14) + ".SCB")));
  }
  return found;
}

BnbQuantState bnb_state_of(const TensorSet& f, const QuantizedWeight& w) {
  const TensorView sv = f.view(w.stored.back());
  return parse_bnb_quant_state(
      {reinterpret_cast<const char*>(sv.bytes().data()), sv.bytes().size()});
}

std::vector<float> bnb_effective_absmax(const TensorSet& f, const QuantizedWeight& w,
                                        const BnbQuantState& st) {
  const std::string absmax_name = w.name + ".absmax";
  if (st.nested) {
    const TensorView codes = f.view(absmax_name);
    return bnb_unnest_absmax(
        {reinterpret_cast<const uint8_t*>(codes.bytes().data()), codes.bytes().size()},
        f.f32(w.name + ".nested_absmax"), f.f32(w.name + ".nested_quant_map"), st.nested_blocksize,
        static_cast<float>(st.nested_offset));
  }
  std::vector<float> absmax = f.f32(absmax_name);
  const TensorInfo& a = f.at(absmax_name);
  if (a.shape.size() == 2 && is_transposed_absmax(a, st.shape, st.blocksize)) {
    const uint64_t per_row = a.shape[0], rows = a.shape[1];
    std::vector<float> restored(absmax.size());
    for (uint64_t r = 0; r < rows; ++r)
      for (uint64_t j = 0; j < per_row; ++j) restored[r * per_row + j] = absmax[j * rows + r];
    absmax = std::move(restored);
  }
  return absmax;
}

}  // namespace tlio::detail

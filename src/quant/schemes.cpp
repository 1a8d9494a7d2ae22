// quant/schemes.cpp: the scheme registry, QuantScheme, and what the encoders share.
#include "quant/schemes.hpp"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstring>

#include "common/json_text.hpp"
#include "quant/hub/hub_config.hpp"
#include "quant/tensor_selection.hpp"
#include "tlio/convert.hpp"
#include "tlio/error.hpp"

namespace tlio {
namespace detail {

// Every SchemeKind has its entry, the last one included.
constexpr size_t kSchemeCount = static_cast<size_t>(SchemeKind::mlx) + 1;

std::span<const SchemeEntry> scheme_entries() noexcept {
  static const std::array<SchemeEntry, kSchemeCount> entries = {
      // SchemeKind's order
      int4_scheme_entry(),   bnb_4bit_scheme_entry(), llm_int8_scheme_entry(), fp8_scheme_entry(),
      gptq_scheme_entry(),   awq_scheme_entry(),      mxfp4_scheme_entry(),    nvfp4_scheme_entry(),
      ct_int_scheme_entry(), mlx_scheme_entry()};
  return entries;
}

bool WeightEncoder::selected_by_default(const TensorInfo& t) const { return is_linear_weight(t); }

SchemeEntry read_only_entry(SchemeKind kind, std::string_view syntax, std::string_view example,
                            std::string_view layout, decltype(SchemeEntry::name) name,
                            decltype(SchemeEntry::validate) validate,
                            decltype(SchemeEntry::detect) detect,
                            decltype(SchemeEntry::decoder) decoder,
                            decltype(SchemeEntry::parts) parts) {
  return {{kind, syntax, example, layout, {}, true},
          [](std::string_view) -> std::optional<QuantScheme::Options> { return std::nullopt; },
          name,
          validate,
          [](QuantScheme::Options&, std::string_view, std::string_view) {},
          detect,
          decoder,
          parts,
          [](const QuantScheme::Options&) -> std::unique_ptr<WeightEncoder> { return nullptr; }};
}

uint64_t parse_uint_option(std::string_view option, std::string_view value) {
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || end != value.data() + value.size() || value.empty())
    throw_invalid(fmt::format("{} must be an unsigned integer, not {}", option, quote_name(value)));
  return v;
}

bool parse_bool_option(std::string_view option, std::string_view value) {
  if (value == "true" || value == "1") return true;
  if (value == "false" || value == "0") return false;
  throw_invalid(fmt::format("{} must be true or false, not {}", option, quote_name(value)));
}

// Input elements per chunk when quantizing (a multiple of every bnb blocksize, so chunks hold
// whole blocks).
constexpr uint64_t kChunkElements = uint64_t{4} << 20;

void for_each_f32_chunk(const File& src, const TensorInfo& t, uint64_t align,
                        std::vector<float>& buf,
                        const std::function<void(uint64_t, std::span<const float>)>& fn) {
  const uint64_t n = t.element_count(), bits = dtype_bits(t.dtype);
  const uint64_t per = std::max<uint64_t>(align, kChunkElements / align * align);
  const TensorView view = src.view(t.name);
  const std::byte* data = view.bytes().data();
  const bool in_place =
      t.dtype == Dtype::F32 && reinterpret_cast<uintptr_t>(data) % alignof(float) == 0;
  for (uint64_t i = 0; i < n; i += per) {
    const uint64_t m = std::min(per, n - i);
    if (in_place) {
      fn(i, std::span<const float>(reinterpret_cast<const float*>(data) + i, m));
      continue;
    }
    buf.resize(std::max<size_t>(buf.size(), m));
    convert(t.dtype, view.bytes().subspan(i * bits / 8, m * bits / 8), Dtype::F32,
            std::as_writable_bytes(std::span(buf).first(m)), m);
    fn(i, std::span<const float>(buf).first(m));
  }
}

// This runs over every weight, so it is written with vector types (four float lanes on the
// SSE2 baseline): differences and squares in float, summed in float over runs of 1024 values and
// the run sums in double (relative error ~1e-7, plenty for a report).
void ErrorStats::add(std::span<const float> input, std::span<const float> restored) {
  using F4 = float __attribute__((vector_size(16)));
  constexpr size_t kRun = 1024;
  const size_t n = input.size();
  F4 largest{};
  size_t i = 0;
  while (i + 16 <= n) {
    F4 run[4] = {};
    for (const size_t end = std::min(n - n % 16, i + kRun); i < end; i += 16)
      for (size_t k = 0; k < 4; ++k) {
        F4 a, b;
        std::memcpy(&a, input.data() + i + 4 * k, sizeof a);
        std::memcpy(&b, restored.data() + i + 4 * k, sizeof b);
        const F4 d = b - a;
        const F4 mag = d < 0 ? -d : d;
        run[k] += d * d;
        largest = mag > largest ? mag : largest;
      }
    for (const F4& r : run) squares += static_cast<double>(r[0]) + r[1] + r[2] + r[3];
  }
  for (int l = 0; l < 4; ++l) max_abs = std::max(max_abs, largest[l]);
  for (; i < n; ++i) {
    const float d = restored[i] - input[i];
    squares += static_cast<double>(d) * d;
    max_abs = std::max(max_abs, std::fabs(d));
  }
}

void ErrorStats::finish(QuantizeReport::Item& item, uint64_t n) const {
  item.rmse = n ? std::sqrt(squares / static_cast<double>(n)) : 0;
  item.max_abs_error = max_abs;
}

}  // namespace detail

std::span<const SchemeInfo> quant_schemes() noexcept {
  static const std::array<SchemeInfo, detail::kSchemeCount> infos = [] {
    std::array<SchemeInfo, detail::kSchemeCount> out{};
    for (size_t i = 0; i < out.size(); ++i) out[i] = detail::scheme_entries()[i].info;
    return out;
  }();
  return infos;
}

QuantScheme::QuantScheme(Options options) : options_(options) {
  detail::scheme_entry(kind()).validate(options_);
}

std::optional<QuantScheme> QuantScheme::try_parse(std::string_view name) noexcept {
  for (const detail::SchemeEntry& e : detail::scheme_entries())
    if (auto options = e.parse(name)) {
      QuantScheme s;
      s.options_ = *options;
      return s;
    }
  return std::nullopt;
}

QuantScheme QuantScheme::parse(std::string_view name) {
  if (auto s = try_parse(name)) return *s;
  std::vector<std::string_view> syntaxes;
  for (const SchemeInfo& i : quant_schemes())
    if (!i.read_only) syntaxes.push_back(i.syntax);
  // The forms tlio reads but does not write are named as such, not as unknown.
  std::string_view read_only;
  for (const SchemeInfo& i : quant_schemes())
    if (i.read_only && name.starts_with(i.example.substr(0, i.example.find('-'))))
      read_only = i.syntax;
  for (std::string_view fp8 : {"fp8-tensor", "fp8-group", "mxfp8"})
    if (name.starts_with(fp8)) read_only = "fp8-tensor, fp8-group<C>, mxfp8";
  if (!read_only.empty())
    throw Error(ErrorCode::unsupported, Rule::none, {}, std::nullopt,
                fmt::format("tlio reads {} weights ({}) but does not write them; it writes {}",
                            detail::quote_name(name), read_only, fmt::join(syntaxes, ", ")));
  throw Error(ErrorCode::unsupported, Rule::none, {}, std::nullopt,
              fmt::format("unknown quantization scheme {} ({})", detail::quote_name(name),
                          fmt::join(syntaxes, ", ")));
}

std::string QuantScheme::name() const { return detail::scheme_entry(kind()).name(options_); }

uint64_t QuantScheme::block() const noexcept {
  if (const auto* o = std::get_if<Int4Options>(&options_)) return o->group;
  if (const auto* o = std::get_if<Bnb4bitOptions>(&options_)) return o->blocksize;
  if (const auto* o = std::get_if<GptqOptions>(&options_)) return o->group;
  if (const auto* o = std::get_if<AwqOptions>(&options_)) return o->group;
  if (const auto* o = std::get_if<Fp8Options>(&options_))
    return o->e8m0 ? o->block_cols : o->block_rows;
  if (const auto* o = std::get_if<CtIntOptions>(&options_)) return o->group;
  if (std::holds_alternative<Mxfp4Options>(options_)) return 32;
  if (std::holds_alternative<Nvfp4Options>(options_)) return 16;
  if (const auto* o = std::get_if<MlxOptions>(&options_)) return o->group;
  return 0;
}

bool QuantScheme::nested() const noexcept {
  const auto* o = std::get_if<Bnb4bitOptions>(&options_);
  return o && o->nested;
}

void QuantScheme::set_option(std::string_view option, std::string_view value) {
  const detail::SchemeEntry& entry = detail::scheme_entry(kind());
  const auto has = [&](const SchemeInfo& info) {
    return std::any_of(info.options.begin(), info.options.end(),
                       [&](const SchemeOptionInfo& o) { return o.name == option; });
  };
  if (!has(entry.info)) {
    std::vector<std::string_view> owners;
    for (const SchemeInfo& i : quant_schemes())
      if (has(i)) owners.push_back(i.syntax);
    if (owners.empty())
      throw_invalid(fmt::format("{} is not an option of any quantization scheme",
                                detail::quote_name(option)));
    throw_invalid(fmt::format("{} is an option of {}, not of {}", option,
                              fmt::join(owners, " and "), name()));
  }
  Options changed = options_;
  entry.set_option(changed, option, value);
  entry.validate(changed);
  options_ = changed;
}

bool operator==(const QuantScheme& a, const QuantScheme& b) noexcept {
  return a.options_ == b.options_;
}

}  // namespace tlio

namespace tlio {

std::set<std::string, std::less<>> detail::stored_tensor_names(
    const std::vector<QuantizedWeight>& weights) {
  std::set<std::string, std::less<>> names;
  for (const QuantizedWeight& w : weights) names.insert(w.stored.begin(), w.stored.end());
  return names;
}

std::vector<QuantizedWeight> detail::find_quantized_weights(const TensorSet& set) {
  refuse_undecoded_formats(set, hub_quant_config(set));
  std::vector<QuantizedWeight> all;
  for (const SchemeEntry& e : scheme_entries())
    for (QuantizedWeight& w : e.detect(set)) all.push_back(std::move(w));
  std::stable_sort(all.begin(), all.end(), [&](const auto& a, const auto& b) {
    return set.position(a.stored[0]) < set.position(b.stored[0]);
  });
  // Two layouts of one weight (a weight_scale and a weight_scale_inv, say): neither is taken.
  std::vector<const QuantizedWeight*> by_name;
  for (const QuantizedWeight& w : all) by_name.push_back(&w);
  std::sort(by_name.begin(), by_name.end(), [](auto* a, auto* b) { return a->name < b->name; });
  for (size_t i = 1; i < by_name.size(); ++i)
    if (by_name[i]->name == by_name[i - 1]->name)
      throw_format(Rule::quant, by_name[i]->name,
                   fmt::format("{} is stored twice, as {} and as {}", quote_name(by_name[i]->name),
                               by_name[i - 1]->scheme.name(), by_name[i]->scheme.name()));
  return all;
}

std::vector<QuantizedWeight> find_quantized_weights(const File& f) {
  try {
    return detail::find_quantized_weights(detail::TensorSet({&f}));
  } catch (const Error& e) {
    throw e.with_source(f.name());
  }
}

std::vector<QuantizedWeight> find_quantized_weights(std::span<const File> files) {
  return find_quantized_weights(files, {});
}

std::vector<QuantizedWeight> find_quantized_weights(std::span<const File> files,
                                                    std::string_view quantization_config) {
  if (files.empty()) return {};
  std::vector<const File*> files_of_set;
  for (const File& f : files) files_of_set.push_back(&f);
  detail::TensorSet set(std::move(files_of_set));
  set.set_quantization_config(std::string(quantization_config));
  return detail::find_quantized_weights(set);
}

}  // namespace tlio

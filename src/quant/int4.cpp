// quant/int4.cpp: tinyllm int4-g<group>-sym: kernels, detection and checks, row reader.
#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstring>

#include <fmt/core.h>
#include <fmt/format.h>

#include "common/parallel.hpp"
#include "io/copy.hpp"
#include "quant/bnb_file.hpp"
#include "quant/tensor_set.hpp"
#include "quant/int4_kernels.hpp"
#include "common/json_text.hpp"
#include "io/checked.hpp"
#include "tlio/convert.hpp"
#include "tlio/error.hpp"
#include "tlio/file.hpp"
#include "tlio/quant.hpp"

namespace tlio {

using detail::quote_name;
using detail::TensorSet;

// Matrices of at least this many elements are dequantized on all cores.
inline constexpr uint64_t kParallelMinElements = uint64_t{1} << 20;

namespace {

constexpr std::string_view kQweight = ".qweight";
constexpr std::string_view kScales = ".scales";

[[noreturn]] void int4_error(const std::string& tensor, std::string detail) {
  throw_format(Rule::int4, tensor, std::move(detail));
}

void check_matrix(uint64_t rows, uint64_t cols, uint64_t group, size_t qbytes, size_t nscales) {
  if (cols % 2) throw_invalid(fmt::format("int4 needs an even number of columns, not {}", cols));
  if (group == 0 || cols % group)
    throw_invalid(fmt::format("group {} does not divide the {} columns", group, cols));
  auto elems = detail::checked_mul(rows, cols);
  if (!elems || qbytes != *elems / 2 || nscales != *elems / group)
    throw_invalid(fmt::format("int4 buffers of {} and {} entries do not fit a [{}, {}] matrix "
                              "with group {}", qbytes, nscales, rows, cols, group));
}

}  // namespace

std::optional<uint64_t> parse_int4_scheme(std::string_view scheme) noexcept {
  constexpr std::string_view prefix = "int4-g", suffix = "-sym";
  if (scheme.size() <= prefix.size() + suffix.size() || scheme.substr(0, prefix.size()) != prefix ||
      !scheme.ends_with(suffix))
    return std::nullopt;
  std::string_view digits = scheme.substr(prefix.size(), scheme.size() - prefix.size() - suffix.size());
  if (digits.empty() || digits[0] == '0') return std::nullopt;
  uint64_t group = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), group);
  if (ec != std::errc{} || end != digits.data() + digits.size()) return std::nullopt;
  return group;
}

std::string int4_scheme_name(uint64_t group) { return fmt::format("int4-g{}-sym", group); }

void int4_quantize(std::span<const float> weights, uint64_t rows, uint64_t cols, uint64_t group,
                   std::span<uint8_t> qweight, std::span<uint16_t> scales) {
  check_matrix(rows, cols, group, qweight.size(), scales.size());
  if (weights.size() != qweight.size() * 2)
    throw_invalid(fmt::format("{} weights for a [{}, {}] matrix", weights.size(), rows, cols));
  const uint64_t groups = cols / group;
  detail::parallel_for(rows, kParallelMinElements / std::max<uint64_t>(cols, 1), 1,
                       detail::thread_count(detail::configured_threads()),
                       [&](uint64_t first, uint64_t last) {
    std::vector<int8_t> codes(cols);
    std::vector<float> scale(groups);
    for (uint64_t r = first; r < last; ++r) {
      const float* w = weights.data() + r * cols;
      for (uint64_t g = 0; g < groups; ++g) {
        const float* wg = w + g * group;
        float absmax = 0;
        bool finite = true;
        for (uint64_t k = 0; k < group; ++k) {
          finite = finite && std::isfinite(wg[k]);
          absmax = std::max(absmax, std::fabs(wg[k]));
        }
        if (!finite)
          for (uint64_t k = 0; k < group; ++k)
            if (!std::isfinite(wg[k]))
              throw_invalid(fmt::format("weight ({}, {}) is {}", r, g * group + k, wg[k]));
        const uint16_t s16 = f32_to_f16(absmax / 7.0f);
        if ((s16 & 0x7C00) == 0x7C00)
          throw_invalid(fmt::format("scale of row {} group {} ({}) overflows F16", r, g,
                                    absmax / 7.0f));
        scales[r * groups + g] = s16;
        scale[g] = f16_to_f32(s16);
      }
      detail::int4_quantize_row(w, scale.data(), cols, group, codes.data(),
                                qweight.data() + r * cols / 2);
    }
  });
}

void int4_dequantize_rows(std::span<const uint8_t> qweight, std::span<const uint16_t> scales,
                          uint64_t rows, uint64_t cols, uint64_t group, uint64_t first_row,
                          uint64_t row_count, Dtype out, std::span<std::byte> dst) {
  check_matrix(rows, cols, group, qweight.size(), scales.size());
  if (out != Dtype::F32 && out != Dtype::F16 && out != Dtype::BF16)
    throw Error(ErrorCode::unsupported, Rule::none, {}, std::nullopt,
                fmt::format("int4 dequantizes to F32, F16 or BF16, not {}", dtype_name(out)));
  auto end_row = detail::checked_add(first_row, row_count);
  if (!end_row || *end_row > rows)
    throw_invalid(fmt::format("rows [{}, +{}) are outside the {} rows", first_row, row_count, rows));
  const uint64_t out_bytes = dtype_bits(out) / 8;
  if (dst.size() != row_count * cols * out_bytes)
    throw_invalid(fmt::format("destination holds {} bytes, {} rows of {} {} need {}", dst.size(),
                              row_count, cols, dtype_name(out), row_count * cols * out_bytes));
  const uint64_t groups = cols / group;
  detail::parallel_for(row_count, kParallelMinElements / std::max<uint64_t>(cols, 1), 1,
                       detail::thread_count(detail::configured_threads()),
                       [&](uint64_t b, uint64_t e) {
    // Large F32 outputs: each row is made in a cached scratch row, then streamed out
    // (non-temporal), which spares a read for ownership of every output line.
    const bool stream = out == Dtype::F32 && row_count * cols * 4 >= detail::kStreamingCopyThreshold;
    std::vector<float> row(out == Dtype::F32 && !stream ? 0 : cols);
    for (uint64_t r = b; r < e; ++r) {
      const uint64_t src_row = first_row + r;
      const uint8_t* q = qweight.data() + src_row * cols / 2;
      const uint16_t* s = scales.data() + src_row * groups;
      std::byte* o = dst.data() + r * cols * out_bytes;
      if (stream) {
        detail::int4_dequantize_row(q, s, cols, group, row.data());
        detail::stream_bytes(o, reinterpret_cast<const std::byte*>(row.data()), cols * 4);
        continue;
      }
      if (out == Dtype::F32) {
        detail::int4_dequantize_row(q, s, cols, group, reinterpret_cast<float*>(o));
        continue;
      }
      if (out == Dtype::BF16 &&
          detail::int4_dequantize_row_bf16(q, s, cols, group, reinterpret_cast<uint16_t*>(o)))
        continue;
      detail::int4_dequantize_row(q, s, cols, group, row.data());
      convert(Dtype::F32, std::as_bytes(std::span(row)), out, {o, cols * out_bytes}, cols);
    }
  });
}

// ---- detection and checks ----------------------------------------------------------------------

namespace {

std::vector<QuantizedWeight> find_int4_weights(const TensorSet& f) {
  std::optional<uint64_t> declared_group;
  auto quant = f.metadata().find("quant");
  if (quant != f.metadata().end()) {
    declared_group = parse_int4_scheme(quant->second);
    if (!declared_group)
      int4_error("__metadata__", fmt::format("metadata quant {} is not a scheme tlio knows "
                                             "(int4-g<group>-sym)", quote_name(quant->second)));
  }
  std::vector<QuantizedWeight> out;
  bool any_qweight = false;
  for (const TensorInfo* t : f.tensors())
    if (t->name.ends_with(kQweight)) any_qweight = true;
  for (const TensorInfo* tp : f.tensors()) {
    const TensorInfo& t = *tp;
    if (t.name.ends_with(kScales) && (declared_group || any_qweight)) {
      std::string base = t.name.substr(0, t.name.size() - kScales.size());
      if (!f.find(base + std::string(kQweight)))
        int4_error(t.name, fmt::format("{} has no {}", quote_name(t.name),
                                       quote_name(base + std::string(kQweight))));
    }
    if (!t.name.ends_with(kQweight)) continue;
    std::string base = t.name.substr(0, t.name.size() - kQweight.size());
    const std::string scales_name = base + std::string(kScales);
    const TensorInfo* s = f.find(scales_name);
    if (!s) int4_error(t.name, fmt::format("{} has no {}", quote_name(t.name), quote_name(scales_name)));
    if (t.dtype != Dtype::U8 || t.shape.size() != 2)
      int4_error(t.name, fmt::format("{} is {} [{}]; int4 qweight is U8 [out, in/2]",
                                     quote_name(t.name), dtype_name(t.dtype), fmt::join(t.shape, ", ")));
    if (s->dtype != Dtype::F16 || s->shape.size() != 2)
      int4_error(s->name, fmt::format("{} is {} [{}]; int4 scales are F16 [out, in/group]",
                                      quote_name(s->name), dtype_name(s->dtype), fmt::join(s->shape, ", ")));
    const uint64_t out_features = t.shape[0], in_features = t.shape[1] * 2;
    if (s->shape[0] != out_features)
      int4_error(s->name, fmt::format("{} has {} rows, {} has {}", quote_name(s->name), s->shape[0],
                                      quote_name(t.name), out_features));
    uint64_t group;
    if (declared_group) {
      group = *declared_group;
      if (in_features % group || s->shape[1] != in_features / group)
        int4_error(s->name, fmt::format("{} has {} column(s); with group {} (metadata quant) and "
                                        "{} inputs it needs {}", quote_name(s->name), s->shape[1],
                                        group, in_features,
                                        in_features % group ? std::string("a group dividing them")
                                                            : std::to_string(in_features / group)));
    } else {
      if (s->shape[1] == 0 || in_features % s->shape[1])
        int4_error(s->name, fmt::format("{} has {} column(s), which do not divide the {} inputs of {}",
                                        quote_name(s->name), s->shape[1], in_features, quote_name(t.name)));
      group = in_features / s->shape[1];
    }
    QuantizedWeight w;
    w.name = base;
    w.scheme = int4_scheme_name(group);
    w.shape = Shape{out_features, in_features};
    w.blocksize = group;
    w.stored = {t.name, scales_name};
    w.stored_bytes = t.byte_size() + s->byte_size();
    out.push_back(std::move(w));
  }
  if (out.size() > 1) {  // one file, one group (the metadata can only name one)
    for (const auto& w : out)
      if (w.scheme != out[0].scheme)
        int4_error(w.name + std::string(kScales),
                   fmt::format("{} implies {} but {} implies {}", quote_name(w.name), w.scheme,
                               quote_name(out[0].name), out[0].scheme));
  }
  return out;
}

}  // namespace

namespace detail {

std::vector<QuantizedWeight> find_quantized_weights(const TensorSet& set) {
  std::vector<QuantizedWeight> all = find_int4_weights(set);
  for (QuantizedWeight& w : find_bnb_weights(set)) all.push_back(std::move(w));
  std::stable_sort(all.begin(), all.end(), [&](const auto& a, const auto& b) {
    return set.position(a.stored[0]) < set.position(b.stored[0]);
  });
  return all;
}

}  // namespace detail

std::vector<QuantizedWeight> find_quantized_weights(const File& f) {
  try {
    return detail::find_quantized_weights(detail::TensorSet({&f}));
  } catch (const Error& e) {
    throw e.with_source(f.name());
  }
}

Int4Weight::Int4Weight(const File& f, std::string_view name) {
  const std::string base(name);
  bool found = false;
  for (const QuantizedWeight& w : find_quantized_weights(f))
    if (w.name == base && parse_int4_scheme(w.scheme)) {
      found = true;
      rows_ = w.shape[0];
      cols_ = w.shape[1];
      group_ = *parse_int4_scheme(w.scheme);
    }
  if (!found)
    throw Error(ErrorCode::not_found, Rule::none, base, std::nullopt,
                fmt::format("no int4 weight named {}", quote_name(base)));
  qweight_ = f.view(base + std::string(kQweight));
  const TensorView s = f.view(base + std::string(kScales));
  scales_.resize(s.bytes().size() / 2);
  std::memcpy(scales_.data(), s.bytes().data(), s.bytes().size());
}

void Int4Weight::dequantize_rows(uint64_t first, uint64_t count, Dtype out,
                                 std::span<std::byte> dst) const {
  std::span<const uint8_t> q(reinterpret_cast<const uint8_t*>(qweight_.bytes().data()),
                             qweight_.bytes().size());
  int4_dequantize_rows(q, scales_, rows_, cols_, group_, first, count, out, dst);
}

}  // namespace tlio

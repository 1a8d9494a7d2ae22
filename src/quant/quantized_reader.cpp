// quant/quantized_reader.cpp: QuantizedReader, one reader for every quantized scheme.
#include <cstring>

#include <fmt/core.h>

#include "common/json_text.hpp"
#include "io/checked.hpp"
#include "quant/bnb_file.hpp"
#include "tlio/bnb.hpp"
#include "tlio/convert.hpp"
#include "tlio/error.hpp"
#include "tlio/quant.hpp"

namespace tlio {

namespace {

QuantizedWeight named_weight(const File& f, std::string_view name) {
  for (QuantizedWeight& w : find_quantized_weights(f))
    if (w.name == name) return std::move(w);
  throw Error(ErrorCode::not_found, Rule::none, std::string(name), std::nullopt,
              fmt::format("no quantized weight named {}", detail::quote_name(name)));
}

}  // namespace

QuantizedReader::QuantizedReader(const File& f, std::string_view name)
    : QuantizedReader(f, named_weight(f, name)) {}

QuantizedReader::QuantizedReader(const File& f, QuantizedWeight weight) : weight_(std::move(weight)) {
  if (parse_int4_scheme(weight_.scheme)) {
    data_ = f.view(weight_.stored[0]);
    const TensorView s = f.view(weight_.stored[1]);
    int4_scales_.resize(s.bytes().size() / 2);
    std::memcpy(int4_scales_.data(), s.bytes().data(), s.bytes().size());
  } else if (weight_.scheme == "int8") {
    data_ = f.view(weight_.stored[0]);
    scales_ = read_f32(f, weight_.stored[1]);
  } else {
    const detail::TensorSet set({&f});
    data_ = f.view(weight_.name);
    scales_ = detail::bnb_effective_absmax(set, weight_, detail::bnb_state_of(set, weight_));
  }
}

uint64_t QuantizedReader::element_count() const noexcept {
  return detail::checked_product(weight_.shape).value_or(0);
}

void QuantizedReader::read(uint64_t first, uint64_t count, Dtype out,
                           std::span<std::byte> dst) const {
  const auto end = detail::checked_add(first, count);
  if (!end || *end > element_count())
    throw_invalid(fmt::format("elements [{}, +{}) are outside the {} of {}", first, count,
                              element_count(), detail::quote_name(weight_.name)),
                  weight_.name);
  const auto* bytes = reinterpret_cast<const uint8_t*>(data_.bytes().data());
  if (auto group = parse_int4_scheme(weight_.scheme)) {
    const uint64_t rows = weight_.shape[0], cols = weight_.shape[1];
    const uint64_t out_bytes = dtype_bits(out) / 8;
    const std::span<const uint8_t> q(bytes, data_.bytes().size());
    if (dst.size() != count * out_bytes)
      throw_invalid(fmt::format("destination holds {} bytes, {} values need {}", dst.size(), count,
                                count * out_bytes));
    // Whole rows go straight to dst; a partial first or last row through one scratch row.
    std::vector<std::byte> row;
    uint64_t i = first;
    std::byte* o = dst.data();
    while (i < *end) {
      const uint64_t r = i / cols, in_row = i % cols;
      if (in_row == 0 && *end - i >= cols) {
        const uint64_t whole = (*end - i) / cols;
        int4_dequantize_rows(q, int4_scales_, rows, cols, *group, r, whole, out, {o, whole * cols * out_bytes});
        i += whole * cols;
        o += whole * cols * out_bytes;
        continue;
      }
      row.resize(cols * out_bytes);
      int4_dequantize_rows(q, int4_scales_, rows, cols, *group, r, 1, out, row);
      const uint64_t take = std::min(cols - in_row, *end - i);
      std::memcpy(o, row.data() + in_row * out_bytes, take * out_bytes);
      i += take;
      o += take * out_bytes;
    }
    return;
  }
  if (weight_.scheme == "int8") {
    llm_int8_dequantize({reinterpret_cast<const int8_t*>(bytes), data_.bytes().size()}, scales_,
                        weight_.shape[1], first, count, out, dst);
    return;
  }
  bnb_dequantize_4bit({bytes, data_.bytes().size()}, scales_, *parse_bnb_quant_type(weight_.scheme),
                      weight_.blocksize, first, count, out, dst);
}

}  // namespace tlio

// quant/quantized_reader.cpp: QuantizedReader, one reader for every quantized scheme.
#include <fmt/core.h>

#include "common/checked.hpp"
#include "common/json_text.hpp"
#include "quant/schemes.hpp"
#include "tlio/convert_file.hpp"
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

QuantizedReader::QuantizedReader(const File& f, QuantizedWeight weight)
    : weight_(std::move(weight)) {
  decoder_ = detail::scheme_entry(weight_.scheme.kind()).decoder(detail::TensorSet({&f}), weight_);
}

QuantizedReader::QuantizedReader(std::span<const File> files, QuantizedWeight weight)
    : weight_(std::move(weight)) {
  std::vector<const File*> set;
  for (const File& f : files) set.push_back(&f);
  decoder_ = detail::scheme_entry(weight_.scheme.kind())
                 .decoder(detail::TensorSet(std::move(set)), weight_);
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
  decoder_->read(first, count, out, dst);
}

}  // namespace tlio

// report/weights.cpp: the Weights interface: the opener that asks weights_kind once and makes
// the container's implementation (report/weights_containers.hpp), and what every container shares.
#include "tlio/weights.hpp"

#include <fmt/core.h>

#include <algorithm>

#include "common/json_text.hpp"
#include "report/weights_containers.hpp"
#include "tlio/error.hpp"

namespace tlio {

std::string closest_name(const std::string& word, std::span<const std::string> candidates) {
  // Levenshtein distance, one row at a time.
  const auto distance = [](const std::string& a, const std::string& b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
      size_t diagonal = row[0];
      row[0] = i;
      for (size_t j = 1; j <= b.size(); ++j) {
        const size_t up = row[j];
        row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
        diagonal = up;
      }
    }
    return row[b.size()];
  };
  const size_t limit = std::min<size_t>(3, std::max<size_t>(1, word.size() / 3));
  std::string best;
  size_t best_distance = limit + 1;
  for (const std::string& c : candidates) {
    const size_t d = distance(word, c);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  return best;
}

Weights::~Weights() = default;

std::unique_ptr<const Weights> Weights::open(const std::string& location,
                                             const OpenOptions& options) {
  switch (weights_kind(location, options)) {
    case WeightsKind::safetensors:
      return detail::open_file_weights(location, options);
    case WeightsKind::model_folder:
      return detail::open_folder_weights(location, options);
    case WeightsKind::gguf:
      return detail::open_gguf_weights(location, options);
  }
  throw Error(ErrorCode::unsupported, Rule::none, {}, std::nullopt,
              "a kind of weights tlio does not read", location);
}

const std::string& Weights::config_json() const noexcept {
  static const std::string none;
  return none;
}

std::string Weights::quantization_config() const { return {}; }

const std::vector<QuantizedWeight>& Weights::quantized() const noexcept {
  static const std::vector<QuantizedWeight> none;
  return none;
}

std::pair<const File*, const TensorInfo*> Weights::at(std::string_view name) const {
  throw_not_found(name);
}

void Weights::throw_not_found(std::string_view name) const {
  // The nearest name, or the logical name of a quantized weight's part.
  const std::vector<std::string> names = value_names();
  const std::string near = closest_name(std::string(name), names);
  throw Error(
      ErrorCode::not_found, Rule::none, std::string(name), std::nullopt,
      fmt::format("no tensor named {}{}", detail::quote_name(name),
                  near.empty() ? "" : fmt::format("; did you mean {}?", detail::quote_name(near))),
      this->name());
}

std::vector<const TensorInfo*> Weights::tensors() const {
  std::vector<const TensorInfo*> out;
  for (const File& f : files())
    for (const TensorInfo& t : f.tensors()) out.push_back(&t);
  return out;
}

}  // namespace tlio

// report/pairing.hpp: which tensor of a reference each tensor of a model is compared with: the
// same name, or across a GGUF file and a Hugging Face folder the name the GGUF export gives it,
// with the Q and K rows the export interleaves per head put back in place; and the figures of
// tensors so paired.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tlio/report.hpp"
#include "tlio/weights.hpp"

namespace tlio::detail {

struct Pairing {
  std::string reference;       ///< the reference's name for the model's tensor
  uint64_t permute_heads = 0;  ///< heads whose rows are interleaved between the two (0: none)
  bool model_is_gguf = false;  ///< the model holds the interleaved rows, else the reference does

  /// The reference's row holding the values of the model's row `row` of `rows`.
  uint64_t reference_row(uint64_t row, uint64_t rows) const noexcept;
};

class Pairings {
 public:
  /// The pairing of the model's `name`, or null when the reference has no such tensor.
  const Pairing* find(std::string_view name) const;
  /// The reference's names no tensor of the model is paired with, in its order (those made()
  /// aside).
  std::vector<std::string> unpaired_reference() const;
  /// Whether `name` (of either side) is a GGUF tensor the export makes from the folder's
  /// config.json rather than from a tensor (Llama 3's rope_freqs.weight): in neither "only in"
  /// list.
  bool made(std::string_view name) const { return made_.contains(name); }

 private:
  friend Pairings pair_names(const Weights& model, const Weights& reference);

  std::map<std::string, Pairing, std::less<>> by_model_;
  std::vector<std::string> reference_names_;
  std::set<std::string, std::less<>> made_;
};

/// Pairs every value name of `model` with one of `reference`. A GGUF file against a model folder
/// (or the other way) pairs through the export's table for the folder's architecture
/// (Error{unsupported} naming it when the table has none); otherwise names pair with themselves.
/// A GGUF file and a lone file of which no tensor pairs is Error{unsupported} saying how they
/// would.
Pairings pair_names(const Weights& model, const Weights& reference);

/// tlio::tensor_figures with the pairings already made (`pairs` null without a reference).
std::vector<TensorFigures> tensor_figures(const Weights& model, std::span<const std::string> names,
                                          const FigureOptions& options, const Pairings* pairs);

}  // namespace tlio::detail

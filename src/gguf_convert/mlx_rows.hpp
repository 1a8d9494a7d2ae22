// gguf_convert/mlx_rows.hpp: a weight written in MLX's quantized layout row by row by a transcode,
// whatever its source: each row carried (its codes and group parameters as they are) or
// requantized as mx.quantize does, then read back by the MLX decoder's kernels and compared with
// the source's values before its piece is written (carry_proof.hpp).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tlio/quant.hpp"
#include "tlio/transcode.hpp"
#include "tlio/writer.hpp"

namespace tlio::detail {

/// How one weight goes into MLX's layout.
struct MlxCarry {
  MlxOptions options;              ///< the MLX mode, bits and group written
  Dtype scale_dtype = Dtype::F32;  ///< affine scales and biases (U8: the FP4 modes' bytes)
  bool carried = true;             ///< false: requantized from the source's values
  /// The FP4 modes under compressed-tensors' names (the same bytes): <m>.weight_packed U8,
  /// <m>.weight_scale (U8 E8M0, or F8_E4M3 with <m>.weight_global_scale 1.0).
  bool compressed_tensors = false;
};

/// The tensors weight `name` of [rows, cols] is stored as: <m>.weight, <m>.scales[, <m>.biases]
/// (compressed-tensors': <m>.weight_packed, <m>.weight_scale[, <m>.weight_global_scale]).
struct MlxStored {
  std::string name;
  Dtype dtype;
  Shape shape;
};
std::vector<MlxStored> mlx_carry_tensors(std::string_view name, uint64_t rows, uint64_t cols,
                                         const MlxCarry& carry);

/// The words, scales and biases of a piece's rows, as MLX stores them.
struct MlxPiece {
  std::vector<uint32_t> words;
  std::vector<float> scales, biases;  ///< affine
  std::vector<uint8_t> scale_bytes;   ///< FP4
};

/// Where a weight's rows come from.
struct MlxRowSource {
  uint64_t rows = 0, cols = 0;
  uint64_t head_rows = 0;  ///< pieces hold whole heads of this many rows (permuted rows)
  std::string type;        ///< the source's type or scheme, for the report ("Q4_0")
  std::string location;    ///< where it is, for errors
  /// Reads rows [first, first + n) of the weight (on the calling thread).
  std::function<void(uint64_t first, uint64_t n)> load;
  /// Row j of those loaded, from any thread: its values into `values` and, carried, its codes
  /// (packed into p.words' row j, zeroed first) and group parameters into row j of `p`.
  std::function<void(uint64_t j, std::span<float> values, MlxPiece& p, std::vector<uint8_t>& codes)>
      row;
};

/// Writes the weight into `w` (its tensors declared) in pieces of whole rows proven one by one:
/// Error{format} naming the weight and the first value that differs. `item` gets its figures;
/// `done` each piece's elements.
void write_mlx_rows(const MlxRowSource& src, std::string_view name, const MlxCarry& carry,
                    Writer& w, TranscodeReport::Item& item,
                    const std::function<void(uint64_t)>& done);

/// The widest affine width MLX has (2, 3, 4, 5, 6, 8) of at most `bits`, and 2 below that: a
/// requantized weight's.
uint64_t mlx_affine_bits_within(uint64_t bits);
/// The bits a scheme spends per value: its own `bits`, 8 for LLM.int8 and FP8, 4 for the rest.
uint64_t scheme_bits(const QuantScheme& s);

/// The quantization config of the weights written, as mlx-lm writes it (config.json's
/// "quantization" and "quantization_config", a lone file's metadata): the most common options at
/// the top level, each other module's own; "" for none.
std::string mlx_quantization_json(const std::vector<std::pair<std::string, MlxOptions>>& weights);

}  // namespace tlio::detail

// gguf_convert/gguf_to_mlx.hpp: a GGUF weight written in MLX's quantized layout (transcode): its
// blocks' codes and scales carried where MLX's arithmetic is ggml's (gguf/ggml_groups.hpp), else,
// when asked, requantized as mx.quantize does; every piece proven by MLX's decoder.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/ggml_groups.hpp"
#include "tlio/gguf.hpp"
#include "tlio/quant.hpp"
#include "tlio/transcode.hpp"
#include "tlio/writer.hpp"

namespace tlio::detail {

/// How one GGUF weight goes into MLX's layout.
struct MlxCarry {
  const GgmlGroups* groups = nullptr;  ///< carried as they are; null: requantized
  MlxOptions options;                  ///< the MLX mode, bits and group written
  Dtype scale_dtype = Dtype::F32;      ///< affine scales and biases (U8: the FP4 modes' bytes)
};

/// How GGUF tensor `t`, written as `name` (rows of `cols` values), goes into MLX's layout, or
/// nullopt for a tensor written as floats (a plain type, 1-D, not a module's weight). A weight no
/// rule carries: requantized with `lossy`, else its reason in `refusal` (and nullopt).
std::optional<MlxCarry> mlx_carry_of(const GgufTensorInfo& t, std::string_view name, uint64_t cols,
                                     const TranscodeOptions& options, std::string& refusal);

/// The tensors weight `name` of [rows, cols] is stored as: <m>.weight, <m>.scales[, <m>.biases].
struct MlxStored {
  std::string name;
  Dtype dtype;
  Shape shape;
};
std::vector<MlxStored> mlx_carry_tensors(std::string_view name, uint64_t rows, uint64_t cols,
                                         const MlxCarry& carry);

/// Where the rows of a GGUF tensor are: `rows` rows of `cols` values from row `first` (an
/// expert's, in a stack), interleaved per head where `head_rows` (the export's Q/K order).
struct GgufRows {
  const GgufTensorInfo* t;
  uint64_t rows, cols, first = 0, head_rows = 0;
};

/// Writes the weight into `w` (its tensors declared) in pieces of whole rows, each piece's MLX
/// values decoded by MLX's decoder and compared with ggml's before the next: Error{format} naming
/// the weight and the first value that differs. `item` gets its figures; `done` each piece's
/// elements.
void write_mlx_carry(const GgufFile& src, const GgufRows& rows, std::string_view name,
                     const MlxCarry& carry, Writer& w, TranscodeReport::Item& item,
                     const std::function<void(uint64_t)>& done);

/// The quantization config of the weights written, as mlx-lm writes it (config.json's
/// "quantization" and "quantization_config", a lone file's metadata): the most common options at
/// the top level, each other module's own; "" for none.
std::string mlx_quantization_json(const std::vector<std::pair<std::string, MlxOptions>>& weights);

}  // namespace tlio::detail

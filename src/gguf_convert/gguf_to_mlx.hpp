// gguf_convert/gguf_to_mlx.hpp: a GGUF weight written in MLX's quantized layout (transcode): its
// blocks' codes and scales carried where MLX's arithmetic is ggml's (gguf/ggml_groups.hpp), else,
// when asked, requantized as mx.quantize does; every row proven (mlx_rows.hpp).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gguf_convert/mlx_rows.hpp"
#include "tlio/gguf.hpp"
#include "tlio/quant.hpp"
#include "tlio/transcode.hpp"
#include "tlio/writer.hpp"

namespace tlio::detail {

/// How GGUF tensor `t`, written as `name` (rows of `cols` values), goes into MLX's layout, or
/// nullopt for a tensor written as floats (a plain type, 1-D, not a module's weight). A weight no
/// rule carries: requantized with `lossy`, else its reason in `refusal` (and nullopt).
std::optional<MlxCarry> mlx_carry_of(const GgufTensorInfo& t, std::string_view name, uint64_t cols,
                                     const TranscodeOptions& options, std::string& refusal);

/// Where the rows of a GGUF tensor are: `rows` rows of `cols` values from row `first` (an
/// expert's, in a stack), interleaved per head where `head_rows` (the export's Q/K order).
struct GgufRows {
  const GgufTensorInfo* t;
  uint64_t rows, cols, first = 0, head_rows = 0;
};

/// Writes the weight into `w` (its tensors declared) through write_mlx_rows, ggml's decoder giving
/// the values each row is proven against.
void write_mlx_carry(const GgufFile& src, const GgufRows& rows, std::string_view name,
                     const MlxCarry& carry, Writer& w, TranscodeReport::Item& item,
                     const std::function<void(uint64_t)>& done);

}  // namespace tlio::detail

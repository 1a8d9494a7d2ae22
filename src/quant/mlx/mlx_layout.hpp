// quant/mlx/mlx_layout.hpp: MLX's quantized weights in a set of tensors, as mlx-lm writes them:
// <m>.weight U32 [..., in * bits / 32] (codes), <m>.scales [..., in / group] and, for the affine
// mode, <m>.biases (both in the weights' dtype; U8 E8M0 or E4M3 scales for the other modes), with
// config.json's "quantization" (and its copy "quantization_config"): {group_size, bits, mode}
// and per-module entries (a dict, or false for a module left plain).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "quant/tensor_set.hpp"
#include "tlio/quant.hpp"

namespace tlio::detail {

/// The widths and groups mx.quantize takes in the affine mode.
inline constexpr uint64_t kMlxAffineBits[] = {2, 3, 4, 5, 6, 8};
inline constexpr uint64_t kMlxAffineGroups[] = {32, 64, 128};

/// A mode's own bits and group (affine: mlx-lm's defaults, 4 and 64).
MlxOptions mlx_mode_defaults(MlxMode mode) noexcept;
std::string_view mlx_mode_name(MlxMode mode) noexcept;

/// MLX's weights in `set`, checked: shapes that agree, an affine weight's bits and group from
/// config.json's entry for its module (else the top level's) where the shapes allow it, else
/// the one pair that fits the shapes (Error{format, "quant"} when several do and nothing says
/// which). A global scale (mlx-lm's nvfp4 with global_scale) is refused by name.
std::vector<QuantizedWeight> detect_mlx(const TensorSet& set);

}  // namespace tlio::detail

// gguf_convert/folder_to_mlx.hpp: transcode --to mlx of a model folder (folder_to_mlx.cpp).
#pragma once

#include <string>

#include "tlio/transcode.hpp"

namespace tlio::detail {

/// The model folder `src` written as the folder `out` with its quantized weights in MLX's layout:
/// compressed-tensors' MXFP4 and NVFP4 (a global scale of 1) carried byte for byte, the others
/// refused by name or, with options.lossy, requantized; every row proven.
TranscodeReport folder_to_mlx(const std::string& src, const std::string& out,
                              const TranscodeOptions& options);

}  // namespace tlio::detail

// gguf_convert/folder_transcode.hpp: transcode of a model folder into another folder layout
// (folder_transcode.cpp): MLX's, or compressed-tensors'.
#pragma once

#include <string>

#include "tlio/transcode.hpp"

namespace tlio::detail {

/// The model folder `src` written as the folder `out` (options.to: mlx or compressed_tensors),
/// its quantized weights carried byte for byte where the target has their arithmetic, the others
/// refused by name or, into MLX with options.lossy, requantized; every row proven.
TranscodeReport folder_transcode(const std::string& src, const std::string& out,
                                 const TranscodeOptions& options);

}  // namespace tlio::detail

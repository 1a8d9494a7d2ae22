// tlio/transcode.hpp: quantized weights carried from one ecosystem's layout into another's without
// a detour through floats. Where both layouts compute a value with the same arithmetic, the codes
// and scales move as they are, and every tensor is proven on the way: each of its values in the
// output, decoded by the output layout's own decoder, equals the value ggml decodes from the
// source, bit for bit but for the sign of a zero (a layout that cannot write -0 writes +0, and the
// report counts them). What cannot be carried is refused by name, or with `lossy` requantized and
// its error reported.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tlio/dtype.hpp"
#include "tlio/export.hpp"
#include "tlio/file.hpp"
#include "tlio/writer.hpp"

namespace tlio {

/// The layouts transcode writes.
enum class TranscodeTarget : uint8_t {
  mlx,                 ///< a Hugging Face folder in MLX's quantized layout, as mlx-lm loads it
  gguf,                ///< the GGUF file llama.cpp loads
  compressed_tensors,  ///< a Hugging Face folder in compressed-tensors' layout (transformers')
};

/// "mlx", "gguf", "compressed-tensors".
TLIO_API std::string_view transcode_target_name(TranscodeTarget target) noexcept;
/// The target named `name`, or nullopt.
TLIO_API std::optional<TranscodeTarget> transcode_target_named(std::string_view name) noexcept;

struct TranscodeOptions {
  TranscodeTarget to = TranscodeTarget::mlx;
  /// Requantize each weight that cannot be carried exactly (MLX affine in groups of 32, as many
  /// bits as its type has whole, at least 2; scales and biases in `dtype`) and report its error;
  /// without it such a weight is refused by name and nothing is written.
  bool lossy = false;
  /// F32, F16 or BF16: the dtype of the tensors a GGUF source gives as floats (norms, plain
  /// weights) and of the plain weights of a GGUF output, and of MLX's requantized scales; a
  /// folder's plain tensors go into MLX's layout as they are.
  Dtype dtype = Dtype::BF16;
  OpenOptions open;           ///< how the source is read (a token for URLs)
  ProgressCallback progress;  ///< source elements done / all
};

struct TranscodeReport {
  struct Item {
    std::string name;    ///< the weight's Hugging Face name ("model.layers.0.mlp.up_proj.weight")
    std::string source;  ///< its type or scheme in the source ("Q4_K", "mlx-mxfp4")
    std::string target;  ///< its form in the output ("mlx-affine-4bit-g32", "MXFP4")
    Dtype scale_dtype = Dtype::F32;  ///< of its scales (U8: E8M0 or E4M3 bytes; F16: ggml's)
    bool exact = true;               ///< carried and proven; false: requantized (lossy)
    uint64_t zero_signs = 0;         ///< -0 values of the source written as +0 (carried weights)
    double rmse = 0, max_abs_error = 0;  ///< requantized: against the source's values
  };
  std::vector<Item> items;  ///< the quantized weights, in the output's order
  size_t plain = 0;         ///< tensors written as floats
  uint64_t bytes_in = 0, bytes_out = 0;
  std::vector<std::string> files;  ///< written into the output folder
};

/// Writes the model of `src` in the target's layout at `out` (any location; published as one
/// set). To MLX, from a GGUF file of the architectures import_gguf_model knows, into the folder
/// `out`: each weight of a type whose values are code * scale + bias in groups MLX has (Q4_0,
/// Q4_1, Q5_0, Q5_1, Q8_0, Q2_0 and the K-quants Q4_K and Q5_K, groups of 32 or 64) becomes MLX
/// affine of its width with F32 scales and biases (the one dtype in which MLX's arithmetic is
/// ggml's); MXFP4 and NVFP4 become MLX's mxfp4 and nvfp4, scale bytes and codes as they are. Row
/// for row as import_gguf_model names and orders them (Q/K rows put back, experts of a stack
/// apart); config.json gets mlx-lm's "quantization" and "quantization_config". To MLX from a model
/// folder, shard for shard: compressed-tensors' MXFP4 and NVFP4 (a global scale of 1) byte for
/// byte, and FP8 whose scales are powers of two as mxfp8 (its E4M3 bytes, each scale's exponent
/// as an E8M0 byte per 32 inputs); MLX's own weights and plain tensors copied. To GGUF, from a
/// model folder export_gguf takes, into the file `out`: MLX's and compressed-tensors' MXFP4 and
/// NVFP4 weights (a global scale of 1) become ggml's MXFP4 and NVFP4 blocks, codes and scale bytes
/// as they are; plain weights are written in `dtype`, as export_gguf writes them. To
/// compressed-tensors, from a model folder: MLX's mxfp4 and nvfp4 Linear weights byte for byte
/// (one mode; nvfp4 with a global scale of 1), an embedding of theirs as BF16 (exactly its values),
/// the Linear modules left plain named in "ignore". Error{unsupported} names the weights no rule
/// carries (groups of 16, codebooks, MLX's affine, whose roundings ggml's blocks do not make)
/// unless options.lossy; Error{format} names a weight whose proof fails (an E8M0 255 or an NVFP4
/// scale past E4M3's range). Nothing is written then.
TLIO_API TranscodeReport transcode(const std::string& src, const std::string& out_dir,
                                   const TranscodeOptions& options = {});

}  // namespace tlio

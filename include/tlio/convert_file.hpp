// tlio/convert_file.hpp: whole files rewritten with their floating tensors in another dtype
// (tlio convert --dtype). Typed reads of one tensor (read_as) are File's, in tlio/file.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tlio/convert.hpp"
#include "tlio/dtype.hpp"
#include "tlio/edit.hpp"
#include "tlio/export.hpp"
#include "tlio/file.hpp"
#include "tlio/writer.hpp"

namespace tlio {

struct ConvertFileOptions {
  Dtype dtype = Dtype::BF16;  ///< target: a floating dtype other than F6_* and C64
  std::string include;        ///< regex searched in names; empty: every floating tensor
  std::string exclude;        ///< regex searched in names; empty: none
  ProgressCallback progress;  ///< output bytes done / total
  /// Which tensors are written and their names (tlio/edit.hpp). include/exclude, like keep and
  /// drop, see the source's names.
  TensorSelection tensors;
  /// Model folders only: allow a target of 8 bits or fewer (F8_*, F6_*, F4), a plain cast of
  /// every tensor selected, norms included, with no scale. Without it such a target is refused
  /// with a pointer to quantize_folder's fp8-block (scaled FP8, as the Hub's loaders read it).
  bool cast = false;
};

/// Values a conversion could not keep in its target dtype, for one tensor.
struct LostValues {
  std::string tensor;
  uint64_t overflowed = 0;  ///< finite values that became +-inf (F16's range ends at 65504)
  uint64_t flushed = 0;     ///< nonzero values that became +-0
};

struct ConvertFileReport {
  size_t converted = 0;    ///< tensors whose dtype changed, dequantized weights included
  size_t dequantized = 0;  ///< quantized weights written as plain tensors (their parts gone)
  size_t kept = 0;         ///< tensors copied as they are
  size_t dropped = 0;      ///< tensors left out (options.tensors)
  size_t renamed = 0;      ///< tensors written under another name
  size_t ties_removed =
      0;  ///< tie records ({alias: tensor} metadata) removed with their tensor or alias
  size_t ties_repointed = 0;  ///< tied tensors left out but written under a kept alias
  uint64_t data_bytes_in = 0;
  uint64_t data_bytes_out = 0;
  std::vector<LostValues> lost;  ///< tensors that lost values to the target dtype, in file order
  /// Every tensor's lost values added up (`tensor` empty).
  TLIO_API LostValues lost_total() const noexcept;
};

/// Writes `src` canonically to `out` (atomically) with its floating tensors converted to
/// options.dtype. Integer and BOOL tensors are copied as they are. Quantized weights (as the
/// scheme registry finds them: int4, bitsandbytes, LLM.int8, FP8, GPTQ, AWQ, MXFP4, NVFP4,
/// compressed-tensors) that options.include/exclude select are dequantized to options.dtype
/// under their logical name, as dequantize_file would write them (never a cast of their codes);
/// the stored tensors of the others are copied as they are. A file whose quantized weights are
/// malformed, or quantized in a form tlio does not decode, is refused (Error{format},
/// Error{unsupported}).
/// Streams tensor by tensor in bounded memory. Throws Error{invalid_argument} for a bad regex,
/// a target that is not a convertible floating dtype, or a NaN bound for F4 (naming the tensor).
TLIO_API ConvertFileReport convert_file(const File& src, const std::filesystem::path& out,
                                        const ConvertFileOptions& options);

}  // namespace tlio

// quant/rewrite_steps.hpp: the whole-file rewrites (convert, quantize, dequantize) as steps into a
// Writer the caller commits, so that a model folder runs one step per shard and publishes the
// shards as a set. The quantized weights come from the caller: for a shard they are the whole
// model's, whose parts a sharder may have put in different files.
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "quant/tensor_set.hpp"
#include "tlio/convert_file.hpp"
#include "tlio/edit.hpp"
#include "tlio/quant.hpp"
#include "tlio/writer.hpp"

namespace tlio::detail {

/// The stored tensors of quantized weights, which no rewrite but dequantize and convert touches.
using StoredParts = std::set<std::string, std::less<>>;

/// convert_file's work: `src`'s tensors (options.tensors chooses and names them) into `w`, the
/// floating ones converted to options.dtype when `convert_dtypes`, else all copied as they are.
/// `weights` are the quantized weights of the whole model (`set`, of which `src` is a file):
/// when converting, those options.include/exclude select are dequantized to options.dtype (each
/// in place of its first stored tensor, dropped with it), the others' stored tensors copied.
/// `allow_empty`: a selection that leaves none of `src`'s tensors is not an error (one shard of
/// a folder may lose all its tensors); the caller checks the whole.
ConvertFileReport convert_into(const TensorSet& set, const File& src, Writer& w,
                               const ConvertFileOptions& options,
                               const std::vector<QuantizedWeight>& weights, bool convert_dtypes,
                               bool allow_empty);
/// Which of `weights` convert_into dequantizes.
std::vector<const QuantizedWeight*> weights_to_restore(const std::vector<QuantizedWeight>& weights,
                                                       const ConvertFileOptions& options,
                                                       bool convert_dtypes);

/// edit_file's rewrite (metadata edited, tensors chosen and named, bytes copied in the kernel)
/// into `w`. `allow_empty` as for convert_into.
EditReport edit_into(const File& src, Writer& w, const EditOptions& options, bool allow_empty);

/// quantize_file's work: `existing` are the weights already quantized (of the whole model).
/// `allow_none`: quantizing no tensor is not an error (the caller checks the whole).
QuantizeReport quantize_into(const File& src, Writer& w, const QuantizeOptions& options,
                             const std::vector<QuantizedWeight>& existing, bool allow_none);

/// Error{invalid_argument} unless `dtype` is none, F32, F16 or BF16.
void check_dequantize_dtype(std::optional<Dtype> dtype);

/// Removes the metadata that records a file's quantization (tinyllm int4's "quant", the
/// "quantization_config" tlio quantize writes into a lone file): a file with no quantized weight
/// left must not claim any.
void erase_quantization_records(Metadata& metadata);
/// dequantize_file's work for `shard`, one of `set`'s files: its tensors that are no stored part
/// of `weights` copied, and each of `weights` whose first stored tensor is in `shard` restored
/// (decoded from `set`, wherever its other parts are).
DequantizeReport dequantize_into(const TensorSet& set, const File& shard, Writer& w,
                                 const std::vector<QuantizedWeight>& weights,
                                 std::optional<Dtype> dtype, const ProgressCallback& progress);

}  // namespace tlio::detail

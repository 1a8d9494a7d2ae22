// tlio/rewrite.hpp: weights rewritten by location, whatever the location holds. A safetensors
// file goes through the file's operation (convert_file, edit_file, quantize_file,
// dequantize_file), a model folder through the folder's (tlio/folder_rewrite.hpp), decided once
// by weights_kind; callers never ask which it is. What differs by kind:
//  - a model folder's output is a folder: `out` "-" or a name ending in .safetensors is
//    Error{invalid_argument} (merge_shards makes one file of a folder);
//  - FolderOptions shape a folder's output: max_shard_size with a file is Error{invalid_argument}
//    (shard_file splits one); `folder.files`, when set, gets the files a folder rewrite published
//    and stays empty for a file;
//  - a GGUF file is Error{invalid_argument} saying what reads one (import_gguf,
//    import_gguf_model: their reports say what a decode did).
// The source is read with `folder.open` (edit_weights: options.open) whatever it is.
#pragma once

#include <optional>
#include <string>

#include "tlio/convert_file.hpp"
#include "tlio/edit.hpp"
#include "tlio/export.hpp"
#include "tlio/folder_rewrite.hpp"
#include "tlio/quant.hpp"
#include "tlio/weights_kind.hpp"

namespace tlio {

/// convert_file or convert_folder.
TLIO_API ConvertFileReport convert_weights(const std::string& src, const std::string& out,
                                           const ConvertFileOptions& options,
                                           const FolderOptions& folder = {});
/// A copy with `tensors` choosing and naming the tensors: a file through edit_file (its bytes
/// copied in the kernel; `converted` and `dequantized` 0, `kept` the tensors written,
/// `data_bytes_in` the whole source's data, dropped tensors included, as EditReport's
/// source_data_bytes), a folder through copy_folder (`data_bytes_in` the selected tensors').
TLIO_API ConvertFileReport copy_weights(const std::string& src, const std::string& out,
                                        const TensorSelection& tensors,
                                        const ProgressCallback& progress = {},
                                        const FolderOptions& folder = {});
/// edit_file (`out` empty: `src` itself, in place where it can be) or edit_folder (`out` empty:
/// the folder rewritten as a set where it is).
TLIO_API EditReport edit_weights(const std::string& src, const std::string& out,
                                 const EditOptions& options, const FolderOptions& folder = {});
/// quantize_file or quantize_folder.
TLIO_API QuantizeReport quantize_weights(const std::string& src, const std::string& out,
                                         const QuantizeOptions& options,
                                         const FolderOptions& folder = {});
/// dequantize_file or dequantize_folder.
TLIO_API DequantizeReport dequantize_weights(const std::string& src, const std::string& out,
                                             std::optional<Dtype> dtype = std::nullopt,
                                             const ProgressCallback& progress = {},
                                             const FolderOptions& folder = {});

}  // namespace tlio

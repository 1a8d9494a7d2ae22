// tlio/folder_rewrite.hpp: model folders rewritten whole: converted, copied with a selection,
// quantized and dequantized, folder in and folder out, at any location.
//
// The source is a model folder (model.safetensors, or shards with model.safetensors.index.json;
// config.json optional) of any store. The output folder keeps the source's sharding and file names
// (a shard whose tensors were all left out is not written), or with FolderOptions::max_shard_size
// is sharded anew (model-0000k-of-0000n), and gets a new index made from what was
// written (total_size included), and gets the source's config.json (with its dtype, and after
// dequantize without quantization_config), generation, tokenizer and chat-template files, README.md
// and LICENSE. It is replaced as a set: every file is written first, then all are renamed in (an
// object store: uploaded, index last), and the previous weights the new set does not have are
// removed; on an error nothing changes. Quantized weights are found over all shards, so one whose
// parts a sharder split still counts whole. OUT may be SRC itself.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tlio/convert_file.hpp"
#include "tlio/edit.hpp"
#include "tlio/export.hpp"
#include "tlio/file.hpp"
#include "tlio/folder_job.hpp"
#include "tlio/quant.hpp"

namespace tlio {

/// The files a folder rewrite published, in order: weights, index, carried files.
using FolderFiles = std::vector<std::string>;

/// How a folder rewrite reads its source and shards its output.
struct FolderOptions {
  OpenOptions open = {};  ///< how the source is read (a token for hf://, ...)
  /// 0: the source's shards and file names. Else shards of at most this many tensor bytes,
  /// filled in source order module by module (a weight, its bias, a quantized weight's parts
  /// stay in one shard; a module larger than this is a shard of its own); a single shard is
  /// model.safetensors without an index. The data is still written once.
  uint64_t max_shard_size = 0;
  FolderFiles* files = nullptr;  ///< when set: the files published
  /// When set: this call is one step of a job of units (tlio/folder_job.hpp). Only the commit's
  /// report is the folder's; a unit's counts some of its source shards, plan's and abort's none.
  const FolderJob* job = nullptr;
};

/// convert_file over every shard (options.progress: source bytes done / total over the folder).
/// config.json's "torch_dtype" (and "dtype", where written) becomes options.dtype's torch name.
TLIO_API ConvertFileReport convert_folder(const std::string& src, const std::string& out,
                                          const ConvertFileOptions& options,
                                          const FolderOptions& folder = {});

/// The folder copied canonically with `tensors` choosing and naming the tensors (no dtype
/// changes): what `tlio convert DIR OUT` does without --dtype. Counts as convert_folder's.
TLIO_API ConvertFileReport copy_folder(const std::string& src, const std::string& out,
                                       const TensorSelection& tensors,
                                       const ProgressCallback& progress = {},
                                       const FolderOptions& folder = {});

/// edit_file over every shard: the metadata edits made in each (a key deleted must be in each),
/// the tensors chosen and named over the folder (a folder is always rewritten, never edited in
/// place). The counts are the folder's, `metadata` the first shard's result. The folder is read
/// with `folder.open` (options.open is edit_file's, for one file).
TLIO_API EditReport edit_folder(const std::string& src, const std::string& out,
                                const EditOptions& options, const FolderOptions& folder = {});

/// quantize_file over every shard; the selection and its errors are the whole folder's (a shard
/// with nothing to quantize is copied).
TLIO_API QuantizeReport quantize_folder(const std::string& src, const std::string& out,
                                        const QuantizeOptions& options,
                                        const FolderOptions& folder = {});

/// dequantize_file over every shard: each weight restored in the shard of its first stored
/// tensor. config.json loses "quantization_config"; its dtype becomes `dtype`'s when given.
TLIO_API DequantizeReport dequantize_folder(const std::string& src, const std::string& out,
                                            std::optional<Dtype> dtype = std::nullopt,
                                            const ProgressCallback& progress = {},
                                            const FolderOptions& folder = {});

}  // namespace tlio

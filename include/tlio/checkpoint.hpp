// tlio/checkpoint.hpp: PyTorch checkpoints (torch.save's zip format, and the legacy format of
// torch < 1.6) read with no pickle ever executed, and imported as safetensors.
//
// The pickle is decoded, not run: the callables that rebuild tensors (torch._utils.
// _rebuild_tensor_v2 and its kin, storages, dtypes, OrderedDict, torch.Size) are understood;
// any other class becomes an inert object whose tensors are still found; a global that would
// run code when torch loads the file (os.system, builtins.eval, subprocess, ...) is refused,
// naming it. Tensors are named by walking the object: dict keys and list indices joined with
// "." (a top-level dict's "state_dict" dict is taken when it has one). See docs/import.md.
//
// A torch.distributed.checkpoint (DCP) folder is read the same way: its `.metadata` pickle
// decoded by an allowlist of the classes DCP writes, each tensor assembled from the chunks its
// ranks saved (FSDP and tensor-parallel shards) after the chunks are checked to tile it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tlio/dtype.hpp"
#include "tlio/export.hpp"
#include "tlio/folder_job.hpp"
#include "tlio/shape.hpp"

namespace tlio {

struct CheckpointTensor {
  std::string name;
  Dtype dtype = Dtype::F32;
  Shape shape;
  bool contiguous = true;  ///< stored row-major (else written as a contiguous copy)
  std::string alias_of;    ///< an exact alias of this tensor (same storage and view): written once
  uint32_t chunks = 0;     ///< a DCP checkpoint's: the saved pieces it is assembled from
};

/// A value of the checkpoint that is not a tensor and so is not imported.
struct DroppedValue {
  std::string path;  ///< where it is ("optimizer.param_groups.0.lr"; "" for the top level;
                     ///< "FILE: path" for a sharded checkpoint)
  std::string kind;  ///< "int", "float", "str", "bytes", "bool", "None", "storage", "key"
                     ///< (a dict entry whose key is not text), "global"
};

/// CheckpointContents::dropped lists at most this many values (dropped_values counts all).
inline constexpr size_t kMaxDroppedListed = 100000;

struct CheckpointContents {
  std::string format;                     ///< "zip", "legacy" or "dcp"
  std::vector<CheckpointTensor> tensors;  ///< in the order the walk meets them
  uint64_t dropped_values = 0;            ///< leaves that are not tensors (ints, strings, ...)
  std::vector<DroppedValue> dropped;      ///< the first kMaxDroppedListed of them, in walk order
  std::vector<std::string> skipped;       ///< unsupported tensors left out, with why
  /// The top-level key imported without being asked for: "state_dict", or the model's part of
  /// a training checkpoint ("model" beside "optimizer"); empty when the whole object was.
  std::string chosen_key;
  std::vector<std::string> other_keys;  ///< the top-level keys left out when one was chosen
};

struct ImportOptions {
  /// A path into the object ("model.encoder"): that sub-object is imported instead.
  std::string key;
  /// Leave out tensors tlio cannot write (complex128, quantized, sparse) with a note, instead
  /// of failing.
  bool skip_unsupported = false;
  /// Directories: the most tensor bytes per output shard (0: split as the source was).
  uint64_t max_shard_size = 0;
  /// Write a file without tensors when the checkpoint has none, instead of failing.
  bool allow_empty = false;
  /// Import the whole object even when its top level is a training checkpoint (a model state
  /// dict beside optimizer state) or holds a "state_dict": every tensor, optimizer state too.
  bool import_all = false;
  /// Floating tensors written in this floating dtype of whole bytes (as `convert --dtype`
  /// converts them: rounded to nearest even); integer and boolean tensors as they are.
  /// nullopt: as saved.
  std::optional<Dtype> dtype = std::nullopt;
  /// Called with (bytes written, total) while tensor bytes are written.
  std::function<void(uint64_t, uint64_t)> progress;
  /// Directories: when set, this call is one step of a job of units, one per output file
  /// (tlio/folder_job.hpp). Only the commit's report is the folder's; a unit's counts its file,
  /// plan's and abort's none.
  const FolderJob* job = nullptr;
};

struct ImportReport {
  CheckpointContents contents;
  uint64_t tensors_written = 0;
  uint64_t tensors_converted = 0;  ///< of those, written in ImportOptions::dtype
  uint64_t bytes_written = 0;
};

/// True when the file starts like a PyTorch checkpoint (a zip archive, or a legacy pickle).
TLIO_API bool looks_like_checkpoint(const std::filesystem::path& path);
/// The checkpoint holding a folder's weights when it has no safetensors weights
/// (model.safetensors or its shard index) but a pytorch_model.bin; nullopt otherwise, and for
/// remote folders (which are not asked: see the weights' own error).
TLIO_API std::optional<std::filesystem::path> checkpoint_in_directory(
    const std::filesystem::path& dir);

/// True when `dir` is a torch.distributed.checkpoint (DCP) folder: a local folder holding the
/// `.metadata` its save writes beside the `.distcp` files.
TLIO_API bool is_dcp_checkpoint(const std::filesystem::path& dir);

/// The tensors of a checkpoint (names, dtypes, shapes) without converting it. Error{format}
/// with Rule::zip, Rule::pickle or Rule::checkpoint for anything malformed or refused.
TLIO_API CheckpointContents read_checkpoint(const std::filesystem::path& src,
                                            const ImportOptions& options = {});

/// Writes the checkpoint's tensors to `dst` as a canonical safetensors file (atomically:
/// nothing is left behind on failure), with metadata {"format": "pt"} plus {dropped: kept}
/// for exact aliases. When `src` is a directory holding pytorch_model.bin, or shards listed in
/// pytorch_model.bin.index.json, `dst` becomes a model directory: model.safetensors, or shards
/// (split as the source, or by max_shard_size) with model.safetensors.index.json, and the
/// config and tokenizer files (*.json, *.txt, *.model, *.tiktoken, *.jinja) copied.
TLIO_API ImportReport import_checkpoint(const std::filesystem::path& src,
                                        const std::filesystem::path& dst,
                                        const ImportOptions& options = {});

}  // namespace tlio

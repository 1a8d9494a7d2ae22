// tlio/model.hpp: model directories (config.json + weights, one file or shards), their
// architecture checks, sharding and merging, and folders of weights listed and checked (the
// bigram tracer is in tlio/bigram.hpp, whole-folder rewrites in tlio/folder_rewrite.hpp).
//
// Errors about a directory are Error{format} with rule "model" (config.json, architecture,
// tokenizer) or "index" (model.safetensors.index.json and its shards), naming the file and the
// tensor or key.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tlio/error.hpp"
#include "tlio/export.hpp"
#include "tlio/file.hpp"
#include "tlio/quant.hpp"
#include "tlio/writer.hpp"

namespace tlio {

struct ModelConfig {
  std::string
      arch;  ///< "bigram", "llama", an HF model_type tlio does not check, or "" (no config.json)
  bool course = false;    ///< config.json has tl_arch (course directory rules apply)
  std::string tokenizer;  ///< course directories: "bytes" or "file"; HF: empty
  uint64_t vocab_size = 0;
  // llama
  uint64_t hidden_size = 0, intermediate_size = 0, num_hidden_layers = 0;
  uint64_t num_attention_heads = 0, num_key_value_heads = 0, head_dim = 0;
  bool tie_word_embeddings = false;
};

/// Parses config.json text. Throws Error{format, "model"} for bad JSON, missing or mistyped keys.
TLIO_API ModelConfig parse_model_config(std::string_view json, const std::string& source);

/// One entry of a logical tensor namespace over one or several files.
struct ModelTensor {
  const TensorInfo* info;
  size_t file;  ///< index into Model::files()
};

/// True when `path` names a model directory rather than a file: a local folder; a URL ending in
/// '/'; a URL whose path does not end in ".safetensors" and under which config.json exists
/// (one request to find out).
TLIO_API bool is_model_directory(const std::filesystem::path& path,
                                 const OpenOptions& options = {});

/// One thing a folder of weights holds (folder_contents).
struct FolderItem {
  enum class Kind {
    model,  ///< a model directory: config.json of a transformers model beside its weights
    index,  ///< a shard index (*.safetensors.index.json) with the shards it names
    file,   ///< a safetensors file no index or model directory covers
  };
  Kind kind = Kind::file;
  std::string path;  ///< relative to the folder, '/'-separated; "" for the folder itself
  /// The safetensors files it covers, relative to the folder: the file itself, an index's
  /// shards (as it names them), a model's weights.
  std::vector<std::string> files;
};

/// What a local folder of weights holds, recursively, in natural order of the paths: model
/// directories, shard indexes and the other safetensors files, each file in one item. Any
/// folder: a model directory, a PEFT adapter, a diffusers pipeline with subfolders, what `tlio
/// shard` writes, a plain folder of files. A config.json of another kind (diffusers'
/// `_class_name`, PEFT's `peft_type`) does not make a model directory; names beginning with '.'
/// (.git, .cache, unfinished writes) are skipped. Error{io} when `dir` is not a directory.
TLIO_API std::vector<FolderItem> folder_contents(const std::filesystem::path& dir);

/// Checks one item of folder_contents(dir): a model with Model::open and check(), an index with
/// its shards (every tensor where it says), a file by every rule; quantized weights too. Throws
/// the first problem. Returns "" or, for a well-formed item quantized in a form tlio does not
/// decode, what that form is (Model::undecoded()).
TLIO_API std::string check_folder_item(const std::filesystem::path& dir, const FolderItem& item);

class TLIO_API Model {
 public:
  /// Opens a model directory: config.json, the tokenizer rule, model.safetensors or the shards
  /// of model.safetensors.index.json (all checked), mapped read-only. Does not run the
  /// architecture checks (see check()). `dir` may be a URL (http(s)://, s3://, gs://, hf://):
  /// its files are fetched by name (config.json, then the index or model.safetensors; HTTP has
  /// no listing). Without config.json the weights alone make a model of no architecture
  /// (config().arch empty); a folder with neither is Error{format, "model"}.
  static Model open(const std::filesystem::path& dir, OpenOptions options = {});

  /// The directory as given: a path or a URL (with any credentials it holds: messages use
  /// name()).
  const std::string& dir() const noexcept { return dir_; }
  /// The directory as messages name it (a URL without its user and password).
  const std::string& name() const noexcept { return name_; }
  const ModelConfig& config() const noexcept { return config_; }
  /// The weight files (one, or the shards in index order).
  const std::vector<File>& files() const noexcept { return files_; }
  const std::vector<std::string>& file_names() const noexcept { return file_names_; }
  bool sharded() const noexcept { return sharded_; }
  /// Every stored tensor, sorted by name.
  std::vector<std::string_view> tensor_names() const;
  const ModelTensor* find(std::string_view name) const noexcept;
  /// Throws Error{not_found}.
  TensorView view(std::string_view name) const;
  /// Quantized weights over all files, of every scheme (a weight whose parts are in different
  /// shards counts once, whole). Throws the Error{unsupported, "quant"} that names the form
  /// when the model is quantized in one tlio recognises but does not decode (see undecoded()):
  /// its stored tensors are not weights, and whoever asks for the weights learns why.
  const std::vector<QuantizedWeight>& quantized() const;
  /// What that form is ("quantized as HQQ (quant_method \"hqq\"), which tlio does not
  /// decode; ..."), or "" when every quantized weight is decoded: inspect and validate name it
  /// without failing, every reader of values is refused through quantized().
  std::string undecoded() const { return undecoded_ ? undecoded_->detail() : std::string(); }
  /// config.json's quantization_config (or a GPTQ folder's quantize_config.json) as JSON text;
  /// "" without one.
  const std::string& quantization_config() const noexcept { return quantization_config_; }
  /// config.json's text as Model::open read it; "" without one.
  const std::string& config_json() const noexcept { return config_json_; }

  /// The architecture checks: every expected tensor present with its shape (quantized weights
  /// count as their logical weight), nothing unexpected. Throws Error{format, "model"} naming
  /// the first missing, unexpected or misshapen tensor. Unknown architectures pass.
  void check() const;

 private:
  std::string dir_;
  std::string name_;
  std::string config_name_;  // config.json as messages name it (a URL without credentials)
  ModelConfig config_;
  std::vector<File> files_;
  std::vector<std::string> file_names_;
  bool sharded_ = false;
  std::vector<std::pair<std::string_view, ModelTensor>> index_;  // sorted by name
  std::vector<QuantizedWeight> quantized_;
  std::optional<Error> undecoded_;  // the refusal of a form tlio does not decode
  std::string quantization_config_;
  std::string config_json_;
};

// ---- sharding ----------------------------------------------------------------------------------

/// Parses a size the way transformers does: plain bytes, or a number with B, KB, MB, GB, TB
/// (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024). Error{invalid_argument} otherwise.
TLIO_API uint64_t parse_size(std::string_view text);

struct ShardReport {
  std::vector<std::string> files;  ///< written, in order (the index last when there is one)
  uint64_t total_size = 0;
};

/// Splits `src` into `out_dir` greedily in canonical order, each shard's tensor data within
/// `max_size` bytes (a larger tensor alone in its shard), each shard keeping the source's
/// metadata: model-0000i-of-0000n.safetensors plus model.safetensors.index.json, written last;
/// or a single model.safetensors and no index when everything fits.
TLIO_API ShardReport shard_file(const File& src, const std::filesystem::path& out_dir,
                                uint64_t max_size, const ProgressCallback& progress = {});

/// Merges the weights of a model directory (or a single-file one; either may be a URL) into one
/// canonical file. The shards' metadata must agree (Error{format, "index"} naming the
/// difference).
TLIO_API void merge_shards(const std::filesystem::path& dir, const std::filesystem::path& out,
                           const ProgressCallback& progress = {}, const OpenOptions& options = {});

}  // namespace tlio

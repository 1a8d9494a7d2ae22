// model/folder_rewrite.hpp: a model folder rewritten whole into another (or itself), shard by
// shard: what convert, quantize, dequantize and edit of a folder share. The output keeps the
// source's sharding and file names (a shard left with no tensor is not written) or is re-sharded
// by size, gets an index made from what was written, carries config.json (edited by the
// caller), tokenizer and generation files over, and replaces the previous contents of the
// output folder as a set: all of it or none.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "io/location.hpp"
#include "model/layout.hpp"
#include "model/location.hpp"
#include "model/shard_index.hpp"
#include "quant/tensor_set.hpp"
#include "tlio/file.hpp"
#include "tlio/folder_job.hpp"
#include "tlio/writer.hpp"

namespace tlio::detail {

/// The files besides the weights a rewritten folder carries over when the source has them (a
/// fixed list, so that every store, listable or not, gives the same folder; a checkpoint such as
/// `original/consolidated.pth` is never copied by accident).
inline constexpr const char* kCarriedFiles[] = {"config.json",
                                                "generation_config.json",
                                                "tokenizer.json",
                                                "tokenizer_config.json",
                                                "special_tokens_map.json",
                                                "added_tokens.json",
                                                "tokenizer.model",
                                                "vocab.json",
                                                "vocab.txt",
                                                "merges.txt",
                                                "chat_template.jinja",
                                                "chat_template.json",
                                                "preprocessor_config.json",
                                                "processor_config.json",
                                                "README.md",
                                                "LICENSE"};

/// A model folder's weights, opened, with the set of all their tensors.
struct FolderSource {
  FolderSource(Location dir, const OpenOptions& options);
  ModelLocation where;
  WeightFiles weights;
  std::unique_ptr<TensorSet> set;  // over weights.files, which never move once opened
  uint64_t data_bytes = 0;         // of every shard
};

struct FolderRewrite {
  /// Declares and writes the output of source shard `shard` into `w` (not committed); reports
  /// its progress as (done, total) of that shard's output.
  std::function<void(size_t shard, Writer& w, const ProgressCallback& progress)> write_shard;
  /// config.json's new text from its text; empty: copied as it is.
  std::function<std::string(const std::string& text, const std::string& name)> edit_config;
  /// Runs when every file is written and before any is published: a last check of the whole.
  std::function<void()> before_publish;
  /// Source bytes done / total, over all shards.
  ProgressCallback progress;
  /// 0: one output shard per source shard. Else the output is re-sharded: every module's
  /// tensors (a weight, its bias, a quantized weight's parts) in one shard, modules in source
  /// order, a new shard begun where the next module would pass this many tensor bytes.
  uint64_t max_shard_size = 0;
  /// Re-sharding runs write_shard twice per shard: first into a probe that stops once the
  /// declarations are made (what goes where is planned from them), then for real. Called in
  /// between: whatever write_shard counted in the first run is forgotten.
  std::function<void()> restart;
  /// When set, this call is one step of a job of units (tlio/folder_job.hpp): a unit per output
  /// shard. save_counts gives what write_shard counted since restart() as text (after a source
  /// shard's step, in the unit that runs it), load_counts adds such a text back (the commit, for
  /// each source shard in order); a rewrite without them does not run as a job.
  const FolderJob* job = nullptr;
  std::function<std::string()> save_counts;
  std::function<void(const std::string& text, const std::string& source)> load_counts;
};

/// The module a tensor belongs to, which a re-sharded folder keeps in one shard:
/// "model.layers.0.mlp.down_proj" for its weight, bias, SCB, weight_format and a bitsandbytes
/// weight's parts ("...weight.absmax"); else the name without its last part.
std::string_view module_of(std::string_view tensor);

/// What was published: the weight files, the index, the carried files, in that order. A job's
/// steps other than commit publish nothing and return nothing.
std::vector<std::string> rewrite_folder(const FolderSource& src, const Location& out,
                                        const FolderRewrite& how);

// The parts the job steps (model/folder_rewrite_job.cpp) share with the single-process rewrite.

/// One output shard of a re-sharded folder.
struct PlannedShard {
  std::string name;
  Metadata metadata;  // its sources' metadata, the first one's value where two differ
  std::vector<const TensorInfo*> tensors;
  uint64_t bytes = 0;
  size_t first_source = SIZE_MAX;  // its file opened when this source shard's turn comes
  size_t last_source = 0;          // and committed once this one is written
};

/// What each source shard's step declares, probed (no data made): with `pack`, the output
/// re-sharded by how.max_shard_size from it.
struct Resharding {
  std::vector<std::vector<TensorInfo>> declared;  // per source shard
  std::vector<Metadata> metadata;                 // per source shard
  std::vector<PlannedShard> shards;               // pointing into `declared`
};
Resharding plan_resharding(const FolderSource& src, const FolderRewrite& how, bool pack = true);

/// The index (for several shards), the carried files, the last check, the set published.
std::vector<std::string> finish_folder(const FolderSource& src, const Location& out,
                                       const FolderRewrite& how, OutputSet& set,
                                       std::vector<std::string> published, ShardIndex* index);

[[noreturn]] void throw_twice(const std::string& tensor, const std::string& a,
                              const std::string& b);

/// A job's step (how.job set).
std::vector<std::string> run_job_step(const FolderSource& src, const Location& out,
                                      const FolderRewrite& how);

}  // namespace tlio::detail

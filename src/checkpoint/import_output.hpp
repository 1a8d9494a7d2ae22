// checkpoint/import_output.hpp: what every import writes, whatever it reads (a torch.save
// checkpoint, a folder of them, a DCP folder): output files of tensors each written by its
// reader, split by --max-size, with their index and the source folder's config files, published
// as one set.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "io/atomic_file.hpp"
#include "io/location.hpp"
#include "model/folder_job.hpp"
#include "tlio/checkpoint.hpp"
#include "tlio/dtype.hpp"
#include "tlio/writer.hpp"

namespace tlio::detail {

struct OutputTensor {
  std::string name;
  Dtype source_dtype = Dtype::F32;  // as saved
  Dtype dtype = Dtype::F32;         // as written: the source's, or ImportOptions::dtype
  std::vector<uint64_t> shape;
  uint64_t out_bytes = 0;
  std::function<void(Writer&)> write;  // supplies its bytes (in `dtype`) to the declared tensor
};

struct OutputFile {
  std::string name;
  std::vector<OutputTensor> tensors;
  std::vector<std::pair<std::string, std::string>> aliases;  // dropped -> kept
};

/// The dtype a tensor saved as `dtype` is written as: ImportOptions::dtype for a floating one.
Dtype import_dtype(Dtype dtype, const ImportOptions& options);
/// Error{invalid} for an ImportOptions::dtype import cannot write.
void check_import_dtype(const ImportOptions& options);
/// Error{format} when nothing is imported and allow_empty is not set, saying what was dropped.
void refuse_if_empty(const CheckpointContents& contents, const ImportOptions& options);

/// Writes each output as a canonical safetensors file (metadata {"format": "pt"} and its alias
/// records): into `set` under `dir_or_file`'s folder by name, or (no set) the one output to
/// `dir_or_file`. Returns the bytes written; counts tensors in `report`.
uint64_t write_outputs(const Location& dir_or_file, OutputSet* set,
                       const std::vector<OutputFile>& outputs, const ImportOptions& options,
                       ImportReport& report);

/// A job's step (options.job) over the planned `outputs` (tlio/folder_job.hpp): plan, unit and
/// abort do their work and return false; commit checks every unit's file, adds it to `set`,
/// counts what the units wrote into `report` and returns true: the caller finishes the folder.
bool run_import_job(JobFolder& jf, const Location& out, const std::vector<OutputFile>& outputs,
                    const ImportOptions& options, ImportReport& report, OutputSet& set);

/// A model folder at `dst`: the outputs as they are, or split greedily by max_shard_size, named
/// as transformers names shards, their index when more than one, and the config and tokenizer
/// files of `src_dir` (when given) copied; published as one set.
void write_import_folder(const std::filesystem::path& src_dir, const std::filesystem::path& dst,
                         std::vector<OutputFile> outputs, const ImportOptions& options,
                         ImportReport& report);

}  // namespace tlio::detail

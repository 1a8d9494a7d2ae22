// model/rewrite.cpp: what a location holds (weights_kind, the one sniff), and the rewrites by
// location (tlio/rewrite.hpp) that send a file to its operation and a folder to the folder's.
#include "tlio/rewrite.hpp"

#include <fmt/core.h>

#include "common/json_text.hpp"
#include "io/location.hpp"
#include "tlio/error.hpp"
#include "tlio/gguf.hpp"
#include "tlio/location.hpp"
#include "tlio/model.hpp"

namespace tlio {

std::string_view weights_kind_name(WeightsKind kind) noexcept {
  switch (kind) {
    case WeightsKind::safetensors:
      return "safetensors";
    case WeightsKind::model_folder:
      return "model folder";
    case WeightsKind::gguf:
      return "gguf";
  }
  return "?";
}

WeightsKind weights_kind(const std::string& location, const OpenOptions& options) {
  if (is_gguf_location(location)) return WeightsKind::gguf;
  if (!is_standard_stream(location) && is_model_directory(location, options))
    return WeightsKind::model_folder;
  return WeightsKind::safetensors;
}

namespace {

Error invalid(const std::string& location, std::string detail) {
  return Error(ErrorCode::invalid_argument, Rule::none, {}, std::nullopt, std::move(detail),
               detail::Location::parse(location).display());
}

// The kind of `src`, with what each kind cannot take checked: true for a model folder.
bool folder_source(const std::string& src, const std::string& out, const FolderOptions& folder,
                   std::string_view operation) {
  // A job's abort needs no source (it may be gone): the folder's operation removes the job.
  if (folder.job && folder.job->step == FolderJob::Step::abort) return true;
  switch (weights_kind(src, folder.open)) {
    case WeightsKind::gguf:
      throw invalid(src,
                    fmt::format("a GGUF file: {} takes a safetensors file or a model folder (a "
                                "GGUF's import writes its tensors as a safetensors file, or "
                                "its model as a Hugging Face folder)",
                                operation));
    case WeightsKind::safetensors:
      if (folder.job)
        throw invalid(src, "a job of units rewrites a model folder, and this is one file");
      if (folder.max_shard_size != 0)
        throw invalid(src,
                      "a maximum shard size re-shards a model folder's output, and this is one "
                      "file (sharding makes a folder of one file)");
      return false;
    case WeightsKind::model_folder:
      if (is_standard_stream(out))
        throw invalid(
            src,
            "a model folder, so the output is a folder too, not standard output (merging its "
            "shards makes one file)");
      if (out.ends_with(".safetensors"))
        throw invalid(src,
                      fmt::format("a model folder, so the output is a folder too, not the file {} "
                                  "(merging its shards makes one file)",
                                  detail::quote_name(detail::Location::parse(out).display())));
      return true;
  }
  return false;
}

}  // namespace

ConvertFileReport convert_weights(const std::string& src, const std::string& out,
                                  const ConvertFileOptions& options, const FolderOptions& folder) {
  if (folder_source(src, out, folder, "convert")) return convert_folder(src, out, options, folder);
  return convert_file(File::open(src, folder.open), out, options);
}

ConvertFileReport copy_weights(const std::string& src, const std::string& out,
                               const TensorSelection& tensors, const ProgressCallback& progress,
                               const FolderOptions& folder) {
  if (folder_source(src, out, folder, "copy"))
    return copy_folder(src, out, tensors, progress, folder);
  EditOptions o;
  o.tensors = tensors;
  o.progress = progress;
  o.open = folder.open;
  const EditReport e = edit_file(src, out, o);
  ConvertFileReport r;
  r.kept = e.kept;
  r.dropped = e.dropped;
  r.renamed = e.renamed;
  r.ties_removed = e.ties_removed;
  r.ties_repointed = e.ties_repointed;
  r.data_bytes_in = e.source_data_bytes;
  r.data_bytes_out = e.data_bytes;
  return r;
}

EditReport edit_weights(const std::string& src, const std::string& out, const EditOptions& options,
                        const FolderOptions& folder) {
  FolderOptions how = folder;
  how.open = options.open;
  if (folder_source(src, out, how, "edit"))
    return edit_folder(src, out.empty() ? src : out, options, how);
  return edit_file(src, out, options);
}

QuantizeReport quantize_weights(const std::string& src, const std::string& out,
                                const QuantizeOptions& options, const FolderOptions& folder) {
  if (folder_source(src, out, folder, "quantize"))
    return quantize_folder(src, out, options, folder);
  return quantize_file(File::open(src, folder.open), out, options);
}

DequantizeReport dequantize_weights(const std::string& src, const std::string& out,
                                    std::optional<Dtype> dtype, const ProgressCallback& progress,
                                    const FolderOptions& folder) {
  if (folder_source(src, out, folder, "dequantize"))
    return dequantize_folder(src, out, dtype, progress, folder);
  return dequantize_file(File::open(src, folder.open), out, dtype, progress);
}

}  // namespace tlio

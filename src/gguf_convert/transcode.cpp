// gguf_convert/transcode.cpp: transcode (tlio/transcode.hpp): the source's kind and the target
// sent to the conversion that carries them; GGUF to MLX is the GGUF import with its weights put in
// MLX's layout (gguf_to_mlx.cpp).
#include "tlio/transcode.hpp"

#include <fmt/core.h>

#include "gguf_convert/folder_transcode.hpp"
#include "gguf_convert/gguf_import.hpp"
#include "tlio/error.hpp"
#include "tlio/gguf.hpp"
#include "tlio/weights_kind.hpp"

namespace tlio {

namespace {

constexpr std::string_view kTargetNames[] = {"mlx", "gguf", "compressed-tensors"};

}  // namespace

std::string_view transcode_target_name(TranscodeTarget target) noexcept {
  const auto i = static_cast<size_t>(target);
  return i < std::size(kTargetNames) ? kTargetNames[i] : "(not a target)";
}

std::optional<TranscodeTarget> transcode_target_named(std::string_view name) noexcept {
  for (size_t i = 0; i < std::size(kTargetNames); ++i)
    if (kTargetNames[i] == name) return static_cast<TranscodeTarget>(i);
  return std::nullopt;
}

TranscodeReport transcode(const std::string& src, const std::string& out_dir,
                          const TranscodeOptions& options) {
  if (transcode_target_name(options.to) == "(not a target)")
    throw Error(
        ErrorCode::invalid_argument, Rule::none, {}, std::nullopt,
        fmt::format("transcode target {} is not one tlio has (mlx, gguf, compressed-tensors)",
                    static_cast<int>(options.to)));
  if (options.dtype != Dtype::F32 && options.dtype != Dtype::F16 && options.dtype != Dtype::BF16)
    throw Error(ErrorCode::invalid_argument, Rule::none, {}, std::nullopt,
                fmt::format("transcode writes floats as F32, F16 or BF16, not {}",
                            dtype_name(options.dtype)));
  const WeightsKind kind = weights_kind(src, options.open);
  // A GGUF file goes to MLX; a model folder to any layout.
  if (kind != WeightsKind::model_folder &&
      (kind != WeightsKind::gguf || options.to != TranscodeTarget::mlx))
    throw Error(ErrorCode::unsupported, Rule::none, {}, std::nullopt,
                fmt::format("{} is a {}; transcode to {} reads {}", src, weights_kind_name(kind),
                            transcode_target_name(options.to),
                            options.to == TranscodeTarget::mlx ? "a GGUF file or a model folder"
                                                               : "a model folder"));
  if (kind == WeightsKind::model_folder && options.to != TranscodeTarget::gguf)
    return detail::folder_transcode(src, out_dir, options);
  TranscodeReport report;
  if (options.to == TranscodeTarget::gguf) {  // the export, its weights carried
    GgufExportOptions o;
    o.type = dtype_name(options.dtype);
    o.open = options.open;
    o.progress = options.progress;
    const GgufExportReport exported =
        detail::export_gguf_folder(src, out_dir, o, &options, &report);
    // report.plain: counted by the export (a stack's experts are one tensor, an item each)
    report.bytes_in = exported.bytes_in;
    report.bytes_out = exported.bytes_out;
    report.files = exported.files;
    return report;
  }
  const GgufFile file = GgufFile::open(src, options.open);
  const GgufImportReport imported = detail::import_gguf_folder(
      file, out_dir, GgufImportOptions{options.dtype, options.progress}, &options, &report);
  report.plain = imported.tensors - report.items.size();
  report.bytes_in = imported.data_bytes_in;
  report.bytes_out = imported.data_bytes_out;
  report.files = imported.files;
  return report;
}

}  // namespace tlio

// tlio/report.hpp: the figures of a model's values (tlio stats, tlio report): per tensor the
// counts, range, mean and standard deviation with a histogram; against a reference copy (the
// model a quantized one was made from), each tensor's error; and a report of the whole as JSON
// or as one self-contained HTML page.
//
// Values are read a chunk at a time straight from the inputs (quantized weights and GGUF
// tensors decoded a chunk at a time), chunks spread over every core and merged in order, so the
// figures never depend on the number of threads and memory stays bounded whatever the model.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "tlio/export.hpp"
#include "tlio/file.hpp"
#include "tlio/value_stats.hpp"
#include "tlio/weights.hpp"

namespace tlio {

/// One tensor's error against its reference (B): a = the model's value, b = the reference's,
/// both widened exactly; the figures are over the pairs where both are finite, the others
/// counted apart.
struct TensorError {
  std::string reference;            ///< the reference's name for it (a GGUF's, a Hugging Face one)
  std::string reference_type;       ///< its dtype, scheme or ggml type
  uint64_t nonfinite = 0;           ///< pairs with a NaN or an infinity on either side
  uint64_t nonfinite_mismatch = 0;  ///< of those, pairs whose two sides differ (NaN equals NaN)
  double rmse = 0;                  ///< sqrt(mean (a - b)^2); NaN when no pair is finite
  double max_abs = 0;  ///< largest |a - b|; infinite when a NaN or infinity is on one side only
  double cosine = 1;   ///< tlio::cosine_similarity (1 when both are all zero, 0 when one is)
  /// 10 log10(sum b^2 / sum (a - b)^2): infinite when a equals b, -inf when the reference is all
  /// zero and a is not, or when a NaN or infinity is on one side only; NaN when no pair is finite.
  double sqnr_db = 0;
};

struct TensorFigures {
  std::string name;
  std::string type;  ///< dtype ("BF16"), quantization scheme ("nf4") or ggml type ("Q4_K")
  std::vector<uint64_t> shape;  ///< logical
  uint64_t elements = 0;
  uint64_t stored_bytes = 0;
  /// The layer the name says it belongs to: its first dot-separated part that is a decimal
  /// number of at most 18 digits ("model.layers.12.mlp.up_proj.weight", "blk.12.ffn_up.weight":
  /// 12); none for the others.
  std::optional<uint64_t> layer;
  /// false for dtypes without numeric values and ggml types tlio does not decode: no figures
  bool numeric = true;
  ValueStats stats;
  /// Counts over [stats.min, stats.max] in equal bins (numpy.histogram's binning); all in the
  /// first bin when min == max; all zero when there is no finite value or max - min is infinite.
  std::vector<uint64_t> histogram;
  std::optional<TensorError> error;  ///< with a reference that has the tensor with the same shape
  /// Why the tensor has no figures (a ggml type tlio does not decode), or no error though the
  /// reference has it (the shapes differ); "" otherwise.
  std::string note;
};

struct FigureOptions {
  unsigned bins = 64;
  /// The reference, for errors: its tensors paired with the model's by name, or across a GGUF
  /// file and a Hugging Face folder through the GGUF export's names (Q and K rows un-permuted).
  const Weights* reference = nullptr;
  ProgressCallback progress;  ///< stored bytes read / all
};

/// The figures of `names` (Weights::value_names() of `model`, or some of them) in their order.
/// Error{not_found} for a name `model` does not have.
TLIO_API std::vector<TensorFigures> tensor_figures(const Weights& model,
                                                   std::span<const std::string> names,
                                                   const FigureOptions& options = {});

struct ReportOptions {
  std::string reference;  ///< a location compared against ("" for none)
  std::string filter;     ///< a regex searched in names: only those reported ("" all)
  unsigned bins = 64;
  OpenOptions open;
  ProgressCallback progress;
};

struct ModelReport {
  std::string name;          ///< the model as messages name it
  std::string format;        ///< "safetensors", "model folder" or "gguf"
  std::string reference;     ///< as messages name it; "" without one
  uint64_t parameters = 0;   ///< logical values of the tensors reported
  uint64_t stored_size = 0;  ///< bytes of the weight files
  uint64_t files = 0;        ///< weight files
  /// Parameters by dtype, scheme or ggml type, the most first.
  std::vector<std::pair<std::string, uint64_t>> types;
  /// The file's metadata (a folder's first shard), a GGUF's scalar keys; a folder's config.json
  /// and quantization_config, each as one entry.
  std::vector<std::pair<std::string, std::string>> metadata;
  std::vector<TensorFigures>
      tensors;  ///< in natural order of names ("layers.2" before "layers.10")
  /// With a reference: the names one side has and the other lacks.
  std::vector<std::string> only_in_model, only_in_reference;
};

/// The report of the model at `location` (a file, a model folder or a GGUF, any location).
TLIO_API ModelReport make_report(const std::string& location, const ReportOptions& options = {});

/// The report as one JSON document (the figures `tlio report --json` prints; non-finite numbers
/// as null).
TLIO_API std::string report_json(const ModelReport& report);

/// The report as one self-contained HTML page: inline SVG, CSS and a small sorting script,
/// nothing fetched from anywhere.
TLIO_API std::string report_html(const ModelReport& report);

/// Writes report_html(report) to `out` (a path, "-", or a URL of a store that takes writes)
/// atomically, as every output: whole or not at all.
TLIO_API void write_report_html(const ModelReport& report, const std::string& out);

}  // namespace tlio

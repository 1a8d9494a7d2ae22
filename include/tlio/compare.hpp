// tlio/compare.hpp: comparing the values of two files (tlio diff), across dtypes and against
// quantized weights: "how much did BF16, or NF4, lose" in one call.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tlio/export.hpp"
#include "tlio/file.hpp"
#include "tlio/shape.hpp"
#include "tlio/writer.hpp"

namespace tlio {

struct CompareOptions {
  /// A value of A is within tolerance of B's when |a - b| <= atol + rtol * |b| (B is the
  /// reference, as in numpy's isclose), or both are NaN, or both the same infinity.
  double atol = 0;
  double rtol = 0;
  ProgressCallback progress;  ///< elements compared / all
  /// A regex searched in names (logical names for quantized weights): only the names it finds
  /// are compared or listed as only in one file. Empty: every name. A bad regex is
  /// Error{invalid_argument}.
  std::string filter;
  /// Each side's quantization_config (Model::quantization_config() of a folder; empty for a
  /// file): the options of the Hub's formats that their tensors do not show (GPTQ v2, a block).
  std::string quantization_config_a, quantization_config_b;
};

/// One name both files have. A quantized weight counts under its logical name and is compared
/// dequantized; its stored tensors are not listed on their own.
struct TensorComparison {
  std::string name;
  std::string b_name;  ///< B's name for it when that is another (a GGUF file against a folder)
  std::string a_dtype, b_dtype;  ///< a dtype ("BF16") or a quantization scheme ("nf4")
  Shape shape;                   ///< logical (A's, when the shapes differ)
  uint64_t elements = 0;
  /// false when the values cannot be compared (shapes differ, or a dtype without numeric
  /// values on one side): `note` says why.
  bool compared = false;
  std::string note;
  double max_abs = 0;  ///< largest |a - b| (infinite where one side is NaN or infinite alone)
  double max_rel = 0;  ///< largest |a - b| / |b| (infinite where b is 0 and a is not)
  double rmse =
      0;  ///< sqrt(mean (a - b)^2) over the finite pairs; NaN when none is and some pair is not
  double cosine = 1;  ///< cosine similarity of the finite pairs (1 for two zero tensors)
  uint64_t outside =
      0;  ///< elements outside tolerance (tlio::difference_figures: one set of rules with reports)
  bool equal = false;  ///< compared and no element outside tolerance
};

struct CompareReport {
  std::vector<std::string> only_in_a, only_in_b;  ///< names (logical for quantized weights)
  std::vector<TensorComparison> tensors;          ///< the names both have, in natural order
  bool equal = false;  ///< no name in one file only, and every common tensor equal
};

/// Compares every name of `a` with the same name in `b`: values converted to F64 (quantized
/// weights dequantized first, in the dtype dequantize writes by default, so that a weight
/// equals its dequantized copy), chunk by chunk, over every core; dtypes without numeric
/// values (BOOL aside) are compared by their bytes when both sides have the same dtype. Reads
/// each tensor once; memory stays bounded by a few chunks per thread. Results do not depend on
/// the number of threads.
TLIO_API CompareReport compare_files(const File& a, const File& b,
                                     const CompareOptions& options = {});
/// The same for two sets of files, each read as one namespace (the shards of a model folder:
/// Model::files()); a quantized weight whose parts are in different files of a set is one
/// weight. A name in two files of one set is Error{format, "index"}.
TLIO_API CompareReport compare_files(std::span<const File> a, std::span<const File> b,
                                     const CompareOptions& options = {});

class Weights;
/// The same for any two inputs of weights (tlio/weights.hpp). Files and folders are compared as
/// compare_files compares them (each folder's quantization_config applied). With a GGUF file on
/// either side, each value name of A is paired with B's as tlio::make_report pairs a model with
/// its reference: the same name, or across a GGUF file and a Hugging Face folder the name the
/// GGUF export gives it (its config.json's architecture), with the Q and K rows the export
/// interleaves put back in place; GGUF tensors decoded to F32 as ggml decodes them. A GGUF file
/// and an input of which no name pairs is Error{unsupported} saying how they would.
TLIO_API CompareReport compare_weights(const Weights& a, const Weights& b,
                                       const CompareOptions& options = {});

}  // namespace tlio

// tlio/quant.hpp: quantized weights. A quantized weight is one logical tensor stored as several:
//   tinyllm int4: `<w>.qweight` U8 [out, in/2] + `<w>.scales` F16 [out, in/group];
//   bitsandbytes 4-bit (nf4/fp4): `<w>` packed codes + `<w>.absmax`, `<w>.quant_map`
//     [+ `<w>.nested_absmax`, `<w>.nested_quant_map`] + `<w>.quant_state.bitsandbytes__<type>`;
//   LLM.int8: `<p>.weight` I8 [out, in] + `<p>.SCB` F32 [out] [+ `<p>.weight_format`].
// This header gives the int4 kernels (bnb.hpp has the bitsandbytes ones), the detection and
// consistency checks of quantized weights in a file, readers that dequantize on demand, and
// whole-file quantize and dequantize.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tlio/dtype.hpp"
#include "tlio/export.hpp"
#include "tlio/file.hpp"
#include "tlio/shape.hpp"
#include "tlio/writer.hpp"

namespace tlio {

// ---- tinyllm int4-g<group>-sym -----------------------------------------------------------------

/// Parses "int4-g<group>-sym" (group a positive decimal without leading zeros); nullopt otherwise.
TLIO_API std::optional<uint64_t> parse_int4_scheme(std::string_view scheme) noexcept;
TLIO_API std::string int4_scheme_name(uint64_t group);

/// Quantizes a row-major [rows, cols] matrix of F32 values: per (row, group) the scale is
/// absmax / 7 in F32 rounded to F16, and q = clamp(round_half_even(w / scale), -8, 7); a group
/// whose scale is 0 stores q = 0. `qweight` holds rows * cols / 2 bytes (low nibble = even
/// column), `scales` rows * cols / group F16 bit patterns. Throws Error{invalid_argument} for odd
/// cols, a group that does not divide cols, sizes that do not match, a NaN or infinite weight,
/// or a scale beyond F16's range.
TLIO_API void int4_quantize(std::span<const float> weights, uint64_t rows, uint64_t cols,
                            uint64_t group, std::span<uint8_t> qweight,
                            std::span<uint16_t> scales);

/// Dequantizes rows [first_row, first_row + row_count) into `dst` as F32, F16 or BF16
/// (row_count * cols elements). `qweight`/`scales` are the whole matrix's.
TLIO_API void int4_dequantize_rows(std::span<const uint8_t> qweight,
                                   std::span<const uint16_t> scales, uint64_t rows,
                                   uint64_t cols, uint64_t group, uint64_t first_row,
                                   uint64_t row_count, Dtype out, std::span<std::byte> dst);

// ---- quantized weights in a file ---------------------------------------------------------------

/// One logical weight stored quantized.
struct QuantizedWeight {
  std::string name;                 ///< logical name, e.g. "model.layers.0.mlp.up_proj.weight"
  std::string scheme;               ///< "int4-g<group>-sym", "nf4", "fp4" or "int8"
  Shape shape;                      ///< logical shape
  Dtype dtype = Dtype::F32;         ///< what dequantize restores by default (bnb 4-bit: the original)
  uint64_t blocksize = 0;           ///< int4: the group; bnb 4-bit: the block; int8: 0
  bool nested = false;              ///< bnb 4-bit: the absmax is itself quantized
  std::vector<std::string> stored;  ///< the stored tensors it is made of
  uint64_t stored_bytes = 0;
};

/// Finds the quantized weights of a valid file and checks their consistency (DECISIONS.md), in
/// file order of their main tensor. int4: every `.qweight` has its `.scales` and the reverse,
/// dtypes U8/F16, shapes that agree with the group of the metadata `quant` (inferred from shapes
/// without it); a `quant` of another scheme or a malformed one is refused (rule "int4").
/// bitsandbytes: the quant_state JSON, its companions' dtypes and sizes, the packed size and the
/// stored quant_map (rules "BNB-001".."BNB-004", else "bnb"). Throws Error{format} naming the
/// tensor.
TLIO_API std::vector<QuantizedWeight> find_quantized_weights(const File& f);

/// Dequantizes a quantized weight of an open file row by row, without materialising it.
class TLIO_API Int4Weight {
 public:
  /// `name` is the logical name (without `.qweight`). Checks the pair like
  /// find_quantized_weights. Holds a view of the packed bytes (zero-copy with mmap), so it may
  /// outlive `f`.
  Int4Weight(const File& f, std::string_view name);
  uint64_t rows() const noexcept { return rows_; }
  uint64_t cols() const noexcept { return cols_; }
  uint64_t group() const noexcept { return group_; }
  /// Rows [first, first + count) as `out` (F32, F16 or BF16) into dst.
  void dequantize_rows(uint64_t first, uint64_t count, Dtype out, std::span<std::byte> dst) const;

 private:
  TensorView qweight_;
  std::vector<uint16_t> scales_;  // small: copied, so aligned
  uint64_t rows_ = 0, cols_ = 0, group_ = 0;
};

/// Dequantizes any quantized weight of an open file (int4, nf4, fp4, int8) in ranges of elements
/// of the row-major logical tensor, without materialising it. Holds views of the packed bytes
/// (zero-copy with mmap) and a copy of the small scales, so it may outlive `f`.
class TLIO_API QuantizedReader {
 public:
  /// `name` is the logical name. Throws Error{not_found} when no quantized weight has it, and
  /// the errors of find_quantized_weights.
  QuantizedReader(const File& f, std::string_view name);
  /// `weight` is one of find_quantized_weights(f)'s results: its checks are not run again, so
  /// readers for every weight of a file cost one detection, not one each.
  QuantizedReader(const File& f, QuantizedWeight weight);
  const QuantizedWeight& weight() const noexcept { return weight_; }
  uint64_t element_count() const noexcept;
  /// Elements [first, first + count) as `out` (F32, F16 or BF16, rounded to nearest even).
  void read(uint64_t first, uint64_t count, Dtype out, std::span<std::byte> dst) const;

 private:
  QuantizedWeight weight_;
  TensorView data_;            // int4 qweight, bnb packed codes, int8 CB
  std::vector<float> scales_;  // bnb: effective absmax; int8: SCB
  std::vector<uint16_t> int4_scales_;
};

// ---- whole files -------------------------------------------------------------------------------

struct QuantizeOptions {
  std::string scheme;   ///< "int4-g<G>-sym", "nf4", "fp4" or "int8"
  std::string include;  ///< regex searched in names; replaces the default selection
  std::string exclude;  ///< regex searched in names; removed from the selection
  ProgressCallback progress;  ///< output bytes done / total
  uint64_t blocksize = 64;    ///< nf4/fp4: 32, 64, ..., 4096
  bool nested = false;        ///< nf4/fp4: quantize the absmax too (compress_statistics)
  Dtype storage = Dtype::U8;  ///< nf4/fp4: dtype the packed bytes are stored as (quant_storage)
};

/// Whether `scheme` is one quantize_file knows.
TLIO_API bool is_quant_scheme(std::string_view scheme) noexcept;

struct QuantizeReport {
  struct Item {
    std::string name;
    bool quantized = false;
    std::string note;  ///< why a default-selected tensor was skipped
    double rmse = 0, max_abs_error = 0;
    uint64_t bytes_before = 0, bytes_after = 0;
  };
  std::vector<Item> items;  ///< selected tensors, in file order
  uint64_t data_bytes_before = 0, data_bytes_after = 0;
};

/// Writes `src` with the selected weights quantized (default: the 2-D `*_proj.weight` matrices).
/// int4: metadata keeps its keys and gets format=tinyllm and quant=<scheme>. nf4/fp4/int8: the
/// layout transformers saves for Linear4bit / Linear8bitLt, metadata unchanged. A
/// default-selected tensor that cannot be quantized (its shape or dtype) is skipped with a note;
/// an explicitly included one is an Error{invalid_argument}.
TLIO_API QuantizeReport quantize_file(const File& src, const std::filesystem::path& out,
                                      const QuantizeOptions& options);

struct DequantizeReport {
  size_t restored = 0;
  std::string scheme;  ///< the schemes found, comma-separated
};

/// Writes `src` with every quantized weight restored as `<name>` in its logical shape, of dtype
/// `dtype` (F32, F16 or BF16) or, without one, its QuantizedWeight::dtype (bnb 4-bit: the
/// original dtype; others F32). Drops the `quant` metadata key.
TLIO_API DequantizeReport dequantize_file(const File& src, const std::filesystem::path& out,
                                          std::optional<Dtype> dtype = std::nullopt,
                                          const ProgressCallback& progress = {});

}  // namespace tlio

// tlio/quant.hpp: quantized weights. A quantized weight is one logical tensor stored as several:
//   tinyllm int4: `<w>.qweight` U8 [out, in/2] + `<w>.scales` F16 [out, in/group];
//   bitsandbytes 4-bit (nf4/fp4): `<w>` packed codes + `<w>.absmax`, `<w>.quant_map`
//     [+ `<w>.nested_absmax`, `<w>.nested_quant_map`] + `<w>.quant_state.bitsandbytes__<type>`;
//   LLM.int8: `<p>.weight` I8 [out, in] + `<p>.SCB` F32 [out] [+ `<p>.weight_format`];
// and the forms Hugging Face Hub models ship (read only; FP8 written too):
//   FP8: `<p>.weight` F8_E4M3 + `<p>.weight_scale_inv` (DeepSeek/Qwen blocks) or `<p>.weight_scale`
//     (per tensor or per channel: compressed-tensors, AutoFP8, FBGEMM);
//   GPTQ: `<p>.qweight` I32 [in*bits/32, out] + `<p>.qzeros` + `<p>.scales` + `<p>.g_idx`;
//   AWQ: `<p>.qweight` I32 [in, out/8] + `<p>.qzeros` + `<p>.scales` (GEMM), or [out, in/8] (GEMV);
//   MXFP4, NVFP4, compressed-tensors integers (docs/quantization.md).
// This header gives the quantization schemes as types (QuantScheme: a scheme and its options,
// named, parsed and bounded in one registry), the detection and consistency checks of quantized
// weights in a file, a reader that dequantizes any of them on demand, and whole-file quantize
// and dequantize. The kernels are internal (src/quant/<family>/, in tlio::detail).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "tlio/bnb.hpp"
#include "tlio/dtype.hpp"
#include "tlio/export.hpp"
#include "tlio/file.hpp"
#include "tlio/shape.hpp"
#include "tlio/writer.hpp"

namespace tlio {

namespace detail {
class WeightDecoder;
}  // namespace detail

// ---- schemes ---------------------------------------------------------------------------------

/// The quantization schemes tlio reads and writes.
enum class SchemeKind : uint8_t {
  int4,      ///< tinyllm "int4-g<group>-sym": <w>.qweight + <w>.scales
  bnb_4bit,  ///< bitsandbytes "nf4" / "fp4" (Linear4bit), optionally nested
  llm_int8,  ///< bitsandbytes "int8" (LLM.int8, Linear8bitLt)
  fp8,       ///< F8_E4M3 weights times F32/BF16/F16 scales or E8M0 (MXFP8); blocks and rows written
  gptq,      ///< GPTQ v1 and v2, 2/3/4/8 bits (read only)
  awq,       ///< AWQ GEMM and GEMV, 4 bits (read only)
  mxfp4,     ///< FP4 E2M1 codes times E8M0 scales per 32: gpt-oss, compressed-tensors (read only)
  nvfp4,     ///< FP4 E2M1 codes times E4M3 scales per 16 and a global scale (read only)
  ct_int,    ///< compressed-tensors integers, 1-8 bits, packed or I8 (read only)
  mlx,       ///< MLX's modes: affine 2-8 bits with scales and biases, mxfp4, mxfp8, nvfp4
};

struct Int4Options {
  uint64_t group = 32;  ///< values per F16 scale along a row
  friend bool operator==(const Int4Options&, const Int4Options&) = default;
};
struct Bnb4bitOptions {
  BnbQuantType type = BnbQuantType::nf4;
  uint64_t blocksize = 64;    ///< 32, 64, ..., 4096
  bool nested = false;        ///< quantize the absmax too (compress_statistics)
  Dtype storage = Dtype::U8;  ///< dtype the packed bytes are stored as (quant_storage)
  friend bool operator==(const Bnb4bitOptions&, const Bnb4bitOptions&) = default;
};
struct LlmInt8Options {
  friend bool operator==(const LlmInt8Options&, const LlmInt8Options&) = default;
};
/// What one scale of an FP8 weight covers.
enum class Fp8Granularity : uint8_t { tensor, channel, block };
struct Fp8Options {
  Fp8Granularity granularity = Fp8Granularity::block;
  uint64_t block_rows = 128, block_cols = 128;  ///< block only
  /// E8M0 scales (powers of two): MXFP8's per block_cols inputs (U8 or F8_E8M0), or a block
  /// grid's `weight_scale_inv` in F8_E8M0 (transformers' scale_fmt "ue8m0")
  bool e8m0 = false;
  friend bool operator==(const Fp8Options&, const Fp8Options&) = default;
};
struct GptqOptions {
  uint64_t bits = 4;     ///< 2, 3, 4 or 8
  uint64_t group = 128;  ///< inputs per scale; 0: one group (group_size -1)
  bool v2 = false;       ///< checkpoint_format gptq_v2: zero points stored as they are, not minus 1
  friend bool operator==(const GptqOptions&, const GptqOptions&) = default;
};
struct AwqOptions {
  uint64_t bits = 4;
  uint64_t group = 128;  ///< inputs per scale
  /// AutoAWQ's GEMV layout (config version "gemv"): qweight [out, in/8] in natural order
  bool gemv = false;
  friend bool operator==(const AwqOptions&, const AwqOptions&) = default;
};
struct Mxfp4Options {
  /// gpt-oss's <p>_blocks [E, out, in/32, 16], read in transformers' layout [E, in, out]
  bool transposed = false;
  friend bool operator==(const Mxfp4Options&, const Mxfp4Options&) = default;
};
struct Nvfp4Options {
  /// NVIDIA ModelOpt's form: the scale times weight_scale_2 (and code 8 is +0), where
  /// compressed-tensors divides by weight_global_scale (and code 8 is -0)
  bool modelopt = false;
  friend bool operator==(const Nvfp4Options&, const Nvfp4Options&) = default;
};
struct CtIntOptions {
  uint64_t bits = 4;    ///< 1..8
  uint64_t group = 0;   ///< inputs per scale; 0: one scale per row (channel) or per tensor
  bool tensor = false;  ///< one scale for the whole weight
  bool asym = false;    ///< zero points stored beside the scales
  bool packed = true;   ///< pack-quantized I32 words; false: int-quantized I8 values
  friend bool operator==(const CtIntOptions&, const CtIntOptions&) = default;
};

/// mx.quantize's modes.
enum class MlxMode : uint8_t {
  affine,  ///< codes of `bits` bits times a scale plus a bias per group, both in the weights' dtype
  mxfp4,   ///< E2M1 codes times an E8M0 scale per 32
  mxfp8,   ///< E4M3 codes times an E8M0 scale per 32
  nvfp4,   ///< E2M1 codes times an E4M3 scale per 16
};
struct MlxOptions {
  MlxMode mode = MlxMode::affine;
  uint64_t bits = 4;    ///< affine: 2, 3, 4, 5, 6 or 8; the others' own (4, 8, 4)
  uint64_t group = 64;  ///< affine: 32, 64 or 128; the others' own (32, 32, 16)
  friend bool operator==(const MlxOptions&, const MlxOptions&) = default;
};

/// A quantization scheme with its options. Made from a name ("int4-g32-sym", "nf4", "fp4",
/// "int8", "fp8-block", "fp8"), then options set by name; every scheme's name syntax, options and
/// bounds live in one registry (quant_schemes()), which the CLI, C API and Python ask too.
class TLIO_API QuantScheme {
 public:
  using Options = std::variant<Int4Options, Bnb4bitOptions, LlmInt8Options, Fp8Options, GptqOptions,
                               AwqOptions, Mxfp4Options, Nvfp4Options, CtIntOptions, MlxOptions>;

  /// int4-g32-sym.
  QuantScheme() = default;
  /// Throws Error{invalid_argument} for options out of bounds (a group of 0, a bnb blocksize
  /// outside 32..4096, a storage dtype bitsandbytes cannot hold packed codes in).
  explicit QuantScheme(Options options);
  /// Throws Error{unsupported} naming the schemes there are, for a name no scheme has.
  static QuantScheme parse(std::string_view name);
  static std::optional<QuantScheme> try_parse(std::string_view name) noexcept;

  SchemeKind kind() const noexcept { return static_cast<SchemeKind>(options_.index()); }
  const Options& options() const noexcept { return options_; }
  /// "int4-g32-sym", "nf4", "fp4", "int8", "fp8-block128x128" or "fp8-channel" (options besides
  /// the int4 group and the FP8 block are not in it); for the forms tlio reads only:
  /// "fp8-tensor", "fp8-group32", "mxfp8" ("-ue8m0": E8M0 block scales), "gptq-4bit-g128" ("-v2";
  /// no "-g" with one group), "awq-4bit-g128" ("-gemv"), "mxfp4", "nvfp4", "ct-int4-g128"
  /// ("-channel", "-tensor"; "-asym" with zero points); MLX's "mlx-affine-4bit-g64", "mlx-mxfp4",
  /// "mlx-mxfp8", "mlx-nvfp4".
  std::string name() const;
  /// The int4, GPTQ, AWQ or compressed-tensors int group, the bnb 4-bit blocksize, the FP8
  /// block's rows, the MX (32) or NV (16) FP4 group; 0 otherwise.
  uint64_t block() const noexcept;
  /// bnb 4-bit: whether the absmax is itself quantized.
  bool nested() const noexcept;

  /// Sets option `option` ("blocksize", "nested", "storage", as quant_schemes() lists them) from
  /// its text ("64", "true"/"false", a dtype name). Throws Error{invalid_argument} when this
  /// scheme has no such option ("nested is an option of nf4, fp4, not of int8") or the value
  /// is out of its bounds.
  void set_option(std::string_view option, std::string_view value);

  friend bool operator==(const QuantScheme& a, const QuantScheme& b) noexcept;

 private:
  Options options_;
};

/// What an option's value is.
enum class OptionKind : uint8_t {
  flag,    ///< true or false
  number,  ///< an unsigned integer
  dtype,   ///< a dtype name
};

/// One option of a scheme, for help texts and option parsers.
struct SchemeOptionInfo {
  std::string_view name;  ///< as set_option takes it: "blocksize"
  OptionKind kind;
  std::string_view help;  ///< "values per absmax, 32..4096 (default 64)"
  std::string_view values =
      {};  ///< every value it takes, space-separated, when few: "32 64 ... 4096"
};

/// One scheme as the registry describes it.
struct SchemeInfo {
  SchemeKind kind;
  std::string_view syntax;   ///< "int4-g<group>-sym", "nf4, fp4", "int8"
  std::string_view example;  ///< a name it parses: "int4-g32-sym"
  std::string_view layout;   ///< what it stores, one or more lines separated by '\n'
  std::span<const SchemeOptionInfo> options;
  bool read_only = false;  ///< found and dequantized, never written by quantize
};

/// Every scheme, in the order help texts list them.
TLIO_API std::span<const SchemeInfo> quant_schemes() noexcept;

// ---- quantized weights in a file ---------------------------------------------------------------

/// One logical weight stored quantized.
struct QuantizedWeight {
  std::string name;          ///< logical name, e.g. "model.layers.0.mlp.up_proj.weight"
  QuantScheme scheme;        ///< with the options the file records (group, block, nesting)
  Shape shape;               ///< logical shape
  Dtype dtype = Dtype::F32;  ///< what dequantize restores by default (bnb 4-bit: the original)
  std::vector<std::string> stored;  ///< the stored tensors it is made of
  uint64_t stored_bytes = 0;
};

/// Finds the quantized weights of a valid file and checks their consistency (docs/quantization.md),
/// in file order of their main tensor. int4: every `.qweight` has its `.scales` and the reverse,
/// dtypes U8/F16, shapes that agree with the group of the metadata `quant` (inferred from shapes
/// without it); a `quant` of another scheme or a malformed one is refused (rule "int4").
/// bitsandbytes: the quant_state JSON, its companions' dtypes and sizes, the packed size and the
/// stored quant_map (rules "BNB-001".."BNB-004", else "bnb"). Throws Error{format} naming the
/// tensor.
TLIO_API std::vector<QuantizedWeight> find_quantized_weights(const File& f);
/// The same over a set of files read as one namespace (a model's shards): a weight's parts may
/// be in any of them.
TLIO_API std::vector<QuantizedWeight> find_quantized_weights(std::span<const File> files);
/// The same with the model's quantization_config (JSON text, as Model::quantization_config()
/// gives it): the Hub's formats take options from it that their tensors do not show (GPTQ's
/// checkpoint_format, a block size), and a method tlio does not decode is refused by name.
TLIO_API std::vector<QuantizedWeight> find_quantized_weights(std::span<const File> files,
                                                             std::string_view quantization_config);

/// Dequantizes any quantized weight of an open file (every scheme of quant_schemes()) in ranges of
/// elements of the row-major logical tensor, without materialising it. Holds views of the packed
/// bytes (zero-copy with mmap) and a copy of the small scales, so it may outlive `f`.
class TLIO_API QuantizedReader {
 public:
  /// `name` is the logical name. Throws Error{not_found} when no quantized weight has it, and
  /// the errors of find_quantized_weights.
  QuantizedReader(const File& f, std::string_view name);
  /// `weight` is one of find_quantized_weights(f)'s results: its checks are not run again, so
  /// readers for every weight of a file cost one detection, not one each.
  QuantizedReader(const File& f, QuantizedWeight weight);
  /// A weight of a set of files (a model's shards): its parts may be in any of them.
  QuantizedReader(std::span<const File> files, QuantizedWeight weight);
  const QuantizedWeight& weight() const noexcept { return weight_; }
  uint64_t element_count() const noexcept;
  /// Elements [first, first + count) as `out` (F32, F16 or BF16, rounded to nearest even).
  /// Safe to call from several threads at once.
  void read(uint64_t first, uint64_t count, Dtype out, std::span<std::byte> dst) const;

 private:
  QuantizedWeight weight_;
  std::shared_ptr<const detail::WeightDecoder> decoder_;  // the scheme's, from the registry
};

// ---- whole files -------------------------------------------------------------------------------

struct QuantizeOptions {
  QuantScheme scheme;         ///< with its options
  std::string include;        ///< regex searched in names; replaces the default selection
  std::string exclude;        ///< regex searched in names; removed from the selection
  ProgressCallback progress;  ///< output bytes done / total
  /// Quantize 1-D (and 0-D) tensors that `include` names too. Without it biases and norms are
  /// never quantized, whatever the selection.
  bool allow_1d = false;
};

struct QuantizeReport {
  struct Item {
    std::string name;
    bool quantized = false;
    std::string note;  ///< why a default-selected tensor was skipped
    double rmse = 0, max_abs_error = 0;
    uint64_t bytes_before = 0, bytes_after = 0;
  };
  std::vector<Item> items;  ///< selected tensors, in file order
  /// The other tensors, written as they are, grouped by why (reasons in a fixed order: already
  /// quantized, not selected, excluded, 1-D). Quantized weights count under their logical name.
  struct Kept {
    std::string reason;
    std::vector<std::string> names;
  };
  std::vector<Kept> kept;
  uint64_t data_bytes_before = 0, data_bytes_after = 0;
};

/// Writes `src` with the selected weights quantized (default: the weights of linear layers,
/// whatever their names: 2-D `*weight` tensors that are not embeddings or the output head;
/// docs/quantization.md).
/// int4: metadata keeps its keys and gets format=tinyllm and quant=<scheme>. nf4/fp4/int8: the
/// layout transformers saves for Linear4bit / Linear8bitLt, metadata unchanged. A
/// default-selected tensor that cannot be quantized (its shape or dtype) is skipped with a note;
/// an explicitly included one is an Error{invalid_argument}. 1-D tensors are kept unless
/// `include` names them and `allow_1d` is set. A selection that quantizes no tensor is an
/// Error{invalid_argument} saying what the selection was and why each tensor was kept, with
/// nothing written.
TLIO_API QuantizeReport quantize_file(const File& src, const std::filesystem::path& out,
                                      const QuantizeOptions& options);

struct DequantizeReport {
  size_t restored = 0;
  std::string scheme;  ///< the schemes found, comma-separated
};

/// Writes `src` with every quantized weight restored as `<name>` in its logical shape, of dtype
/// `dtype` (F32, F16 or BF16) or, without one, its QuantizedWeight::dtype (bnb 4-bit: the
/// original dtype; FP8 blocks, MXFP8, MXFP4 and NVFP4 BF16; the other Hub formats their scales'
/// dtype; int4 and int8 F32). Drops the `quant` metadata key.
TLIO_API DequantizeReport dequantize_file(const File& src, const std::filesystem::path& out,
                                          std::optional<Dtype> dtype = std::nullopt,
                                          const ProgressCallback& progress = {});

}  // namespace tlio

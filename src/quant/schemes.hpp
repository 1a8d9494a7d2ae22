// quant/schemes.hpp: the scheme registry. One entry per SchemeKind owns everything that depends
// on the scheme: its name syntax and options (with their bounds), detection and checks of its
// weights in a set of tensors, the decoder that dequantizes one weight, and the encoder that
// quantize_file streams tensors through. Everything else asks scheme_entry(kind).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "quant/tensor_set.hpp"
#include "tlio/quant.hpp"
#include "tlio/writer.hpp"

namespace tlio::detail {

/// The metadata key a layout that fixes "format" (tinyllm int4) keeps the source's format under,
/// so that dequantize gives it back ("pt": what transformers 4.x asks of a model's weights).
inline constexpr const char* kSourceFormat = "source_format";

/// Dequantizes one weight by element ranges; made once per weight, shared by readers.
class WeightDecoder {
 public:
  virtual ~WeightDecoder() = default;
  /// Elements [first, first + count) (already bounds-checked) as F32, F16 or BF16 into dst.
  virtual void read(uint64_t first, uint64_t count, Dtype out, std::span<std::byte> dst) const = 0;
  /// The run of elements this decoder reads fastest when reads start on multiples of it (a
  /// transposed layout's group of inputs across every output), or 0 for any.
  virtual uint64_t natural_chunk() const { return 0; }
};

/// Quantizes whole tensors of a file into a Writer (quantize_file's work for one scheme).
class WeightEncoder {
 public:
  virtual ~WeightEncoder() = default;
  /// Why `t` cannot be quantized, or "".
  virtual std::string unquantizable(const TensorInfo& t) const = 0;
  /// The stored tensors that will replace `t` (checked for name clashes, then declared).
  virtual std::vector<TensorData> outputs(const File& src, const TensorInfo& t) = 0;
  /// Streams `t` quantized into the tensors outputs() declared; reports its error in `item`.
  virtual void write(Writer& w, const File& src, const TensorInfo& t, QuantizeReport::Item& item,
                     const std::function<void(uint64_t)>& tick) = 0;
  /// Metadata of the output file (int4 records format and quant).
  virtual void update_metadata(Metadata&) const {}
  /// The quantization_config a model folder's config.json gets (JSON text), given the modules
  /// whose weights were left plain and the dtype of the weights quantized; "" to leave
  /// config.json as it is.
  virtual std::string quantization_config(std::span<const std::string> /*plain_modules*/,
                                          Dtype /*weights_dtype*/) const {
    return {};
  }
  /// Whether config.json also gets it as "quantization" (MLX's loaders read that one first).
  virtual bool quantization_too() const { return false; }
  /// Whether `t` is in the default selection: linear layers' weights (is_linear_weight); MLX's
  /// take embeddings and the head too.
  virtual bool selected_by_default(const TensorInfo& t) const;

 protected:
  // Scratch kept across tensors (a model has hundreds): converted input, dequantized chunk.
  std::vector<float> input_, back_;
};

/// Which bytes of one stored tensor of a weight hold what elements of the weight need, so that a
/// slice reads only those. Element e (row-major in the logical shape) lies in row
/// r = e / row_elements (row_elements 0: all in one row) at column c = e % row_elements and
/// needs bytes [r * row_bytes + unit_bytes * (c / unit_elements), + unit_bytes) of the tensor;
/// unit_elements 0: the tensor is needed whole (small tables, JSON states).
struct StoredPart {
  std::string name;
  uint64_t row_elements = 0, row_bytes = 0;
  uint64_t unit_elements = 0, unit_bytes = 0;
};

struct SchemeEntry {
  SchemeInfo info;
  /// The options a name stands for, or nullopt when the name is not this scheme's.
  std::optional<QuantScheme::Options> (*parse)(std::string_view name);
  std::string (*name)(const QuantScheme::Options&);
  /// Checks option bounds; Error{invalid_argument}.
  void (*validate)(const QuantScheme::Options&);
  /// Sets one of info.options from text (the registry has checked that this scheme has it).
  void (*set_option)(QuantScheme::Options&, std::string_view option, std::string_view value);
  /// This scheme's weights in `set`, checked (Error{format} naming rule and tensor).
  std::vector<QuantizedWeight> (*detect)(const TensorSet& set);
  std::shared_ptr<const WeightDecoder> (*decoder)(const TensorSet& set, const QuantizedWeight& w);
  /// How each of w.stored maps to the elements (read plans read a slice's parts only).
  std::vector<StoredPart> (*parts)(const TensorSet& set, const QuantizedWeight& w);
  /// nullptr for the schemes tlio reads only (info.read_only).
  std::unique_ptr<WeightEncoder> (*encoder)(const QuantScheme::Options&);
};

/// Writes weight `w` (all its elements, as `to`) into `out`'s tensor `as` in slices of a few
/// MiB, decoded on every core in cache-sized chunks (a decoder's read is safe from several
/// threads) a few slices ahead of the one this thread appends; tick reports the bytes of each
/// slice, on the calling thread (quant/write_decoded.cpp).
void write_decoded(const TensorSet& set, const QuantizedWeight& w, Dtype to, Writer& out,
                   std::string_view as, const std::function<void(uint64_t)>& tick);
/// The same for the `elements` values of any decoder.
void write_decoded(const WeightDecoder& decoder, uint64_t elements, Dtype to, Writer& out,
                   std::string_view as, const std::function<void(uint64_t)>& tick);

/// The entry of a scheme tlio reads but does not write: no name parses to it, it has no
/// options, and its encoder is nullptr (its info read_only).
SchemeEntry read_only_entry(SchemeKind kind, std::string_view syntax, std::string_view example,
                            std::string_view layout, decltype(SchemeEntry::name) name,
                            decltype(SchemeEntry::validate) validate,
                            decltype(SchemeEntry::detect) detect,
                            decltype(SchemeEntry::decoder) decoder,
                            decltype(SchemeEntry::parts) parts);

/// The entries, one per SchemeKind, in SchemeKind order.
std::span<const SchemeEntry> scheme_entries() noexcept;
inline const SchemeEntry& scheme_entry(SchemeKind kind) noexcept {
  return scheme_entries()[static_cast<size_t>(kind)];
}

/// The names of the stored tensors of `weights` (what quantize, dequantize and convert leave to
/// the schemes).
std::set<std::string, std::less<>> stored_tensor_names(const std::vector<QuantizedWeight>& weights);

// Each scheme's entry, defined beside its code.
const SchemeEntry& int4_scheme_entry() noexcept;
const SchemeEntry& bnb_4bit_scheme_entry() noexcept;
const SchemeEntry& llm_int8_scheme_entry() noexcept;
const SchemeEntry& fp8_scheme_entry() noexcept;     // quant/hub/, read and written
const SchemeEntry& gptq_scheme_entry() noexcept;    // quant/hub/, read only
const SchemeEntry& awq_scheme_entry() noexcept;     // quant/hub/, read only
const SchemeEntry& mxfp4_scheme_entry() noexcept;   // quant/hub/, read only
const SchemeEntry& nvfp4_scheme_entry() noexcept;   // quant/hub/, read only
const SchemeEntry& ct_int_scheme_entry() noexcept;  // quant/hub/, read only
const SchemeEntry& mlx_scheme_entry() noexcept;     // quant/mlx/, read and written

/// Chunked F32 input, shared by the encoders (defined in quant/schemes.cpp).
/// Calls fn(first, values) on consecutive chunks of `t` as F32; `align` elements divide every
/// chunk size (whole rows or whole blocks). F32 tensors are read in place when aligned; other
/// dtypes are converted into `buf`, kept across tensors so its pages are faulted in once.
void for_each_f32_chunk(const File& src, const TensorInfo& t, uint64_t align,
                        std::vector<float>& buf,
                        const std::function<void(uint64_t, std::span<const float>)>& fn);

/// Squared and largest error of quantized chunks against their input.
struct ErrorStats {
  double squares = 0;
  float max_abs = 0;
  void add(std::span<const float> input, std::span<const float> restored);
  void finish(QuantizeReport::Item& item, uint64_t n) const;
};

/// Parses an option value: an unsigned decimal, or true/false/1/0.
uint64_t parse_uint_option(std::string_view option, std::string_view value);
bool parse_bool_option(std::string_view option, std::string_view value);

}  // namespace tlio::detail

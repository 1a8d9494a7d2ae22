// tlio/gguf.hpp: GGUF files (llama.cpp's format), read and checked as ggml's own reader checks
// them: version 2 or 3, keys non-empty and unique, `general.alignment` a UINT32 power of two,
// tensor names of at most 63 bytes and unique, at most 4 dimensions whose product fits, known
// ggml types with the first dimension a whole number of blocks, and each tensor's data exactly
// where the one before it ends (padded to the alignment), inside the file. Counts and lengths
// are checked against what is left of the file before anything is allocated. Import (to a
// safetensors file or a Hugging Face folder) and export (from a folder) are
// tlio/gguf_convert.hpp's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tlio/export.hpp"
#include "tlio/file.hpp"
#include "tlio/ggml.hpp"

namespace tlio {

/// The types of GGUF metadata values (GGUF's numbering).
enum class GgufValueType : uint32_t {
  UINT8 = 0,
  INT8 = 1,
  UINT16 = 2,
  INT16 = 3,
  UINT32 = 4,
  INT32 = 5,
  FLOAT32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  UINT64 = 10,
  INT64 = 11,
  FLOAT64 = 12,
};
TLIO_API std::string_view gguf_value_type_name(GgufValueType type) noexcept;

/// One metadata value: a number, a boolean, a string, or an array of one of those (never of
/// arrays: ggml refuses them).
struct GgufValue {
  GgufValueType type = GgufValueType::UINT8;
  GgufValueType element_type = GgufValueType::UINT8;  ///< an ARRAY's elements
  uint64_t count = 1;                                 ///< an ARRAY's length
  std::vector<std::byte> bytes;      ///< a number's, or an array of numbers', little-endian bytes
  std::vector<std::string> strings;  ///< a STRING (one), or an array of strings

  /// A whole-number scalar (unsigned types and BOOL, or a non-negative signed one), else nullopt.
  TLIO_API std::optional<uint64_t> as_uint() const noexcept;
  /// A number scalar of any type as a double, else nullopt.
  TLIO_API std::optional<double> as_double() const noexcept;
  /// A STRING's text, else nullptr.
  TLIO_API const std::string* as_string() const noexcept;
  /// Element i of an array of numbers as a double (i < count), else nullopt.
  TLIO_API std::optional<double> number_at(uint64_t i) const noexcept;
};

struct GgufKeyValue {
  std::string key;
  GgufValue value;
};

struct GgufTensorInfo {
  std::string name;
  uint32_t type = 0;         ///< ggml type id (ggml_type(type) is known for every tensor of a file)
  std::vector<uint64_t> ne;  ///< ggml's dimensions, ne[0] innermost, as stored
  uint64_t offset = 0;       ///< from the start of the data section of its file
  uint64_t bytes = 0;
  uint32_t split = 0;  ///< the file of a split set holding it (0: the first, or the only one)
  /// numpy's order (ne reversed): a Linear weight stored with ne [in, out] is [out, in].
  TLIO_API std::vector<uint64_t> shape() const;
  TLIO_API uint64_t element_count() const noexcept;
};

/// Caps on what a GGUF header may hold, past which it is refused before any allocation
/// (ggml's own limits).
inline constexpr uint64_t kMaxGgufStringBytes = uint64_t{1} << 30;
inline constexpr uint64_t kMaxGgufArrayElements = uint64_t{1} << 30;
inline constexpr size_t kMaxGgmlNameBytes = 63;
inline constexpr uint32_t kMaxGgmlDims = 4;
inline constexpr uint64_t kDefaultGgufAlignment = 32;

/// True when `first_bytes` start with GGUF's magic ("GGUF"), or its byte-swapped form.
TLIO_API bool looks_like_gguf(std::span<const std::byte> first_bytes) noexcept;
/// Whether `location` names a GGUF file: a name ending in .gguf (any case, any scheme), or a
/// local regular file starting with GGUF's magic. Pipes and devices are never read to find out
/// (their bytes would be gone); standard input ("-") is not a GGUF.
TLIO_API bool is_gguf_location(const std::string& location);

/// A GGUF file, opened and checked. Copies share the open file.
class TLIO_API GgufFile {
 public:
  /// Opens and checks `location` (a path or a URL of any scheme File::open takes; the header is
  /// read in growing pieces, the tensors' data when asked for). Error{format} (rule "gguf")
  /// naming what is wrong and where; Error{io} for a file that cannot be read. The first file of
  /// llama.cpp's split set (split.count > 1, named PREFIX-00001-of-0000N.gguf) opens the whole
  /// set as one: its metadata, every file's tensors (each with its `split`), each file checked
  /// (split.no, split.count, split.tensors.count, names unique across files); another file of a
  /// set is refused, naming the first.
  static GgufFile open(const std::string& location, const OpenOptions& options = {});
  /// The same over bytes in memory (borrowed: they must outlive the GgufFile).
  static GgufFile from_bytes(std::span<const std::byte> bytes, std::string name = "<memory>");

  const std::string& name() const noexcept;
  uint64_t size() const noexcept;  ///< the file's bytes (of every file of a split set)
  size_t splits() const noexcept;  ///< the files of a split set, or 1
  /// File `split` of the set as messages name it (0: name()); Error{invalid_argument} past
  /// splits().
  const std::string& split_name(size_t split) const;
  uint32_t version() const noexcept;
  uint64_t alignment() const noexcept;
  uint64_t data_offset() const noexcept;  ///< where the data section starts
  const std::vector<GgufKeyValue>& metadata() const noexcept;
  const GgufValue* find(std::string_view key) const noexcept;
  const std::vector<GgufTensorInfo>& tensors() const noexcept;
  const GgufTensorInfo* tensor(std::string_view name) const noexcept;
  /// Reads dst.size() bytes at `offset` of tensor `t`'s data. Error{invalid_argument} past its end.
  void read(const GgufTensorInfo& t, uint64_t offset, std::span<std::byte> dst) const;
  /// Elements [first, first + count) of tensor `t` (flat, ne[0] fastest) as dtype `to` into dst
  /// (exactly their bytes): block types decoded as ggml decodes them (tlio/ggml.hpp) then
  /// converted from F32, plain types converted from their own dtype (tlio/convert.hpp's
  /// roundings). Error{unsupported} for a type tlio does not decode (named) or a whole-byte
  /// dtype it cannot convert to; Error{invalid_argument} past the tensor's end.
  void read_values(const GgufTensorInfo& t, uint64_t first, uint64_t count, Dtype to,
                   std::span<std::byte> dst) const;
  /// Where slice `indices` of tensor `t` lies (indices over t.shape(), as tlio::plan_slice takes
  /// them: an index or a range per leading dimension, the rest whole): `shape` is the slice's,
  /// `ranges` the reads read_slice makes (stored bytes relative to the tensor's data, whole
  /// blocks; the blocks of nearby rows read together across gaps of up to 64 KiB, at most 4 MiB a
  /// read, a longer run in reads of at most that), `byte_size` the bytes of the blocks the slice
  /// needs (the reads less their gaps). Error{invalid_argument} for a bad slice.
  SlicePlan plan_slice(const GgufTensorInfo& t, std::span<const SliceIndex> indices) const;
  /// The values of that slice as dtype `to` into dst (exactly their bytes), decoded as
  /// read_values decodes them, by plan_slice's reads: a column slice costs a few reads, not one
  /// per row (a request each, for a remote file). Scratch: one read's bytes and its runs' F32
  /// values. Error{unsupported} as read_values.
  void read_slice(const GgufTensorInfo& t, std::span<const SliceIndex> indices, Dtype to,
                  std::span<std::byte> dst) const;

 private:
  struct State;
  explicit GgufFile(std::shared_ptr<const State> state);
  std::shared_ptr<const State> state_;
};

}  // namespace tlio

// tlio/header.hpp: a validated safetensors header.
//
// A Header is produced only by the header parse (Header::parse, and File::open through the same
// builder), which enforces reader rules 2-5 in the order docs/format.md gives them; holding one
// means the rules hold. Rule 1 (the 8-byte length prefix) is checked by File::open first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tlio/dtype.hpp"
#include "tlio/export.hpp"
#include "tlio/shape.hpp"

namespace tlio {

/// Largest header the spec allows (rule 1): N <= 100,000,000.
inline constexpr uint64_t kMaxHeaderSize = 100'000'000;

/// Metadata map, ordered by key bytes (the canonical write order).
using Metadata = std::map<std::string, std::string>;

struct TLIO_API TensorInfo {
  // User-provided, so that value-initialization (vector::emplace_back()) runs the member
  // initializers only, without first zeroing the whole struct: parsers make one per tensor.
  TensorInfo() noexcept {}

  std::string name;
  Dtype dtype = Dtype::F32;
  Shape shape;
  uint64_t begin = 0;  ///< data_offsets[0], relative to the data buffer
  uint64_t end = 0;    ///< data_offsets[1]

  uint64_t byte_size() const noexcept { return end - begin; }
  /// Product of the dims; 0 when any dim is 0. Only meaningful for validated infos.
  uint64_t element_count() const noexcept;
};

class TLIO_API Header {
 public:
  /// Validates `json` (the N header bytes) against rules 2-5 for a data buffer of `data_size`
  /// bytes. Throws Error{format, rule} for the first rule broken.
  static Header parse(std::span<const std::byte> json, uint64_t data_size);

  /// Tensors in file (offset) order.
  const std::vector<TensorInfo>& tensors() const noexcept { return tensors_; }
  /// Tensor names sorted by their UTF-8 bytes.
  std::vector<std::string_view> sorted_names() const;
  /// nullptr when there is no such tensor.
  const TensorInfo* find(std::string_view name) const noexcept;
  /// Throws Error{not_found} when there is no such tensor.
  const TensorInfo& at(std::string_view name) const;

  const Metadata& metadata() const noexcept { return metadata_; }
  /// True when the file had a `__metadata__` object (even an empty one).
  bool has_metadata() const noexcept { return has_metadata_; }
  uint64_t data_size() const noexcept { return data_size_; }

 private:
  friend class HeaderBuilder;
  std::vector<TensorInfo> tensors_;
  std::vector<uint64_t> name_slots_;  // (name hash, position), sorted (format/name_index.hpp)
  Metadata metadata_;
  bool has_metadata_ = false;
  uint64_t data_size_ = 0;
};

/// Natural order of names, as people read them: runs of ASCII digits compare by their value
/// ("layers.2" before "layers.10"; "01" before "1" when the values tie), everything else by
/// bytes. A strict weak order: sort with it.
TLIO_API bool natural_less(std::string_view a, std::string_view b) noexcept;

/// Byte size of `count` elements of `dtype`; nullopt on overflow or when count * bits is not
/// a whole number of bytes.
TLIO_API std::optional<uint64_t> tensor_bytes(Dtype dtype,
                                              std::span<const uint64_t> shape) noexcept;

}  // namespace tlio

// gguf/gguf_header.hpp: a GGUF header parsed and checked from a byte source: the bytes are taken
// as the parse reaches them (in growing pieces from a remote source), and every count and length
// is checked against what is left of the file before anything is allocated.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "io/source.hpp"
#include "tlio/gguf.hpp"

namespace tlio::detail {

struct GgufHeader {
  uint32_t version = 0;
  uint64_t alignment = kDefaultGgufAlignment;
  uint64_t data_offset = 0;
  std::vector<GgufKeyValue> metadata;
  std::vector<GgufTensorInfo> tensors;
  std::unordered_map<std::string, size_t> key_index, tensor_index;
};

/// `n` rounded up to a multiple of `alignment` (GGUF's padding).
inline uint64_t gguf_padded(uint64_t n, uint64_t alignment) {
  return (n + alignment - 1) / alignment * alignment;
}

/// Error{format} (rule gguf) naming what is wrong, the byte offset where it was found and
/// `source`; Error{io} when the source cannot be read.
GgufHeader parse_gguf_header(const ByteSource& source);

}  // namespace tlio::detail

// gguf/gguf_writer.hpp: a GGUF file written in one pass: the whole header (metadata, tensor
// infos with their offsets) laid out first from what the caller declares, then each tensor's
// bytes in order, padded to the alignment, into an atomic output (io/atomic_file.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "io/atomic_file.hpp"
#include "io/output_writes.hpp"
#include "tlio/gguf.hpp"

namespace tlio::detail {

/// Metadata values as GGUF stores them.
GgufValue gguf_u32(uint32_t v);
GgufValue gguf_i32(int32_t v);
GgufValue gguf_u16(uint16_t v);
GgufValue gguf_f32(float v);
GgufValue gguf_bool(bool v);
GgufValue gguf_string(std::string v);
GgufValue gguf_strings(std::vector<std::string> v);
GgufValue gguf_f32s(const std::vector<float>& v);
GgufValue gguf_i32s(const std::vector<int32_t>& v);

/// A tensor to write: its name, ggml type and ggml dimensions (ne[0] innermost).
struct GgufTensorDecl {
  std::string name;
  uint32_t type = 0;
  std::vector<uint64_t> ne;
};

/// The bytes of a tensor of `type` with dimensions `ne`; Error{invalid_argument} when ne[0] is
/// not a whole number of blocks or the size overflows.
uint64_t gguf_tensor_bytes(uint32_t type, const std::vector<uint64_t>& ne, const std::string& name);

class GgufWriter {
 public:
  /// Lays out and writes the header to a temporary for `dest`. Error{invalid_argument} for a
  /// name over 63 bytes, a repeated name or key, or more than 4 dimensions.
  GgufWriter(const Location& dest, const std::vector<GgufKeyValue>& metadata,
             std::vector<GgufTensorDecl> tensors, uint64_t alignment = kDefaultGgufAlignment);
  /// The next bytes of the current tensor (tensors are written in declaration order).
  void append(std::span<const std::byte> bytes);
  /// Checks every tensor got all its bytes and publishes the file.
  void commit();
  /// The same, the file published with the rest of `set` (the files of a split GGUF together).
  void commit_into(OutputSet& set);
  uint64_t size() const noexcept { return end_; }

 private:
  std::unique_ptr<AtomicFile> out_;
  std::unique_ptr<OutputWrites> writes_;  // out_'s, one run from the header to the last byte
  std::vector<GgufTensorDecl> tensors_;
  std::vector<uint64_t> begin_, bytes_;  // each tensor's file offset and size
  size_t current_ = 0;
  uint64_t written_ = 0;  // of the current tensor
  uint64_t end_ = 0;      // the file's size
  uint64_t alignment_;

  void finish();
};

}  // namespace tlio::detail

// report/weight_values.hpp: the values of one name of a Weights, read a chunk at a time in
// their own dtype (a view of the file) or decoded to F32 (quantized weights, GGUF tensors): what
// the report's figures and diff's comparisons with a GGUF file read.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "report/pairing.hpp"
#include "tlio/dtype.hpp"
#include "tlio/value_stats.hpp"
#include "tlio/weights.hpp"

namespace tlio::detail {

/// What a ChunkReader gives for `count` values from element `first`: their dtype and bytes (a
/// view of the tensor, a copy for a URL, or `scratch` filled with them decoded). Readers are
/// thread-safe.
struct Chunk {
  Dtype dtype;
  std::span<const std::byte> bytes;
};
using ChunkReader =
    std::function<Chunk(uint64_t first, uint64_t count, std::vector<std::byte>& scratch)>;

/// A tensor to read: what it is, and how to start reading it (a view, or a decoder, made when its
/// turn comes and dropped after, so a remote file's tensors are not all in memory at once).
struct Values {
  std::string type;
  std::vector<uint64_t> shape;
  uint64_t elements = 0, stored_bytes = 0;
  unsigned bits = 32;    ///< of each value the chunks hold
  bool decoded = false;  ///< chunks are decoded into scratch (F32), not views of the file
  bool numeric = true;
  std::string note;  ///< why a tensor has no numeric values
  std::function<ChunkReader()> open;
};

/// The values of `name` in `w` (Error{not_found} naming the input when it has none); `w` must
/// outlive them.
Values values_of(const Weights& w, const std::string& name);

/// The differences of chunk `c`, elements [first, first + count) of a tensor of `rows` rows of
/// `cols` values, from the reference read by `read_ref`: the same elements, or, where `pair`
/// permutes rows (then `first` and `count` are whole rows), each row from where it lies in the
/// reference. Each side in its own dtype, as difference_sums takes them; pairs outside
/// atol + rtol * |b| counted.
DifferenceSums pair_sums(const Chunk& c, uint64_t first, uint64_t count, uint64_t rows,
                         uint64_t cols, const ChunkReader& read_ref, const Pairing& pair,
                         std::vector<std::byte>& ref_scratch, double atol = 0, double rtol = 0);

/// Why `v` (numeric: callers check that first) is not compared with `ref`, its pair by `pair`
/// (the reference has no numeric values, other shapes, rows that are not whole heads of pairs or
/// do not start on whole bytes), or "" when it is.
std::string not_compared(const Values& v, const Values& ref, const Pairing& pair);

}  // namespace tlio::detail

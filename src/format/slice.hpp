// format/slice.hpp: the geometry of a slice (per-dimension start and extent) and a walk over its
// contiguous byte runs in row-major order, without materialising the list of runs.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "tlio/file.hpp"

namespace tlio::detail {

struct SliceGeometry {
  std::vector<uint64_t> out_shape;
  std::vector<uint64_t> start;   // per input dimension
  std::vector<uint64_t> extent;  // per input dimension
  std::vector<uint64_t> stride;  // elements per step of each input dimension
  int partial_dim = -1;          // innermost dimension not taken whole (-1: the whole tensor)
  uint64_t run_bytes = 0;        // bytes of one contiguous run
  uint64_t run_count = 0;        // number of runs (0 for an empty slice)
  unsigned bits = 0;

  uint64_t byte_size() const noexcept { return run_bytes * run_count; }

  /// Calls fn(offset, length) for each run, offsets relative to the tensor's first byte.
  template <class Fn>
  void for_each_run(Fn&& fn) const {
    if (run_count == 0) return;
    const int outer = partial_dim;  // dims [0, outer) are iterated
    std::vector<uint64_t> idx(static_cast<size_t>(outer > 0 ? outer : 0), 0);
    const uint64_t inner_start = outer >= 0 ? start[outer] * stride[outer] : 0;
    for (uint64_t r = 0; r < run_count; ++r) {
      uint64_t elem = inner_start;
      for (int d = 0; d < outer; ++d) elem += (start[d] + idx[d]) * stride[d];
      fn(elem * bits / 8, run_bytes);
      for (int d = outer - 1; d >= 0; --d) {  // odometer over the outer dims
        if (++idx[d] < extent[d]) break;
        idx[d] = 0;
      }
    }
  }
};

/// Validates indices against the tensor (Error{invalid_argument}) and computes the geometry.
SliceGeometry slice_geometry(const TensorInfo& info, std::span<const SliceIndex> indices);

}  // namespace tlio::detail

// format/slice.cpp: slice validation and geometry.
#include "format/slice.hpp"

#include <fmt/core.h>
#include <fmt/format.h>

#include "common/json_text.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {

SliceGeometry slice_geometry(const TensorInfo& info, std::span<const SliceIndex> indices) {
  const size_t rank = info.shape.size();
  if (indices.size() > rank)
    throw_invalid(fmt::format("{} indices for tensor {} of rank {}", indices.size(),
                              quote_name(info.name), rank),
                  info.name);
  SliceGeometry g;
  g.bits = dtype_bits(info.dtype);
  g.start.resize(rank);
  g.extent.resize(rank);
  g.stride.assign(rank, 1);
  bool empty = false;
  for (size_t d = 0; d < rank; ++d) {
    const uint64_t dim = info.shape[d];
    SliceIndex ix = d < indices.size() ? indices[d] : SliceIndex::all();
    if (ix.kind == SliceIndex::Kind::index) {
      if (ix.start >= dim)
        throw_invalid(fmt::format("index {} out of range for dimension {} of size {} of tensor {}",
                                  ix.start, d, dim, quote_name(info.name)),
                      info.name);
      g.start[d] = ix.start;
      g.extent[d] = 1;
      continue;
    }
    const uint64_t stop = ix.stop == UINT64_MAX ? dim : ix.stop;
    if (ix.start > stop)
      throw_invalid(fmt::format("slice {}:{} of dimension {} of tensor {} has start > stop",
                                ix.start, stop, d, quote_name(info.name)),
                    info.name);
    if (stop > dim)
      throw_invalid(fmt::format("slice {}:{} out of range for dimension {} of size {} of tensor {}",
                                ix.start, stop, d, dim, quote_name(info.name)),
                    info.name);
    g.start[d] = ix.start;
    g.extent[d] = stop - ix.start;
    g.out_shape.push_back(g.extent[d]);
    if (g.extent[d] == 0) empty = true;
  }
  if (empty || info.element_count() == 0) return g;  // no runs, no bytes

  // Strides in elements; products fit because the tensor's element count does.
  for (size_t d = rank; d-- > 1;) g.stride[d - 1] = g.stride[d] * info.shape[d];
  g.partial_dim = -1;
  for (size_t d = rank; d-- > 0;)
    if (g.extent[d] != info.shape[d]) {
      g.partial_dim = static_cast<int>(d);
      break;
    }
  uint64_t run_elems =
      g.partial_dim < 0 ? info.element_count() : g.extent[g.partial_dim] * g.stride[g.partial_dim];
  g.run_count = 1;
  for (int d = 0; d < g.partial_dim; ++d) g.run_count *= g.extent[d];
  if (g.bits < 8) {
    // Sub-byte elements: every run must start and end on a byte boundary.
    bool aligned = (run_elems * g.bits) % 8 == 0;
    if (g.partial_dim >= 0) {
      aligned = aligned && (g.start[g.partial_dim] * g.stride[g.partial_dim] * g.bits) % 8 == 0;
      for (int d = 0; d < g.partial_dim; ++d) aligned = aligned && (g.stride[d] * g.bits) % 8 == 0;
    }
    if (!aligned)
      throw_invalid(fmt::format("slice of {} tensor {} does not fall on byte boundaries",
                                dtype_name(info.dtype), quote_name(info.name)),
                    info.name);
  }
  g.run_bytes = run_elems * g.bits / 8;
  return g;
}

}  // namespace tlio::detail

namespace tlio {

SlicePlan plan_slice(const TensorInfo& info, std::span<const SliceIndex> indices) {
  detail::SliceGeometry g = detail::slice_geometry(info, indices);
  SlicePlan plan;
  plan.shape = g.out_shape;
  plan.byte_size = g.byte_size();
  plan.ranges.reserve(static_cast<size_t>(g.run_count));
  g.for_each_run([&](uint64_t off, uint64_t len) { plan.ranges.push_back({off, len}); });
  return plan;
}

}  // namespace tlio

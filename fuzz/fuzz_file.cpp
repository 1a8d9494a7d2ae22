// fuzz_file: a whole file image from a stranger. Opening must accept or throw tlio::Error, never
// crash or read out of bounds; everything an accepted file offers must work: views, slices,
// conversions, quantization checks, and a canonical rewrite that reads back the same.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "tlio/tlio.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  try {
    tlio::File f = tlio::File::from_buffer(bytes, "fuzz");
    (void)f.is_canonical();
    (void)f.header().sorted_names();
    uint64_t budget = uint64_t{1} << 24;  // bytes converted per input, to stay fast
    for (const tlio::TensorInfo& t : f.tensors()) {
      tlio::TensorView v = f.view(t.name);
      if (f.header().find(t.name) != &t) __builtin_trap();
      // A slice: first index of the first dimension, the rest whole.
      if (!t.shape.empty() && t.shape[0] > 0) {
        tlio::SliceIndex first[] = {tlio::SliceIndex::at(t.shape[0] - 1)};
        try {
          (void)v.slice_copy(first);
        } catch (const tlio::Error&) {  // sub-byte slices may not fall on byte boundaries
        }
      }
      if (tlio::can_convert(t.dtype, tlio::Dtype::F32) && t.element_count() * 4 <= budget) {
        budget -= t.element_count() * 4;
        try {
          (void)tlio::read_f32(f, t.name);
        } catch (const tlio::Error&) {
        }
      }
    }
    try {
      // Quantized weights that pass their checks must dequantize anywhere in range.
      for (const tlio::QuantizedWeight& q : tlio::find_quantized_weights(f)) {
        const tlio::QuantizedReader r(f, q.name);
        const uint64_t n = r.element_count(), m = std::min<uint64_t>(n, 4096);
        std::vector<std::byte> out(m * 4);
        r.read(0, m, tlio::Dtype::F32, out);
        r.read(n - m, m, tlio::Dtype::BF16, std::span(out).first(m * 2));
        if (n > 1) r.read(1, std::min<uint64_t>(n - 1, 4096), tlio::Dtype::F16,
                          std::span(out).first(std::min<uint64_t>(n - 1, 4096) * 2));
      }
    } catch (const tlio::Error&) {
    }
    // Canonical rewrite: the writer's output must read back with the same tensors.
    tlio::Writer w = tlio::Writer::to_memory();
    w.set_metadata(f.metadata());
    for (const auto& t : f.tensors()) w.declare(t.name, t.dtype, t.shape);
    for (const auto& t : w.layout()) w.copy_from(t.name, f, t.name);
    w.commit();
    tlio::File g = tlio::File::from_bytes(w.take_bytes());
    if (g.tensors().size() != f.tensors().size() || !g.is_canonical()) __builtin_trap();
    for (const auto& t : g.tensors()) {
      auto a = f.view(t.name).bytes(), b = g.view(t.name).bytes();
      if (a.size() != b.size() || (a.size() && std::memcmp(a.data(), b.data(), a.size())))
        __builtin_trap();
    }
  } catch (const tlio::Error&) {
  }
  return 0;
}

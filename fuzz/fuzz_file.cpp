// fuzz_file: a whole file image from a stranger. Opening must accept or throw tlio::Error, never
// crash or read out of bounds; everything an accepted file offers must work: views, slices,
// conversions, quantization checks, and a canonical rewrite that reads back the same. The header's
// two walks must agree: what the On-Demand fast path accepts, the DOM walk accepts alike.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <tuple>
#include <vector>

#include "format/header_parse.hpp"
#include "tlio/tlio.hpp"

namespace {

void check_header_walks_agree(std::span<const std::byte> bytes) {
  if (bytes.size() < 8) return;
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | std::to_integer<uint64_t>(bytes[i]);
  if (n > bytes.size() - 8) return;
  std::vector<std::byte> padded(n + tlio::detail::kJsonPadding);
  std::memcpy(padded.data(), bytes.data() + 8, n);
  const std::span<const std::byte> json(padded.data(), n);
  const uint64_t data_size = bytes.size() - 8 - n;
  // Whole; split in two halves wherever the input allows (headers of any size); in pieces of a
  // member or two; and both.
  constexpr size_t kWhole = ~size_t{0}, kTiny = 60;
  std::optional<tlio::Header> fast, halves, pieces, halves_in_pieces;
  for (auto [walk, split_from, piece_bytes] :
       {std::tuple{&fast, kWhole, kWhole}, std::tuple{&halves, size_t{0}, kWhole},
        std::tuple{&pieces, kWhole, kTiny}, std::tuple{&halves_in_pieces, size_t{0}, kTiny}}) {
    try {
      *walk = tlio::detail::parse_header_on_demand(json, data_size, split_from, piece_bytes);
    } catch (const tlio::Error&) {  // rule 2 (duplicate names) or 5 after an accepting walk
    }
    if (walk->has_value() != fast.has_value()) __builtin_trap();
  }
  if (!fast) return;
  try {
    const tlio::Header dom = tlio::detail::parse_header_dom(json, data_size, true);
    if (dom.tensors().size() != fast->tensors().size() || dom.metadata() != fast->metadata() ||
        dom.has_metadata() != fast->has_metadata())
      __builtin_trap();
    for (const tlio::Header* h : {&*fast, &*halves, &*pieces, &*halves_in_pieces}) {
      if (h->tensors().size() != dom.tensors().size() || h->metadata() != dom.metadata())
        __builtin_trap();
      for (size_t i = 0; i < dom.tensors().size(); ++i) {
        const tlio::TensorInfo &a = dom.tensors()[i], &b = h->tensors()[i];
        if (a.name != b.name || a.dtype != b.dtype || a.begin != b.begin || a.end != b.end ||
            !std::equal(a.shape.begin(), a.shape.end(), b.shape.begin(), b.shape.end()) ||
            h->find(a.name) != &b)
          __builtin_trap();
      }
    }
  } catch (const tlio::Error&) {
    __builtin_trap();  // the fast walk accepted a header the DOM walk refuses
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  check_header_walks_agree(bytes);
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
        if (n > 1)
          r.read(1, std::min<uint64_t>(n - 1, 4096), tlio::Dtype::F16,
                 std::span(out).first(std::min<uint64_t>(n - 1, 4096) * 2));
      }
    } catch (const tlio::Error&) {
    }
    // With a stranger's quantization config too (a folder's config.json; the metadata's here).
    if (const auto c = f.metadata().find("quantization_config"); c != f.metadata().end()) {
      try {
        (void)tlio::find_quantized_weights(std::span(&f, 1), c->second);
      } catch (const tlio::Error&) {
      }
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

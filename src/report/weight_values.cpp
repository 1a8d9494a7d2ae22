// report/weight_values.cpp: a name's values as views of its file or decoded a chunk at a time.
#include "report/weight_values.hpp"

#include <fmt/core.h>
#include <fmt/format.h>

#include <functional>
#include <numeric>
#include <optional>

#include "tlio/convert.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {

Values values_of(const Weights& w, const std::string& name) {
  Values v;
  if (std::optional<DecodedValues> d = w.decoded(name)) {  // a quantized weight, a GGUF tensor
    v.type = d->type;
    v.shape = d->shape;
    v.elements = std::accumulate(v.shape.begin(), v.shape.end(), uint64_t{1}, std::multiplies<>());
    v.stored_bytes = d->stored_bytes;
    v.decoded = true;
    v.numeric = d->decodes;
    if (!d->decodes) v.note = fmt::format("{} is a ggml type tlio does not decode", d->type);
    // Each open asks `w` again: a reader of its own, set up at its first read (a quantized
    // weight's packed bytes viewed, or copied for a URL) and dropped when its turn is over.
    v.open = [&w, name]() -> ChunkReader {
      return [read = w.decoded(name)->read](uint64_t first, uint64_t count,
                                            std::vector<std::byte>& scratch) {
        scratch.resize(count * sizeof(float));
        read(first, count, scratch);
        return Chunk{Dtype::F32, scratch};
      };
    };
    return v;
  }
  const auto [file_ptr, t] = w.at(name);
  const File* file = file_ptr;  // a variable of its own: clang 14 captures no structured binding
  v.type = std::string(dtype_name(t->dtype));
  v.shape.assign(t->shape.begin(), t->shape.end());
  v.elements = t->element_count();
  v.stored_bytes = t->byte_size();
  v.bits = dtype_bits(t->dtype);
  v.numeric = can_convert(t->dtype, Dtype::F64);
  if (!v.numeric) v.note = fmt::format("{} values have no numeric figures", v.type);
  v.open = [file, name = t->name, dtype = t->dtype]() -> ChunkReader {
    const TensorView view = file->view(name);  // a copy for a URL: one tensor at a time
    return [view, dtype](uint64_t first, uint64_t count, std::vector<std::byte>&) {
      const unsigned bits = dtype_bits(dtype);
      if (first * bits % 8 != 0)  // chunks and whole rows of sub-byte dtypes start on whole bytes
        throw_invalid(fmt::format("values from element {} do not start on a whole byte", first),
                      std::string(view.name()));
      return Chunk{dtype, view.bytes().subspan(first * bits / 8, (count * bits + 7) / 8)};
    };
  };
  return v;
}

DifferenceSums pair_sums(const Chunk& c, uint64_t first, uint64_t count, uint64_t rows,
                         uint64_t cols, const ChunkReader& read_ref, const Pairing& pair,
                         std::vector<std::byte>& ref_scratch, double atol, double rtol) {
  if (pair.permute_heads == 0) {
    const Chunk r = read_ref(first, count, ref_scratch);
    return difference_sums(c.dtype, c.bytes, r.dtype, r.bytes, count, atol, rtol);
  }
  const unsigned bits = dtype_bits(c.dtype);
  DifferenceSums sums;
  for (uint64_t row = 0; row < count / cols; ++row) {
    const Chunk r =
        read_ref(pair.reference_row(first / cols + row, rows) * cols, cols, ref_scratch);
    sums.merge(difference_sums(c.dtype, c.bytes.subspan(row * cols * bits / 8), r.dtype, r.bytes,
                               cols, atol, rtol));
  }
  return sums;
}

// Why a tensor the reference has is not compared with it, or "" when it is.
std::string not_compared(const Values& v, const Values& ref, const detail::Pairing& pair) {
  if (!ref.numeric) return fmt::format("the reference's {} has no numeric values", ref.type);
  if (ref.shape != v.shape)
    return fmt::format("shapes differ: [{}] here, [{}] in the reference", fmt::join(v.shape, ", "),
                       fmt::join(ref.shape, ", "));
  if (!pair.permute_heads) return "";
  if (v.shape.empty() || v.shape.size() > 2 || v.shape[0] % (2 * pair.permute_heads) != 0)
    return fmt::format("its rows cannot be split into {} heads of pairs", pair.permute_heads);
  const uint64_t cols = v.shape.size() == 2 ? v.shape[1] : 1;
  if (cols * v.bits % 8 != 0 || cols * ref.bits % 8 != 0)
    return "its rows do not start on whole bytes";
  return "";
}

}  // namespace tlio::detail

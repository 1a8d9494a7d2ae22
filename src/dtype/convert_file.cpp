// dtype/convert_file.cpp: typed reads and whole-file conversion (tlio convert --dtype).

#include <fmt/core.h>

#include "common/text.hpp"
#include "common/json_text.hpp"
#include "tlio/convert.hpp"
#include "tlio/error.hpp"
#include "tlio/file.hpp"
#include "tlio/writer.hpp"

namespace tlio {
namespace {

// Output produced per conversion step: large enough to use every core (convert() splits arrays
// of a million elements and more), small enough to keep memory bounded.
constexpr size_t kConvertChunkBytes = size_t{16} << 20;

// Runs fn, naming `tensor` in any tlio::Error it throws that names none.
template <class Fn>
void for_tensor(const std::string& tensor, Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    if (!e.tensor().empty()) throw;
    throw e.with_tensor(tensor, "tensor " + detail::quote_name(tensor));
  }
}

}  // namespace

bool is_quantization_companion(const File& f, std::string_view name) {
  // int4: <w>.scales beside <w>.qweight. bitsandbytes: the state of a 4-bit weight; LLM.int8:
  // the row scales and format marker (quant/ owns the full checks; these names are enough to
  // leave them alone).
  if (name.ends_with(".scales")) {
    std::string qweight(name.substr(0, name.size() - 7));
    qweight += ".qweight";
    if (f.header().find(qweight)) return true;
  }
  for (std::string_view suffix : {".absmax", ".quant_map", ".nested_absmax", ".nested_quant_map",
                                  ".SCB", ".weight_format"})
    if (name.ends_with(suffix)) return true;
  // A bnb 4-bit weight's packed codes may be stored as a float dtype (quant_storage).
  for (std::string_view type : {"nf4", "fp4"})
    if (f.header().find(std::string(name) + ".quant_state.bitsandbytes__" + std::string(type))) return true;
  return name.find(".quant_state.") != std::string_view::npos;
}

void read_as(const File& f, std::string_view name, Dtype to, std::span<std::byte> dst) {
  const TensorInfo& info = f.header().at(name);
  for_tensor(info.name, [&] {
    TensorView v = f.view(name);
    convert(info.dtype, v.bytes(), to, dst, info.element_count());
  });
}

std::vector<float> read_f32(const File& f, std::string_view name) {
  std::vector<float> out(static_cast<size_t>(f.header().at(name).element_count()));
  read_as(f, name, Dtype::F32, std::as_writable_bytes(std::span(out)));
  return out;
}

ConvertFileReport convert_file(const File& src, const std::filesystem::path& out,
                               const ConvertFileOptions& options) {
  const Dtype to = options.dtype;
  if (!is_floating(to) || !can_convert(Dtype::F32, to))
    throw_invalid(fmt::format("cannot convert tensors to {}: not a supported floating dtype",
                              dtype_name(to)));
  const detail::NameFilter filter(options.include, options.exclude);

  ConvertFileReport report;
  Writer w = Writer::to_file(out);
  w.set_metadata(src.metadata());
  std::vector<bool> converting;
  for (const TensorInfo& t : src.tensors()) {
    bool c = is_floating(t.dtype) && can_convert(t.dtype, to) && t.dtype != to &&
             !is_quantization_companion(src, t.name) && filter.selects(t.name, true);
    w.declare(t.name, c ? to : t.dtype, t.shape);
  }
  uint64_t total = 0;
  for (const TensorInfo& t : w.layout()) total += t.byte_size();
  uint64_t done = 0;
  auto tick = [&](uint64_t bytes) {
    done += bytes;
    if (options.progress) options.progress(done, total);
  };
  for (const TensorInfo& t : w.layout()) {
    const TensorInfo& s = src.header().at(t.name);
    report.data_bytes_in += s.byte_size();
    report.data_bytes_out += t.byte_size();
    if (t.dtype == s.dtype) {
      w.copy_from(t.name, src, t.name);
      ++report.kept;
      tick(t.byte_size());
      continue;
    }
    ++report.converted;
    const TensorView view = src.view(t.name);
    const unsigned in_bits = dtype_bits(s.dtype), out_bits = dtype_bits(t.dtype);
    for_tensor(t.name, [&] {
      w.write_from(
          t.name,
          [&](uint64_t offset, std::span<std::byte> buf) {
            const uint64_t first = offset * 8 / out_bits, count = buf.size() * 8 / out_bits;
            convert(s.dtype, view.bytes().subspan(first * in_bits / 8, count * in_bits / 8),
                    t.dtype, buf, count);
            tick(buf.size());
          },
          kConvertChunkBytes);
    });
  }
  w.commit();
  return report;
}

}  // namespace tlio

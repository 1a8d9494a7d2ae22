// format/read_as.cpp: typed reads of one tensor of a file (element conversions are dtype's).
#include "dtype/for_tensor.hpp"
#include "tlio/convert.hpp"
#include "tlio/file.hpp"

namespace tlio {

using detail::for_tensor;

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

}  // namespace tlio

// Fuzz target: a GGUF file in memory: its header parsed and checked (metadata, tensor infos,
// the data layout), then every tensor's first and last bytes read and its first and last values
// decoded (any ggml type, a range starting inside a block), a slice of its last column, and the
// Hugging Face side files an import to a folder rebuilds from its keys (config.json,
// tokenizer.json, tokenizer_config.json, the names mapped back, stacked experts planned). Any input
// reads or throws tlio::Error.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "gguf_convert/gguf_arch.hpp"
#include "gguf_convert/gguf_import_stacked.hpp"
#include "gguf_convert/gguf_to_hf.hpp"
#include "tlio/error.hpp"
#include "tlio/gguf.hpp"
#include "tlio/gguf_convert.hpp"

namespace {

// What import_gguf_model makes of the keys before any weight is written.
void rebuild_side_files(const tlio::GgufFile& f) {
  std::string why_not;
  (void)tlio::detail::tokenizer_json_of(f, why_not);
  const tlio::detail::GgufArch& a = tlio::detail::gguf_arch_of(f);
  const tlio::detail::HfConfig c = tlio::detail::hf_config_of(a, f);
  (void)tlio::detail::config_json_of(a, c, tlio::Dtype::BF16);
  (void)tlio::detail::generation_config_of(c);
  (void)tlio::detail::tokenizer_config_of(f, c);
  (void)tlio::detail::gguf_names_of(a, c);
  for (const tlio::GgufTensorInfo& t : f.tensors())
    (void)tlio::detail::gguf_expert_names_of(a, c, t.name);
  std::vector<const tlio::GgufTensorInfo*> taken;  // gpt-oss's stacked experts, DeepSeek's kv_b
  for (const tlio::detail::StackedImport& s : tlio::detail::plan_stacked_imports(f, a, c, taken))
    (void)tlio::detail::stacked_import_tensors(s, tlio::Dtype::BF16);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const std::byte> bytes{reinterpret_cast<const std::byte*>(data), size};
  try {
    const tlio::GgufFile f = tlio::GgufFile::from_bytes(bytes, "fuzz.gguf");
    std::vector<std::byte> buf(16);
    for (const tlio::GgufTensorInfo& t : f.tensors()) {
      const uint64_t n = t.bytes < buf.size() ? t.bytes : buf.size();
      f.read(t, 0, std::span(buf).first(n));
      f.read(t, t.bytes - n, std::span(buf).first(n));
      (void)t.shape();
      const uint64_t elements = t.element_count(), values = elements < 300 ? elements : 300;
      std::vector<std::byte> decoded(values * 4);
      try {
        f.read_values(t, 0, values, tlio::Dtype::F32, decoded);
        f.read_values(t, elements - values, values, tlio::Dtype::F32, decoded);
        if (values > 1)
          f.read_values(t, 1, values - 1, tlio::Dtype::BF16,
                        std::span(decoded).first((values - 1) * 2));
        // The last column of the last two rows (or the last row of a 1-D tensor): a slice's reads.
        const std::vector<uint64_t> shape = t.shape();
        std::vector<tlio::SliceIndex> slice;
        for (size_t d = 0; d + 1 < shape.size(); ++d)
          slice.push_back(d + 2 == shape.size()
                              ? tlio::SliceIndex::range(shape[d] < 2 ? 0 : shape[d] - 2, shape[d])
                              : tlio::SliceIndex::at(shape[d] ? shape[d] - 1 : 0));
        if (!shape.empty() && shape.back() > 0)
          slice.push_back(tlio::SliceIndex::range(shape.back() - 1, shape.back()));
        const tlio::SlicePlan plan = f.plan_slice(t, slice);
        uint64_t picked = 1;
        for (uint64_t d : plan.shape) picked *= d;
        if (picked <= 300)
          f.read_slice(t, slice, tlio::Dtype::F32, std::span(decoded).first(picked * 4));
      } catch (const tlio::Error&) {  // a type tlio does not decode: refused, the next is read
      }
    }
    for (const tlio::GgufKeyValue& kv : f.metadata()) {
      (void)kv.value.as_uint();
      (void)kv.value.as_double();
      (void)kv.value.number_at(kv.value.count - 1);
    }
    rebuild_side_files(f);
  } catch (const tlio::Error&) {
  }
  return 0;
}

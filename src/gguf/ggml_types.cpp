// gguf/ggml_types.cpp: ggml's tensor types in one table (gguf/ggml_blocks.hpp: ids, blocks,
// plain dtypes, decoders, encoders, llama.cpp file types) and GGUF's metadata value types.
#include <algorithm>
#include <cctype>

#include "gguf/ggml_blocks.hpp"
#include "tlio/gguf.hpp"

namespace tlio {

namespace {

using D = Dtype;
using T = GgmlTypeId;
namespace dec = detail::ggml_decoders;
namespace enc = detail::ggml_encoders;

// One row per type ggml.h numbers (the ids it removed have none): block and block bytes as
// ggml_blck_size and ggml_type_size give them, the dtype of a plain type's bytes, the decoder
// and encoder tlio has, and llama.cpp's LLAMA_FTYPE_MOSTLY_* for the types an export writes
// throughout.
constexpr detail::GgmlRow kTypes[] = {
    {{ggml_id(T::F32), "F32", 1, 4}, D::F32, nullptr, nullptr, 0},
    {{ggml_id(T::F16), "F16", 1, 2}, D::F16, nullptr, nullptr, 1},
    {{ggml_id(T::Q4_0), "Q4_0", 32, 18}, {}, dec::q4_0, enc::q4_0, 2},
    {{ggml_id(T::Q4_1), "Q4_1", 32, 20}, {}, dec::q4_1, enc::q4_1, 3},
    {{ggml_id(T::Q5_0), "Q5_0", 32, 22}, {}, dec::q5_0, enc::q5_0, 8},
    {{ggml_id(T::Q5_1), "Q5_1", 32, 24}, {}, dec::q5_1, enc::q5_1, 9},
    {{ggml_id(T::Q8_0), "Q8_0", 32, 34}, {}, dec::q8_0, enc::q8_0, 7},
    {{ggml_id(T::Q8_1), "Q8_1", 32, 36}, {}},  // an activation type: ggml does not decode it either
    {{ggml_id(T::Q2_K), "Q2_K", 256, 84}, {}, dec::q2_k, enc::q2_k, 10},
    {{ggml_id(T::Q3_K), "Q3_K", 256, 110}, {}, dec::q3_k, enc::q3_k, 11},
    {{ggml_id(T::Q4_K), "Q4_K", 256, 144}, {}, dec::q4_k, enc::q4_k, 14},
    {{ggml_id(T::Q5_K), "Q5_K", 256, 176}, {}, dec::q5_k, enc::q5_k, 16},
    {{ggml_id(T::Q6_K), "Q6_K", 256, 210}, {}, dec::q6_k, enc::q6_k, 18},
    {{ggml_id(T::Q8_K), "Q8_K", 256, 292}, {}, dec::q8_k},
    // The codebook types: indices into ggml's lattices (gguf/ggml_grids.hpp).
    {{ggml_id(T::IQ2_XXS), "IQ2_XXS", 256, 66}, {}, dec::iq2_xxs},
    {{ggml_id(T::IQ2_XS), "IQ2_XS", 256, 74}, {}, dec::iq2_xs},
    {{ggml_id(T::IQ3_XXS), "IQ3_XXS", 256, 98}, {}, dec::iq3_xxs},
    {{ggml_id(T::IQ1_S), "IQ1_S", 256, 50}, {}, dec::iq1_s},
    {{ggml_id(T::IQ4_NL), "IQ4_NL", 32, 18}, {}, dec::iq4_nl},
    {{ggml_id(T::IQ3_S), "IQ3_S", 256, 110}, {}, dec::iq3_s},
    {{ggml_id(T::IQ2_S), "IQ2_S", 256, 82}, {}, dec::iq2_s},
    {{ggml_id(T::IQ4_XS), "IQ4_XS", 256, 136}, {}, dec::iq4_xs},
    {{ggml_id(T::I8), "I8", 1, 1}, D::I8},
    {{ggml_id(T::I16), "I16", 1, 2}, D::I16},
    {{ggml_id(T::I32), "I32", 1, 4}, D::I32},
    {{ggml_id(T::I64), "I64", 1, 8}, D::I64},
    {{ggml_id(T::F64), "F64", 1, 8}, D::F64},
    {{ggml_id(T::IQ1_M), "IQ1_M", 256, 56}, {}, dec::iq1_m},
    {{ggml_id(T::BF16), "BF16", 1, 2}, D::BF16, nullptr, nullptr, 32},
    {{ggml_id(T::TQ1_0), "TQ1_0", 256, 54}, {}, dec::tq1_0},
    {{ggml_id(T::TQ2_0), "TQ2_0", 256, 66}, {}, dec::tq2_0},
    {{ggml_id(T::MXFP4), "MXFP4", 32, 17}, {}, dec::mxfp4},
    {{ggml_id(T::NVFP4), "NVFP4", 64, 36}, {}, dec::nvfp4},
    {{ggml_id(T::Q1_0), "Q1_0", 128, 18}, {}, dec::q1_0},
    {{ggml_id(T::Q2_0), "Q2_0", 64, 18}, {}, dec::q2_0},
};

}  // namespace

std::span<const detail::GgmlRow> detail::ggml_rows() noexcept { return kTypes; }

const detail::GgmlRow* detail::ggml_row(uint32_t id) noexcept {
  for (const GgmlRow& r : kTypes)
    if (r.type.id == id) return &r;
  return nullptr;
}

std::optional<GgmlType> ggml_type(uint32_t id) noexcept {
  if (const detail::GgmlRow* r = detail::ggml_row(id)) return r->type;
  return std::nullopt;
}

std::optional<Dtype> ggml_plain_dtype(uint32_t id) noexcept {
  const detail::GgmlRow* r = detail::ggml_row(id);
  return r ? r->plain : std::nullopt;
}

bool ggml_decodes(uint32_t id) noexcept {
  const detail::GgmlRow* r = detail::ggml_row(id);
  return r && (r->plain || r->decode);
}

bool ggml_encodes(uint32_t id) noexcept {
  // Block types by ggml's reference quantizers; plain ones are conversions from F32, and ggml
  // writes weights only as F32, F16 or BF16.
  const detail::GgmlRow* r = detail::ggml_row(id);
  return r &&
         (r->encode || r->plain == Dtype::F32 || r->plain == Dtype::F16 || r->plain == Dtype::BF16);
}

std::optional<GgmlType> ggml_type_named(std::string_view name) noexcept {
  const auto same = [&](std::string_view known) {
    return std::ranges::equal(known, name, [](char a, char b) {
      return std::toupper(static_cast<unsigned char>(a)) ==
             std::toupper(static_cast<unsigned char>(b));
    });
  };
  for (const detail::GgmlRow& r : kTypes)
    if (same(r.type.name)) return r.type;
  return std::nullopt;
}

std::string_view gguf_value_type_name(GgufValueType type) noexcept {
  static constexpr std::string_view kNames[] = {"UINT8",  "INT8",    "UINT16", "INT16",  "UINT32",
                                                "INT32",  "FLOAT32", "BOOL",   "STRING", "ARRAY",
                                                "UINT64", "INT64",   "FLOAT64"};
  const auto i = static_cast<size_t>(type);
  return i < std::size(kNames) ? kNames[i] : std::string_view{"unknown"};
}

}  // namespace tlio

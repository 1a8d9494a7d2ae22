// gguf/ggml_blocks.hpp: ggml's types in one table (an id's block, plain dtype, decoder, encoder
// and llama.cpp file type, ggml_types.cpp), the typed views of the K-quant super-blocks as
// ggml-common.h lays them out, and what the decoders and the reference quantizers share.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "tlio/dtype.hpp"
#include "tlio/ggml.hpp"

namespace tlio::detail {

using u8 = uint8_t;

// ---- the K-quant super-blocks of 256 values, byte for byte (every field bytes, so a view of a
// block anywhere in a file is aligned; fp16 fields are two little-endian bytes).
struct BlockQ2K {
  u8 scales[16];  // 4-bit scale and 4-bit min of each 16 values
  u8 qs[64];      // 2-bit codes
  u8 d[2], dmin[2];
};
struct BlockQ3K {
  u8 hmask[32];   // the codes' high bits
  u8 qs[64];      // their low 2 bits
  u8 scales[12];  // sixteen 6-bit scales
  u8 d[2];
};
struct BlockQ4K {
  u8 d[2], dmin[2];
  u8 scales[12];  // eight 6-bit scales and mins (scale_min_k4)
  u8 qs[128];     // 4-bit codes
};
struct BlockQ5K {
  u8 d[2], dmin[2];
  u8 scales[12];
  u8 qh[32];   // the codes' fifth bits
  u8 qs[128];  // their low 4 bits
};
struct BlockQ6K {
  u8 ql[128];         // the codes' low 4 bits
  u8 qh[64];          // their high 2 bits
  int8_t scales[16];  // one per 16 values
  u8 d[2];
};
struct BlockQ8K {
  u8 d[4];  // f32
  int8_t qs[256];
  u8 bsums[32];  // sums of 16 codes, int16 each (for dot products; not read to decode)
};
static_assert(sizeof(BlockQ2K) == 84 && sizeof(BlockQ3K) == 110 && sizeof(BlockQ4K) == 144 &&
              sizeof(BlockQ5K) == 176 && sizeof(BlockQ6K) == 210 && sizeof(BlockQ8K) == 292);

template <class Block>
inline const Block& block_at(const u8* p) noexcept {
  return *reinterpret_cast<const Block*>(p);
}
template <class Block>
inline Block& block_at(u8* p) noexcept {
  return *reinterpret_cast<Block*>(p);
}

/// Q4_K's and Q5_K's 6-bit scale `sc` and min `m` of sub-block j from the 12 packed bytes.
inline void scale_min_k4(int j, const u8* q, int& sc, int& m) noexcept {
  if (j < 4) {
    sc = q[j] & 63;
    m = q[j + 4] & 63;
  } else {
    sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// ---- one block decoded (dequantize_row_* for a block) or encoded (quantize_row_*_ref).
using BlockDecoder = void (*)(const u8* block, float* values);
using BlockEncoder = void (*)(const float* values, u8* block);

namespace ggml_decoders {
void q4_0(const u8*, float*);
void q4_1(const u8*, float*);
void q5_0(const u8*, float*);
void q5_1(const u8*, float*);
void q8_0(const u8*, float*);
void q2_k(const u8*, float*);
void q3_k(const u8*, float*);
void q4_k(const u8*, float*);
void q5_k(const u8*, float*);
void q6_k(const u8*, float*);
void q8_k(const u8*, float*);
void iq4_nl(const u8*, float*);
void iq4_xs(const u8*, float*);
void tq1_0(const u8*, float*);
void tq2_0(const u8*, float*);
void mxfp4(const u8*, float*);
void nvfp4(const u8*, float*);
void q1_0(const u8*, float*);
void q2_0(const u8*, float*);
// The codebook types (ggml_codebooks.cpp).
void iq2_xxs(const u8*, float*);
void iq2_xs(const u8*, float*);
void iq2_s(const u8*, float*);
void iq3_xxs(const u8*, float*);
void iq3_s(const u8*, float*);
void iq1_s(const u8*, float*);
void iq1_m(const u8*, float*);
}  // namespace ggml_decoders

namespace ggml_encoders {
void q4_0(const float*, u8*);
void q4_1(const float*, u8*);
void q5_0(const float*, u8*);
void q5_1(const float*, u8*);
void q8_0(const float*, u8*);
void q2_k(const float*, u8*);
void q3_k(const float*, u8*);
void q4_k(const float*, u8*);
void q5_k(const float*, u8*);
void q6_k(const float*, u8*);
}  // namespace ggml_encoders

/// One row of the table: everything tlio knows of a ggml type.
struct GgmlRow {
  GgmlType type;
  std::optional<Dtype> plain;        ///< the dtype of a plain type's bytes; none for a block type
  BlockDecoder decode = nullptr;     ///< a block type tlio decodes
  BlockEncoder encode = nullptr;     ///< a block type tlio writes as ggml's reference does
  uint32_t file_type = kNoFileType;  ///< llama.cpp's general.file_type for a model "mostly" of it
  static constexpr uint32_t kNoFileType = UINT32_MAX;
};

/// Every row, in ggml's id order.
std::span<const GgmlRow> ggml_rows() noexcept;
/// The row of ggml type `id`, or null for an id ggml does not know or has removed.
const GgmlRow* ggml_row(uint32_t id) noexcept;
inline const GgmlRow* ggml_row(GgmlTypeId id) noexcept {
  return ggml_row(static_cast<uint32_t>(id));
}

}  // namespace tlio::detail

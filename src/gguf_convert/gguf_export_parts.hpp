// gguf_convert/gguf_export_parts.hpp: the tensors of a GGUF export as planned (gguf_export.cpp
// plans them from the folder) and their writing: each read in pieces of whole rows, converted to
// F32, put in place (Q/K rows permuted, experts held stacked transposed or split), encoded on
// every core; gpt-oss's MXFP4 experts copied as ggml's MXFP4 blocks.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "gguf/gguf_writer.hpp"
#include "gguf_convert/gguf_arch.hpp"
#include "tlio/file.hpp"
#include "tlio/quant.hpp"
#include "tlio/transcode.hpp"

namespace tlio::detail {

/// One source tensor of a GGUF tensor: the tensor itself, or one expert of a stacked one.
struct SourcePart {
  const File* file;
  const TensorInfo* info;
  /// A quantized weight (info: its logical name and shape, F32 as decoded).
  const QuantizedWeight* quantized = nullptr;
};

/// A tensor taken apart (GgufStackedPart) read as [experts, in, out], its in-rows [begin, end)
/// taken (all but for DeepSeek's kv_b_proj, read per head).
struct StackedView {
  uint64_t experts = 0, in = 0, out = 0, begin = 0, end = 0;
};

struct PlannedTensor {
  std::vector<SourcePart> parts;  ///< none for a tensor made here (rope_freqs.weight)
  GgufTensorDecl decl;            ///< type F32 until the types are chosen
  uint64_t permute_heads = 0;
  float shift = 0;          ///< added to every value (Gemma's norms)
  bool weight = false;      ///< takes the type asked for (not a norm, bias, router or 1-D tensor)
  std::vector<float> made;  ///< the values of a tensor made here, written as F32
  /// A tensor taken apart (experts held stacked, kv_b_proj split per head): the part of the one
  /// source tensor this is (GgufStackedPart).
  const GgufStackedPart* stacked = nullptr;
  /// gpt-oss's MXFP4 blocks and scales copied as ggml's MXFP4 (the type is fixed), as
  /// llama.cpp's converter copies them.
  bool copy_mxfp4 = false;
  StackedView view = {};  ///< how `stacked`'s source is read
  /// A transcode's quantized weight (ggml_carry.hpp): its codes and scales carried into
  /// decl.type's blocks, or requantized into them, each row proven.
  bool carry = false;
};

/// What the pass reuses from piece to piece.
struct PiecePass {
  unsigned threads;
  std::span<const File> files;  ///< the model's, where quantized weights' parts are
  std::vector<std::byte> raw, encoded;
  TranscodeReport* carried = nullptr;  ///< a transcode's: an item per weight it carries
};

/// Rows of a piece of a tensor of `rows` rows of `cols` values: whole heads of `head_rows` rows
/// when its rows are permuted.
uint64_t piece_rows(uint64_t rows, uint64_t cols, uint64_t head_rows);
/// Bytes [offset, offset + n) of a file's data: its mapping, or read into `scratch`.
std::span<const std::byte> data_bytes(const File& f, uint64_t offset, uint64_t n,
                                      std::vector<std::byte>& scratch);
/// The stored tensor `name` of the model and its file.
std::pair<const File*, const TensorInfo*> stored_tensor(std::span<const File> files,
                                                        const std::string& name);
/// One MXFP4 block's 16 bytes of codes from the order of OpenAI, compressed-tensors and MLX (byte
/// i: codes 2i, 2i + 1 in its low and high nibbles) to ggml's (byte j: codes j, j + 16).
void mxfp4_to_ggml(const std::byte* in, std::byte* out);

/// Writes tensor `p` through `writer`: its parts one after another (a stacked tensor's experts
/// in order), or the values made here. Calls `piece_done` with each piece's values; returns the
/// bytes read.
uint64_t write_tensor(const PlannedTensor& p, GgufWriter& writer, PiecePass& pass,
                      const std::function<void(uint64_t)>& piece_done);

}  // namespace tlio::detail

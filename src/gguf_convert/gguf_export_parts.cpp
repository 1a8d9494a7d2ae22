// gguf_convert/gguf_export_parts.cpp: writing the tensors of a GGUF export (gguf_export_parts.hpp).
#include "gguf_convert/gguf_export_parts.hpp"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <optional>

#include "common/parallel.hpp"
#include "gguf_convert/ggml_carry.hpp"
#include "tlio/convert.hpp"
#include "tlio/error.hpp"
#include "tlio/ggml.hpp"

namespace tlio::detail {

// Source values per piece (F32): the piece and its encoding are all the memory a tensor takes.
constexpr uint64_t kPieceValues = uint64_t{1} << 22;

// Rows of a piece: whole heads when rows are permuted.
uint64_t piece_rows(uint64_t rows, uint64_t cols, uint64_t head_rows) {
  uint64_t n = std::max<uint64_t>(1, kPieceValues / std::max<uint64_t>(cols, 1));
  if (head_rows) n = std::max<uint64_t>(head_rows, n / head_rows * head_rows);
  return std::min(n, rows);
}

// Bytes [offset, offset + n) of a file's data: its mapping, or read into `scratch`.
std::span<const std::byte> data_bytes(const File& f, uint64_t offset, uint64_t n,
                                      std::vector<std::byte>& scratch) {
  if (!f.mapped_data().empty()) return f.mapped_data().subspan(offset, n);
  scratch.resize(n);
  f.read_data(offset, scratch);
  return scratch;
}

// The stored tensor `name` of the model and its file.
std::pair<const File*, const TensorInfo*> stored_tensor(std::span<const File> files,
                                                        const std::string& name) {
  for (const File& f : files)
    if (const TensorInfo* t = f.header().find(name)) return {&f, t};
  throw Error(ErrorCode::not_found, Rule::none, name, std::nullopt,
              fmt::format("{} is not in the model's files", name));
}

// Spreads the 4 bytes of `x` to the even bytes of the result.
static uint64_t spread_bytes(uint64_t x) {
  x = (x | (x << 16)) & 0x0000ffff0000ffffull;
  return (x | (x << 8)) & 0x00ff00ff00ff00ffull;
}

// One MXFP4 block's 16 bytes of codes from OpenAI's order (byte i: codes 2i, 2i + 1 in its low
// and high nibbles) to ggml's (byte j: codes j, j + 16): ggml's byte 2i is OpenAI's byte i's low
// nibble under byte i + 8's low one, byte 2i + 1 their high nibbles.
void mxfp4_to_ggml(const std::byte* in, std::byte* out) {
  static_assert(std::endian::native == std::endian::little);
  constexpr uint64_t kLow = 0x0f0f0f0f0f0f0f0full;
  uint64_t first, second;  // OpenAI's bytes 0-7 (codes 0-15), 8-15 (codes 16-31)
  std::memcpy(&first, in, 8);
  std::memcpy(&second, in + 8, 8);
  const uint64_t even = (first & kLow) | ((second & kLow) << 4);
  const uint64_t odd = ((first >> 4) & kLow) | (second & ~kLow);
  const uint64_t lo = spread_bytes(even & 0xffffffff) | (spread_bytes(odd & 0xffffffff) << 8);
  const uint64_t hi = spread_bytes(even >> 32) | (spread_bytes(odd >> 32) << 8);
  std::memcpy(out, &lo, 8);
  std::memcpy(out + 8, &hi, 8);
}

namespace {

// Adds `shift` to each value as llama.cpp's converter does: in float32, and in float16 for an F16
// source (torch adds in a tensor's own dtype, and the converter widens only the others first).
void shift_values(std::span<float> values, float shift, Dtype source) {
  for (float& v : values) v += shift;
  if (source != Dtype::F16) return;
  std::vector<uint16_t> half(values.size());
  convert(Dtype::F32, std::as_bytes(values), Dtype::F16, std::as_writable_bytes(std::span(half)),
          values.size());
  convert(Dtype::F16, std::as_bytes(std::span(half)), Dtype::F32, std::as_writable_bytes(values),
          values.size());
}

// A quantized weight's piece: each row decoded to F32 and encoded, rows spread over every core
// (the decoder is made for this tensor alone: every weight's at once would hold all their scales).
uint64_t write_decoded_part(const PlannedTensor& p, const SourcePart& part, GgufWriter& writer,
                            PiecePass& pass, const std::function<void(uint64_t)>& piece_done) {
  const QuantizedReader decoded(pass.files, *part.quantized);
  const uint64_t rows = part.info->shape[0], cols = part.info->shape.back();
  const uint64_t hd = p.permute_heads ? rows / p.permute_heads : 0;  // checked when planned
  const GgmlType type = *ggml_type(p.decl.type);
  const uint64_t row_bytes = cols / type.block * type.block_bytes,
                 step = piece_rows(rows, cols, hd);
  for (uint64_t r = 0; r < rows; r += step) {
    const uint64_t n = std::min(step, rows - r);
    pass.encoded.resize(n * row_bytes);
    parallel_for(n, 2, 1, pass.threads, [&](uint64_t b, uint64_t e) {
      std::vector<float> values(cols);
      for (uint64_t o = b; o < e; ++o) {
        const uint64_t from =
            hd ? hf_row_of_gguf_row(o, hd) : o;  // whole heads per piece: within it
        decoded.read((r + from) * cols, cols, Dtype::F32,
                     std::as_writable_bytes(std::span(values)));
        if (p.shift != 0) shift_values(values, p.shift, Dtype::F32);
        ggml_encode(type.id, values, std::span(pass.encoded).subspan(o * row_bytes, row_bytes));
      }
    });
    writer.append(pass.encoded);
    piece_done(n * cols);
  }
  return part.quantized->stored_bytes;
}

// Values [offset, offset + count) of the row-major tensor a part is, as F32: decoded, converted
// from the file's mapping, or read (a store that is not mapped).
class PartValues {
 public:
  PartValues(const SourcePart& part, std::span<const File> files)
      : t_(*part.info), file_(*part.file) {
    if (part.quantized) decoded_.emplace(files, *part.quantized);
  }
  void read(uint64_t offset, std::span<float> out, std::vector<std::byte>& scratch) const {
    const auto dst = std::as_writable_bytes(out);
    if (decoded_) return decoded_->read(offset, out.size(), Dtype::F32, dst);
    const uint64_t bytes = dtype_bits(t_.dtype) / 8;
    convert(t_.dtype, data_bytes(file_, t_.begin + offset * bytes, out.size() * bytes, scratch),
            Dtype::F32, dst, out.size());
  }

 private:
  const TensorInfo& t_;
  const File& file_;
  std::optional<QuantizedReader> decoded_;
};

// A tensor taken apart (GgufStackedPart), its source read as p.view's [E, in, out] with in-rows
// [begin, end): transposed, each GGUF row (e, r) the source's column r * every + first of expert
// e over those in-rows; else each GGUF row (e, i) in-row i's values r * every + first (a bias is
// one in-row). Pieces of whole GGUF rows, gathered on every core and encoded.
uint64_t write_stacked_part(const PlannedTensor& p, const SourcePart& part, GgufWriter& writer,
                            PiecePass& pass, const std::function<void(uint64_t)>& piece_done) {
  const GgufStackedPart& how = *p.stacked;
  const StackedView& v = p.view;  // checked when planned
  const PartValues source(part, pass.files);
  const uint64_t taken = v.out / how.every, in_rows = v.end - v.begin;
  const uint64_t rows = how.transposed ? taken : in_rows, cols = how.transposed ? in_rows : taken;
  const GgmlType type = *ggml_type(p.decl.type);
  const uint64_t row_bytes = cols / type.block * type.block_bytes;
  std::vector<float> piece;
  for (uint64_t e = 0; e < v.experts; ++e) {
    const uint64_t step = piece_rows(rows, cols, 0);
    for (uint64_t r0 = 0; r0 < rows; r0 += step) {
      const uint64_t n = std::min(step, rows - r0);
      piece.resize(n * cols);
      if (how.transposed) {  // each in-row gives a value of every GGUF row of the piece
        const uint64_t span = (n - 1) * how.every + 1;
        parallel_for(in_rows, 2, 1, pass.threads, [&](uint64_t b, uint64_t end) {
          std::vector<float> values(span);
          std::vector<std::byte> scratch;
          for (uint64_t c = b; c < end; ++c) {
            source.read((e * v.in + v.begin + c) * v.out + r0 * how.every + how.first, values,
                        scratch);
            for (uint64_t j = 0; j < n; ++j) piece[j * cols + c] = values[j * how.every];
          }
        });
      } else {  // each in-row is a GGUF row
        std::vector<float> values(v.out);
        for (uint64_t j = 0; j < n; ++j) {
          source.read((e * v.in + v.begin + r0 + j) * v.out, values, pass.raw);
          for (uint64_t k = 0; k < cols; ++k)
            piece[j * cols + k] = values[k * how.every + how.first];
        }
      }
      pass.encoded.resize(n * row_bytes);
      parallel_for(n, 2, 1, pass.threads, [&](uint64_t b, uint64_t end) {
        for (uint64_t j = b; j < end; ++j)
          ggml_encode(type.id, std::span(piece).subspan(j * cols, cols),
                      std::span(pass.encoded).subspan(j * row_bytes, row_bytes));
      });
      writer.append(pass.encoded);
      piece_done(n * cols);
    }
  }
  // The part of the source this tensor takes (gate or up of gate_up, k_b or v_b of kv_b).
  const uint64_t whole = part.quantized ? part.quantized->stored_bytes : part.info->byte_size();
  return whole / v.in * in_rows / how.every;
}

// gpt-oss's MXFP4 experts (<p>_blocks U8 [E, out, in/32, 16], <p>_scales U8 [E, out, in/32]) as
// ggml's MXFP4 blocks, as llama.cpp's converter copies them: GGUF row (e, r) is stored row
// r * every + first of expert e, each block its scale byte (E8M0 both) then the 32 codes
// repacked from gpt-oss's order (code 2i in byte i's low nibble, 2i + 1 in its high one) to
// ggml's (code j in byte j's low nibble, j + 16 in its high one). No value changes.
uint64_t write_mxfp4_copy(const PlannedTensor& p, const SourcePart& part, GgufWriter& writer,
                          PiecePass& pass, const std::function<void(uint64_t)>& piece_done) {
  const GgufStackedPart& how = *p.stacked;
  const auto [block_file, blocks] = stored_tensor(pass.files, part.quantized->stored.at(0));
  const auto [scale_file, scales] = stored_tensor(pass.files, part.quantized->stored.at(1));
  const Shape& s = blocks->shape;  // [E, out, in/32, 16], checked when the weight was found
  const uint64_t experts = s[0], out = s[1], groups = s[2], rows = out / how.every;
  const GgmlType type = *ggml_type(ggml_id(GgmlTypeId::MXFP4));
  const uint64_t row_bytes = groups * type.block_bytes;
  std::vector<std::byte> block_scratch, scale_scratch;
  for (uint64_t e = 0; e < experts; ++e) {
    const uint64_t step = piece_rows(rows, groups * type.block, 0);
    for (uint64_t r0 = 0; r0 < rows; r0 += step) {
      const uint64_t n = std::min(step, rows - r0);
      // The stored rows the piece takes, and those between them.
      const uint64_t first = e * out + r0 * how.every + how.first, span = (n - 1) * how.every + 1;
      const auto codes = data_bytes(*block_file, blocks->begin + first * groups * 16,
                                    span * groups * 16, block_scratch);
      const auto exps =
          data_bytes(*scale_file, scales->begin + first * groups, span * groups, scale_scratch);
      pass.encoded.resize(n * row_bytes);
      const uint64_t every = how.every, block_bytes = type.block_bytes;
      parallel_for(n, 64, 1, pass.threads, [&](uint64_t b, uint64_t end) {
        for (uint64_t j = b; j < end; ++j) {
          const std::byte* in = codes.data() + j * every * groups * 16;
          const std::byte* exp = exps.data() + j * every * groups;
          std::byte* to = pass.encoded.data() + j * row_bytes;
          for (uint64_t g = 0; g < groups; ++g, in += 16, to += block_bytes) {
            to[0] = exp[g];
            mxfp4_to_ggml(in, to + 1);
          }
        }
      });
      writer.append(pass.encoded);
      piece_done(n * groups * type.block);
    }
  }
  return rows * experts * groups * (16 + 1);
}

// Writes `part` of tensor `p` through `writer` in pieces of whole rows (whole heads where its
// rows are permuted): each row converted to F32, put in its place and encoded, rows spread over
// every core, read straight from the file's mapping (a copy of the piece from other stores).
// Calls `piece_done` with each piece's values; returns the bytes read.
uint64_t write_part(const PlannedTensor& p, const SourcePart& part, GgufWriter& writer,
                    PiecePass& pass, const std::function<void(uint64_t)>& piece_done) {
  if (p.carry) return write_carried_part(p, part, writer, pass, piece_done);
  if (p.copy_mxfp4) return write_mxfp4_copy(p, part, writer, pass, piece_done);
  if (p.stacked) return write_stacked_part(p, part, writer, pass, piece_done);
  if (part.quantized) return write_decoded_part(p, part, writer, pass, piece_done);
  const TensorInfo& t = *part.info;
  // A 2-D tensor is rows of cols values; a 1-D one (a bias) one row. Permuted rows are
  // shape[0]'s either way: a bias's values are its rows.
  const bool matrix = t.shape.size() == 2;
  const uint64_t rows = matrix ? t.shape[0] : 1, cols = t.shape.back();
  const uint64_t hd = p.permute_heads ? t.shape[0] / p.permute_heads : 0;  // checked when planned
  const GgmlType type = *ggml_type(p.decl.type);
  const uint64_t row_bytes = cols / type.block * type.block_bytes,
                 in_row = cols * dtype_bits(t.dtype) / 8;
  const std::span<const std::byte> mapped = part.file->mapped_data();
  const uint64_t step = matrix ? piece_rows(rows, cols, hd) : 1;
  uint64_t read = 0;
  for (uint64_t r = 0; r < rows; r += step) {
    const uint64_t n = std::min(step, rows - r);
    std::span<const std::byte> raw;
    if (!mapped.empty()) {
      raw = mapped.subspan(t.begin + r * in_row, n * in_row);
    } else {
      std::vector<SliceIndex> range;
      if (matrix) range.push_back(SliceIndex::range(r, r + n));
      pass.raw = part.file->read_slice(t.name, range);
      raw = pass.raw;
    }
    pass.encoded.resize(n * row_bytes);
    if (!matrix && hd) {  // a bias: its values are the rows put in place
      std::vector<float> values(cols), placed(cols);
      convert(t.dtype, raw, Dtype::F32, std::as_writable_bytes(std::span(values)), cols);
      for (uint64_t i = 0; i < cols; ++i) placed[i] = values[hf_row_of_gguf_row(i, hd)];
      ggml_encode(type.id, placed, pass.encoded);
    } else {
      parallel_for(n, 2, 1, pass.threads, [&](uint64_t b, uint64_t e) {
        std::vector<float> values(cols);
        for (uint64_t o = b; o < e; ++o) {
          const uint64_t from =
              hd ? hf_row_of_gguf_row(o, hd) : o;  // whole heads per piece: within it
          convert(t.dtype, raw.subspan(from * in_row, in_row), Dtype::F32,
                  std::as_writable_bytes(std::span(values)), cols);
          if (p.shift != 0) shift_values(values, p.shift, t.dtype);
          ggml_encode(type.id, values, std::span(pass.encoded).subspan(o * row_bytes, row_bytes));
        }
      });
    }
    writer.append(pass.encoded);
    read += raw.size();
    piece_done(n * cols);
  }
  return read;
}

}  // namespace

uint64_t write_tensor(const PlannedTensor& p, GgufWriter& writer, PiecePass& pass,
                      const std::function<void(uint64_t)>& piece_done) {
  if (p.parts.empty()) writer.append(std::as_bytes(std::span(p.made)));
  uint64_t read = 0;
  for (const SourcePart& part : p.parts) read += write_part(p, part, writer, pass, piece_done);
  return read;
}

}  // namespace tlio::detail

// quant/bnb.cpp: bitsandbytes arithmetic (tables, 4-bit and 8-bit blockwise, nested absmax,
// LLM.int8) and the quant_state JSON. Bit-exact with bnb >= 0.50's CPU default backend; the
// facts behind each step are in docs/quantization.md.
#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>

#include <fmt/core.h>
#include <fmt/format.h>

#include "common/json_doc.hpp"
#include "common/parallel.hpp"
#include "common/json_text.hpp"
#include "quant/bnb_detail.hpp"
#include "common/checked.hpp"
#include "io/copy.hpp"
#include "quant/bnb_kernels.hpp"
#include "tlio/bnb.hpp"
#include "tlio/convert.hpp"
#include "tlio/error.hpp"

namespace tlio {

namespace {

// Tables as float32 bit patterns (bitsandbytes functional.get_4bit_type and
// create_dynamic_map(); checked against the goldens' tables.json in tests).
constexpr std::array<uint32_t, 16> kNf4Bits = {
    0xbf800000u, 0xbf3239b1u, 0xbf066b30u, 0xbeca32a0u, 0xbe91a24du, 0xbe3d353fu, 0xbdba7871u, 0x00000000u,
    0x3da2faffu, 0x3e24cae3u, 0x3e7c04ddu, 0x3ead033au, 0x3ee1a4b8u, 0x3f1007abu, 0x3f3913b3u, 0x3f800000u,
};
// FP4 entry 8 is +0.0: bnb builds the table from a Python list whose "-0" is the integer 0.
constexpr std::array<uint32_t, 16> kFp4Bits = {
    0x00000000u, 0x3baaaaabu, 0x3f2aaaabu, 0x3f800000u, 0x3eaaaaabu, 0x3f000000u, 0x3e2aaaabu, 0x3e800000u,
    0x00000000u, 0xbbaaaaabu, 0xbf2aaaabu, 0xbf800000u, 0xbeaaaaabu, 0xbf000000u, 0xbe2aaaabu, 0xbe800000u,
};
constexpr std::array<uint32_t, 256> kDynamicBits = {
    0xbf7e3333u, 0xbf7a9999u, 0xbf770000u, 0xbf736666u, 0xbf6fccccu, 0xbf6c3333u, 0xbf68999au, 0xbf650000u,
    0xbf616666u, 0xbf5dccccu, 0xbf5a3333u, 0xbf569999u, 0xbf530000u, 0xbf4f6666u, 0xbf4bccccu, 0xbf483333u,
    0xbf44999au, 0xbf410000u, 0xbf3d6667u, 0xbf39cccdu, 0xbf363334u, 0xbf32999au, 0xbf2f0000u, 0xbf2b6667u,
    0xbf27cccdu, 0xbf243333u, 0xbf20999au, 0xbf1d0000u, 0xbf196666u, 0xbf15cccdu, 0xbf123334u, 0xbf0e999au,
    0xbf0b0000u, 0xbf076666u, 0xbf03cccdu, 0xbf003333u, 0xbef93334u, 0xbef20000u, 0xbeeaccccu, 0xbee3999au,
    0xbedc6666u, 0xbed53332u, 0xbece0000u, 0xbec6ccccu, 0xbebf999au, 0xbeb86666u, 0xbeb13332u, 0xbeaa0000u,
    0xbea2ccccu, 0xbe9b999au, 0xbe946666u, 0xbe8d3334u, 0xbe860000u, 0xbe7d999au, 0xbe6f3334u, 0xbe60cccdu,
    0xbe526666u, 0xbe440000u, 0xbe359999u, 0xbe273333u, 0xbe18cccdu, 0xbe0a6666u, 0xbdf80000u, 0xbddb3334u,
    0xbdc9eb85u, 0xbdc428f5u, 0xbdbe6667u, 0xbdb8a3d7u, 0xbdb2e148u, 0xbdad1eb8u, 0xbda75c28u, 0xbda1999au,
    0xbd9bd70au, 0xbd96147bu, 0xbd9051ebu, 0xbd8a8f5du, 0xbd84cccdu, 0xbd7e147au, 0xbd728f5du, 0xbd670a3du,
    0xbd5b851fu, 0xbd500000u, 0xbd447ae1u, 0xbd38f5c3u, 0xbd2d70a3u, 0xbd21eb85u, 0xbd166667u, 0xbd0ae147u,
    0xbcfeb852u, 0xbce7ae13u, 0xbcd0a3d7u, 0xbcb9999au, 0xbca28f5cu, 0xbc8b851fu, 0xbc68f5c3u, 0xbc3ae148u,
    0xbc1f3b64u, 0xbc160418u, 0xbc0ccccdu, 0xbc039581u, 0xbbf4bc6au, 0xbbe24dd3u, 0xbbcfdf3bu, 0xbbbd70a4u,
    0xbbab020du, 0xbb989374u, 0xbb8624ddu, 0xbb676c8au, 0xbb428f5cu, 0xbb1db22du, 0xbaf1a9fcu, 0xbaa7ef9du,
    0xba7765ffu, 0xba59e83eu, 0xba3c6a80u, 0xba1eecc1u, 0xba016f01u, 0xb9c7e283u, 0xb98ce705u, 0xb923d70bu,
    0xb8ba1f4bu, 0xb88aefb3u, 0xb8378034u, 0xb7b24206u, 0xb70205ffu, 0xb65a1a94u, 0xb513a3b7u, 0x00000000u,
    0x3513a3b7u, 0x365a1a94u, 0x370205ffu, 0x37b24206u, 0x38378034u, 0x388aefb3u, 0x38ba1f4bu, 0x3923d70bu,
    0x398ce705u, 0x39c7e283u, 0x3a016f01u, 0x3a1eecc1u, 0x3a3c6a80u, 0x3a59e83eu, 0x3a7765ffu, 0x3aa7ef9du,
    0x3af1a9fcu, 0x3b1db22du, 0x3b428f5cu, 0x3b676c8au, 0x3b8624ddu, 0x3b989374u, 0x3bab020du, 0x3bbd70a4u,
    0x3bcfdf3bu, 0x3be24dd3u, 0x3bf4bc6au, 0x3c039581u, 0x3c0ccccdu, 0x3c160418u, 0x3c1f3b64u, 0x3c3ae148u,
    0x3c68f5c3u, 0x3c8b851fu, 0x3ca28f5cu, 0x3cb9999au, 0x3cd0a3d7u, 0x3ce7ae13u, 0x3cfeb852u, 0x3d0ae147u,
    0x3d166667u, 0x3d21eb85u, 0x3d2d70a3u, 0x3d38f5c3u, 0x3d447ae1u, 0x3d500000u, 0x3d5b851fu, 0x3d670a3du,
    0x3d728f5du, 0x3d7e147au, 0x3d84cccdu, 0x3d8a8f5du, 0x3d9051ebu, 0x3d96147bu, 0x3d9bd70au, 0x3da1999au,
    0x3da75c28u, 0x3dad1eb8u, 0x3db2e148u, 0x3db8a3d7u, 0x3dbe6667u, 0x3dc428f5u, 0x3dc9eb85u, 0x3ddb3334u,
    0x3df80000u, 0x3e0a6666u, 0x3e18cccdu, 0x3e273333u, 0x3e359999u, 0x3e440000u, 0x3e526666u, 0x3e60cccdu,
    0x3e6f3334u, 0x3e7d999au, 0x3e860000u, 0x3e8d3334u, 0x3e946666u, 0x3e9b999au, 0x3ea2ccccu, 0x3eaa0000u,
    0x3eb13332u, 0x3eb86666u, 0x3ebf999au, 0x3ec6ccccu, 0x3ece0000u, 0x3ed53332u, 0x3edc6666u, 0x3ee3999au,
    0x3eeaccccu, 0x3ef20000u, 0x3ef93334u, 0x3f003333u, 0x3f03cccdu, 0x3f076666u, 0x3f0b0000u, 0x3f0e999au,
    0x3f123334u, 0x3f15cccdu, 0x3f196666u, 0x3f1d0000u, 0x3f20999au, 0x3f243333u, 0x3f27cccdu, 0x3f2b6667u,
    0x3f2f0000u, 0x3f32999au, 0x3f363334u, 0x3f39cccdu, 0x3f3d6667u, 0x3f410000u, 0x3f44999au, 0x3f483333u,
    0x3f4bccccu, 0x3f4f6666u, 0x3f530000u, 0x3f569999u, 0x3f5a3333u, 0x3f5dccccu, 0x3f616666u, 0x3f650000u,
    0x3f68999au, 0x3f6c3333u, 0x3f6fccccu, 0x3f736666u, 0x3f770000u, 0x3f7a9999u, 0x3f7e3333u, 0x3f800000u,
};

template <size_t N>
std::array<float, N> floats_of(const std::array<uint32_t, N>& bits) {
  std::array<float, N> out{};
  for (size_t i = 0; i < N; ++i) out[i] = std::bit_cast<float>(bits[i]);
  return out;
}

// bnb clamps a block's absmax to at least 1e-38 (as float32: the subnormal 0x006CE3EE) before
// dividing by it.
constexpr float kMinAbsmax = 1e-38f;

// A quant_state shape is a torch.Size: torch allows at most 64 dimensions.
constexpr size_t kMaxQuantStateRank = 64;

// Elements per task when quantizing or dequantizing on several threads.
constexpr uint64_t kParallelMinElements = uint64_t{1} << 20;
// Elements dequantized per step into a cached scratch before being streamed out.
constexpr uint64_t kScratchElements = 4096;

// What 4-bit quantization needs of a code table: the 15 float32 midpoints between its values in
// ascending order, and the code of each sorted position.
struct Codebook4 {
  std::array<float, 15> bounds{};
  std::array<uint8_t, 16> code_of_position{};
  uint8_t zero_code = 0;  // the code of 0.0: pads an odd element count
};

Codebook4 make_codebook(const std::array<float, 16>& table) {
  Codebook4 c;
  std::array<uint8_t, 16> order{};
  for (uint8_t i = 0; i < 16; ++i) order[i] = i;
  // Stable: FP4's two +0.0 entries keep code 0 before code 8, as torch's argsort gave.
  std::stable_sort(order.begin(), order.end(), [&](uint8_t a, uint8_t b) { return table[a] < table[b]; });
  for (int i = 0; i < 15; ++i) c.bounds[i] = (table[order[i]] + table[order[i + 1]]) / 2.0f;
  c.code_of_position = order;
  uint8_t pos = 0;
  for (float b : c.bounds) pos = static_cast<uint8_t>(pos + (b < 0.0f));
  c.zero_code = order[pos];
  return c;
}

const Codebook4& codebook(BnbQuantType type) {
  static const Codebook4 nf4 = make_codebook(bnb_4bit_table(BnbQuantType::nf4));
  static const Codebook4 fp4 = make_codebook(bnb_4bit_table(BnbQuantType::fp4));
  return type == BnbQuantType::nf4 ? nf4 : fp4;
}

// The 255 midpoints of the dynamic map (8-bit bucketize bounds).
const std::array<float, 255>& dynamic_bounds() {
  static const std::array<float, 255> bounds = [] {
    std::array<float, 255> b{};
    const auto& code = bnb_dynamic_map();
    for (size_t i = 0; i < 255; ++i) b[i] = (code[i] + code[i + 1]) / 2.0f;
    return b;
  }();
  return bounds;
}

uint64_t block_count(uint64_t n, uint64_t blocksize) { return n / blocksize + (n % blocksize != 0); }

void check_size(const char* what, size_t have, uint64_t want) {
  if (have != want)
    throw_invalid(fmt::format("{} holds {} entries, {} are needed", what, have, want));
}

// The scaling both quantizers share. Full blocks multiply by f32(1 / max(absmax, 1e-38)) and
// store the plain absmax; the partial last block divides by max(absmax, 1e-38) and stores that.
struct BlockScale {
  float stored_absmax;
  float scale;
  bool divide;
};

BlockScale block_scale(const float* x, uint64_t len, uint64_t first_index, bool partial) {
  const uint32_t bits = detail::bnb_absmax_bits(x, len);
  if (bits >= 0x7F800000u)
    for (uint64_t k = 0; k < len; ++k)
      if (!std::isfinite(x[k]))
        throw_invalid(fmt::format("value {} is {}", first_index + k, x[k]));
  const float absmax = std::bit_cast<float>(bits);
  if (partial) {
    const float clamped = std::max(absmax, kMinAbsmax);
    return {clamped, clamped, true};
  }
  return {absmax, 1.0f / std::max(absmax, kMinAbsmax), false};
}

float scaled(float x, const BlockScale& s) {
  return std::min(std::max(s.divide ? x / s.scale : x * s.scale, -1.0f), 1.0f);
}

Dtype check_float_out(Dtype out) {
  if (out != Dtype::F32 && out != Dtype::F16 && out != Dtype::BF16)
    throw Error(ErrorCode::unsupported, Rule::none, {}, std::nullopt,
                fmt::format("bitsandbytes weights dequantize to F32, F16 or BF16, not {}",
                            dtype_name(out)));
  return out;
}

// Produces elements [first, first + count) as `out` in dst, on the configured threads: `f32`
// fills F32 values for a sub-range; `bf16` (optional) fills BF16 bits directly for sub-ranges
// that start at an even element and returns false where it cannot. Large F32 and BF16 outputs
// are made in a cached scratch and streamed out, sparing a read for ownership of each output
// line.
template <class F32Fn, class BF16Fn>
void produce(uint64_t first, uint64_t count, Dtype out, std::span<std::byte> dst, F32Fn&& f32,
             BF16Fn&& bf16) {
  check_float_out(out);
  const uint64_t out_bytes = dtype_bits(out) / 8;
  if (dst.size() != count * out_bytes)
    throw_invalid(fmt::format("destination holds {} bytes, {} {} values need {}", dst.size(), count,
                              dtype_name(out), count * out_bytes));
  const bool stream = out != Dtype::F16 && dst.size() >= detail::kStreamingCopyThreshold;
  detail::parallel_for(count, kParallelMinElements, kScratchElements,
                       detail::thread_count(detail::configured_threads()),
                       [&](uint64_t b, uint64_t e) {
    std::vector<float> scratch(kScratchElements);
    for (uint64_t i = b; i < e; i += kScratchElements) {
      const uint64_t m = std::min(kScratchElements, e - i);
      std::byte* o = dst.data() + i * out_bytes;
      if (out == Dtype::F32 && !stream) {
        f32(first + i, m, reinterpret_cast<float*>(o));
        continue;
      }
      if (out == Dtype::BF16 && (first + i) % 2 == 0) {
        auto* bits = reinterpret_cast<uint16_t*>(stream ? static_cast<void*>(scratch.data()) : o);
        if (bf16(first + i, m, bits)) {
          if (stream) detail::stream_bytes(o, reinterpret_cast<const std::byte*>(bits), m * 2);
          continue;
        }
      }
      f32(first + i, m, scratch.data());
      if (out == Dtype::F32)
        detail::stream_bytes(o, reinterpret_cast<const std::byte*>(scratch.data()), m * 4);
      else
        convert(Dtype::F32, std::as_bytes(std::span(scratch.data(), m)), out, {o, m * out_bytes}, m);
    }
  });
}

}  // namespace

// ---- tables ---------------------------------------------------------------------------------------

std::string_view bnb_quant_type_name(BnbQuantType type) noexcept {
  return type == BnbQuantType::nf4 ? "nf4" : "fp4";
}

std::optional<BnbQuantType> parse_bnb_quant_type(std::string_view name) noexcept {
  if (name == "nf4") return BnbQuantType::nf4;
  if (name == "fp4") return BnbQuantType::fp4;
  return std::nullopt;
}

bool is_bnb_4bit_blocksize(uint64_t blocksize) noexcept {
  return blocksize >= 32 && blocksize <= 4096 && std::has_single_bit(blocksize);
}

const std::array<float, 16>& bnb_4bit_table(BnbQuantType type) noexcept {
  static const std::array<float, 16> nf4 = floats_of(kNf4Bits), fp4 = floats_of(kFp4Bits);
  return type == BnbQuantType::nf4 ? nf4 : fp4;
}

const std::array<float, 256>& bnb_dynamic_map() noexcept {
  static const std::array<float, 256> map = floats_of(kDynamicBits);
  return map;
}

// ---- the mean ---------------------------------------------------------------------------------

namespace {

// torch's CPU float32 sum of a contiguous vector (at::native cascade_sum, AVX2 build: 8-float
// vectors). Items are either vectors of 8 floats or single floats; rows of 4 items ("ilp") are
// accumulated into 4 levels of partial sums that are merged every 2^level_power rows, then
// folded. Reproducing the order is what makes nested_offset match bnb to the last bit.
template <size_t W>
using Lanes = std::array<float, W>;

template <size_t W>
void add_to(Lanes<W>& acc, const Lanes<W>& v) {
  for (size_t l = 0; l < W; ++l) acc[l] += v[l];
}

template <size_t W>
Lanes<W> item_at(const float* data, uint64_t i) {
  Lanes<W> v;
  std::memcpy(v.data(), data + i * W, sizeof(v));
  return v;
}

template <size_t W>
Lanes<W> cascade_row_sum(const float* data, uint64_t items) {
  constexpr int kIlp = 4, kLevels = 4;
  const uint64_t rows = items / kIlp;
  std::array<Lanes<W>, kIlp> partial{};
  if (rows > 0) {
    const int ceil_log2 = rows <= 1 ? 0 : static_cast<int>(std::bit_width(rows - 1));
    const int level_power = std::max(4, ceil_log2 / kLevels);
    const uint64_t level_step = uint64_t{1} << level_power, level_mask = level_step - 1;
    std::array<std::array<Lanes<W>, kIlp>, kLevels> acc{};
    uint64_t i = 0;
    while (i + level_step <= rows) {
      for (uint64_t j = 0; j < level_step; ++j, ++i)
        for (int k = 0; k < kIlp; ++k) add_to(acc[0][k], item_at<W>(data, i * kIlp + k));
      for (int j = 1; j < kLevels; ++j) {
        for (int k = 0; k < kIlp; ++k) {
          add_to(acc[j][k], acc[j - 1][k]);
          acc[j - 1][k] = {};
        }
        if (i & (level_mask << (j * level_power))) break;
      }
    }
    for (; i < rows; ++i)
      for (int k = 0; k < kIlp; ++k) add_to(acc[0][k], item_at<W>(data, i * kIlp + k));
    for (int j = 1; j < kLevels; ++j)
      for (int k = 0; k < kIlp; ++k) add_to(acc[0][k], acc[j][k]);
    partial = acc[0];
  }
  for (uint64_t i = rows * kIlp; i < items; ++i) add_to(partial[0], item_at<W>(data, i));
  for (int k = 1; k < kIlp; ++k) add_to(partial[0], partial[k]);
  return partial[0];
}

float torch_sum(std::span<const float> x) {
  constexpr size_t kVector = 8;
  if (x.size() < kVector) return cascade_row_sum<1>(x.data(), x.size())[0];
  const uint64_t vectors = x.size() / kVector;
  const Lanes<kVector> acc = cascade_row_sum<kVector>(x.data(), vectors);
  float total = 0;
  for (uint64_t k = vectors * kVector; k < x.size(); ++k) total += x[k];
  for (float lane : acc) total += lane;
  return total;
}

}  // namespace

float detail::bnb_mean(std::span<const float> values) noexcept {
  if (values.empty()) return std::nanf("");
  return torch_sum(values) / static_cast<float>(values.size());
}

// ---- 4-bit ------------------------------------------------------------------------------------

void bnb_quantize_4bit(std::span<const float> x, BnbQuantType type, uint64_t blocksize,
                       std::span<uint8_t> packed, std::span<float> absmax) {
  if (!is_bnb_4bit_blocksize(blocksize))
    throw_invalid(fmt::format("blocksize {} is not one of 32, 64, ..., 4096 (rule BNB-001)", blocksize));
  const uint64_t n = x.size(), blocks = block_count(n, blocksize);
  check_size("the packed buffer", packed.size(), n / 2 + n % 2);
  check_size("the absmax buffer", absmax.size(), blocks);
  const Codebook4& book = codebook(type);
  detail::parallel_for(blocks, kParallelMinElements / blocksize, 1,
                       detail::thread_count(detail::configured_threads()),
                       [&](uint64_t b0, uint64_t b1) {
    std::vector<uint8_t> pos(blocksize);
    for (uint64_t b = b0; b < b1; ++b) {
      const uint64_t start = b * blocksize, len = std::min(blocksize, n - start);
      const BlockScale s = block_scale(x.data() + start, len, start, len < blocksize);
      absmax[b] = s.stored_absmax;
      detail::bnb_bucketize15(x.data() + start, len, s.scale, s.divide, book.bounds.data(), pos.data());
      const uint8_t* code = book.code_of_position.data();
      uint8_t* out = packed.data() + start / 2;  // blocksize is even: blocks start on a byte
      for (uint64_t k = 0; k + 1 < len; k += 2)
        out[k / 2] = static_cast<uint8_t>(code[pos[k]] << 4 | code[pos[k + 1]]);
      if (len % 2) out[len / 2] = static_cast<uint8_t>(code[pos[len - 1]] << 4 | book.zero_code);
    }
  });
}

void bnb_dequantize_4bit(std::span<const uint8_t> packed, std::span<const float> absmax,
                         BnbQuantType type, uint64_t blocksize, uint64_t first, uint64_t count,
                         Dtype out, std::span<std::byte> dst) {
  if (!is_bnb_4bit_blocksize(blocksize))
    throw_invalid(fmt::format("blocksize {} is not one of 32, 64, ..., 4096 (rule BNB-001)", blocksize));
  const uint64_t n = packed.size() * 2;
  const auto end = detail::checked_add(first, count);
  if (!end || *end > n)
    throw_invalid(fmt::format("elements [{}, +{}) are outside the {} packed values", first, count, n));
  if (count > 0 && absmax.size() < block_count(*end, blocksize))
    throw_invalid(fmt::format("{} absmax values cover fewer than the {} elements asked for",
                              absmax.size(), *end));
  const float* table = bnb_4bit_table(type).data();
  produce(first, count, out, dst,
          [&](uint64_t at, uint64_t m, float* o) {
            detail::bnb_dequant4_f32(packed.data(), absmax.data(), table, blocksize, at, m, o);
          },
          [&](uint64_t at, uint64_t m, uint16_t* o) {
            detail::bnb_dequant4_bf16(packed.data(), absmax.data(), table, blocksize, at, m, o);
            return true;
          });
}

// ---- 8-bit blockwise --------------------------------------------------------------------------

void bnb_quantize_blockwise8(std::span<const float> x, uint64_t blocksize, std::span<uint8_t> q,
                             std::span<float> absmax) {
  if (blocksize == 0) throw_invalid("blocksize 0");
  const uint64_t n = x.size(), blocks = block_count(n, blocksize);
  check_size("the code buffer", q.size(), n);
  check_size("the absmax buffer", absmax.size(), blocks);
  const auto& bounds = dynamic_bounds();
  for (uint64_t b = 0; b < blocks; ++b) {
    const uint64_t start = b * blocksize, len = std::min(blocksize, n - start);
    const BlockScale s = block_scale(x.data() + start, len, start, len < blocksize);
    absmax[b] = s.stored_absmax;
    for (uint64_t k = 0; k < len; ++k)  // the number of bounds below the value
      q[start + k] = static_cast<uint8_t>(
          std::lower_bound(bounds.begin(), bounds.end(), scaled(x[start + k], s)) - bounds.begin());
  }
}

void bnb_dequantize_blockwise8(std::span<const uint8_t> q, std::span<const float> absmax,
                               std::span<const float> code, uint64_t blocksize,
                               std::span<float> out) {
  if (blocksize == 0) throw_invalid("blocksize 0");
  check_size("the code map", code.size(), 256);
  check_size("the absmax buffer", absmax.size(), block_count(q.size(), blocksize));
  check_size("the output", out.size(), q.size());
  for (uint64_t i = 0; i < q.size(); ++i) out[i] = code[q[i]] * absmax[i / blocksize];
}

BnbNestedAbsmax bnb_nest_absmax(std::span<const float> absmax, uint64_t blocksize,
                                std::optional<float> offset) {
  BnbNestedAbsmax nested;
  nested.blocksize = blocksize;
  nested.offset = offset ? *offset : detail::bnb_mean(absmax);
  std::vector<float> centred(absmax.size());
  for (size_t i = 0; i < absmax.size(); ++i) centred[i] = absmax[i] - nested.offset;
  nested.codes.resize(absmax.size());
  nested.absmax2.resize(block_count(absmax.size(), blocksize));
  bnb_quantize_blockwise8(centred, blocksize, nested.codes, nested.absmax2);
  return nested;
}

std::vector<float> bnb_unnest_absmax(std::span<const uint8_t> codes, std::span<const float> absmax2,
                                     std::span<const float> code, uint64_t blocksize, float offset) {
  std::vector<float> out(codes.size());
  bnb_dequantize_blockwise8(codes, absmax2, code, blocksize, out);
  for (float& v : out) v += offset;
  return out;
}

// ---- quant_state ------------------------------------------------------------------------------

namespace {

std::optional<Dtype> dtype_of_torch_name(std::string_view name) {
  if (name == "float16") return Dtype::F16;
  if (name == "bfloat16") return Dtype::BF16;
  if (name == "float32") return Dtype::F32;
  return std::nullopt;
}

std::string_view torch_name(Dtype d) {
  switch (d) {
    case Dtype::F16: return "float16";
    case Dtype::BF16: return "bfloat16";
    default: return "float32";
  }
}

}  // namespace

BnbQuantState parse_bnb_quant_state(std::string_view json) {
  namespace dom = simdjson::dom;
  const detail::JsonDoc doc(json, {}, Rule::bnb);
  static constexpr std::string_view kKeys[] = {"quant_type", "blocksize", "dtype", "shape",
                                               "nested_blocksize", "nested_dtype", "nested_offset"};
  for (auto field : dom::object(doc.root()))
    if (std::find(std::begin(kKeys), std::end(kKeys), field.key) == std::end(kKeys))
      doc.fail(std::string(field.key), fmt::format("unknown quant_state key {}", detail::quote_name(field.key)));
  auto required_string = [&](const char* key) {
    auto s = doc.optional_string(key);
    if (!s) doc.fail(key, fmt::format("quant_state has no {}", key));
    return *s;
  };
  BnbQuantState st;
  const std::string type = required_string("quant_type");
  const auto parsed_type = parse_bnb_quant_type(type);
  if (!parsed_type)
    throw Error(ErrorCode::format, Rule::bnb_001, {}, std::nullopt,
                fmt::format("quant_type {} is not nf4 or fp4", detail::quote_name(type)));
  st.quant_type = *parsed_type;
  st.blocksize = doc.required_uint("blocksize");
  if (!is_bnb_4bit_blocksize(st.blocksize))
    throw Error(ErrorCode::format, Rule::bnb_001, {}, std::nullopt,
                fmt::format("blocksize {} is not one of 32, 64, ..., 4096", st.blocksize));
  const std::string dtype = required_string("dtype");
  const auto d = dtype_of_torch_name(dtype);
  if (!d) doc.fail("dtype", fmt::format("dtype {} is not float16, bfloat16 or float32", detail::quote_name(dtype)));
  st.dtype = *d;
  dom::array shape;
  if (doc.root()["shape"].get_array().get(shape) != simdjson::SUCCESS)
    doc.fail("shape", "quant_state has no shape list");
  std::vector<uint64_t> dims;
  for (dom::element e : shape) {
    uint64_t v;
    if (e.get_uint64().get(v) != simdjson::SUCCESS) doc.fail("shape", "shape holds a non-integer");
    dims.push_back(v);
  }
  if (dims.size() > kMaxQuantStateRank)
    doc.fail("shape", fmt::format("shape has {} dimensions (at most {})", dims.size(), kMaxQuantStateRank));
  if (!detail::checked_product(dims)) doc.fail("shape", "shape's element count overflows");
  st.shape = Shape(dims);

  const bool any_nested = doc.root()["nested_blocksize"].error() == simdjson::SUCCESS ||
                          doc.root()["nested_dtype"].error() == simdjson::SUCCESS ||
                          doc.root()["nested_offset"].error() == simdjson::SUCCESS;
  if (any_nested) {
    auto nested_fail = [](const char* key, std::string detail) {
      throw Error(ErrorCode::format, Rule::bnb_004, key, std::nullopt, std::move(detail));
    };
    st.nested = true;
    const auto nbs = doc.optional_uint("nested_blocksize");
    const auto ndt = doc.optional_string("nested_dtype");
    dom::element off;
    if (!nbs || *nbs == 0) nested_fail("nested_blocksize", "nested state without a positive nested_blocksize");
    if (!ndt) nested_fail("nested_dtype", "nested state without nested_dtype");
    if (doc.root()["nested_offset"].get(off) != simdjson::SUCCESS)
      nested_fail("nested_offset", "nested state without nested_offset");
    st.nested_blocksize = *nbs;
    const auto nd = dtype_of_torch_name(*ndt);
    if (!nd) doc.fail("nested_dtype", fmt::format("nested_dtype {} is not a float dtype", detail::quote_name(*ndt)));
    st.nested_dtype = *nd;
    double v;
    if (off.get_double().get(v) != simdjson::SUCCESS)  // integers convert too
      doc.fail("nested_offset", "nested_offset is not a number");
    st.nested_offset = v;
  }
  return st;
}

std::string detail::python_float_repr(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "Infinity" : "-Infinity";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::scientific);
  std::string_view sci(buf, static_cast<size_t>(res.ptr - buf));  // e.g. -5.738766863942146e-02
  std::string out;
  if (sci.front() == '-') {
    out += '-';
    sci.remove_prefix(1);
  }
  const size_t e_pos = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, e_pos))
    if (c != '.') digits += c;
  int exp10 = 0;
  std::string_view e_text = sci.substr(e_pos + 1);
  if (e_text.front() == '+') e_text.remove_prefix(1);
  std::from_chars(e_text.data(), e_text.data() + e_text.size(), exp10);
  if (exp10 < -4 || exp10 >= 16) {
    out += digits[0];
    if (digits.size() > 1) out += "." + digits.substr(1);
    out += fmt::format("e{}{:02d}", exp10 < 0 ? '-' : '+', std::abs(exp10));
    return out;
  }
  const int point = exp10 + 1;  // digits before the decimal point
  if (point <= 0) return out + "0." + std::string(static_cast<size_t>(-point), '0') + digits;
  if (static_cast<size_t>(point) >= digits.size())
    return out + digits + std::string(static_cast<size_t>(point) - digits.size(), '0') + ".0";
  return out + digits.substr(0, static_cast<size_t>(point)) + "." + digits.substr(static_cast<size_t>(point));
}

std::string bnb_quant_state_json(const BnbQuantState& st) {
  std::string out = fmt::format("{{\"quant_type\": \"{}\", \"blocksize\": {}, \"dtype\": \"{}\", \"shape\": [{}]",
                                bnb_quant_type_name(st.quant_type), st.blocksize, torch_name(st.dtype),
                                fmt::join(st.shape, ", "));
  if (st.nested)
    out += fmt::format(", \"nested_blocksize\": {}, \"nested_dtype\": \"{}\", \"nested_offset\": {}",
                       st.nested_blocksize, torch_name(st.nested_dtype),
                       detail::python_float_repr(st.nested_offset));
  return out + "}";
}

// ---- LLM.int8 ---------------------------------------------------------------------------------

namespace {

// bitsandbytes' dequantization factor 7.874015718698502e-3 (about 1/127), as float32.
constexpr float kInt8Dequant = 7.874015718698502e-3f;

void check_int8(uint64_t cols, size_t cb, size_t scb) {
  if (cols == 0 && cb == 0) return;
  if (cols == 0 || cb % cols || cb / cols != scb)
    throw_invalid(fmt::format("{} int8 values and {} row scales do not fit {} columns", cb, scb, cols));
}

}  // namespace

void llm_int8_quantize(std::span<const float> w, uint64_t rows, uint64_t cols,
                       std::span<int8_t> cb, std::span<float> scb) {
  const auto n = detail::checked_mul(rows, cols);
  if (!n || w.size() != *n) throw_invalid(fmt::format("{} weights for a [{}, {}] matrix", w.size(), rows, cols));
  check_int8(cols, cb.size(), scb.size());
  if (scb.size() != rows) throw_invalid(fmt::format("{} row scales for {} rows", scb.size(), rows));
  std::vector<float> row(cols);
  for (uint64_t r = 0; r < rows; ++r) {
    float absmax = 0;
    for (uint64_t c = 0; c < cols; ++c) {  // Int8Params quantizes the F16 weight
      row[c] = f16_to_f32(f32_to_f16(w[r * cols + c]));
      if (!std::isfinite(row[c]))
        throw_invalid(fmt::format("weight ({}, {}) is {} as F16", r, c, row[c]));
      absmax = std::max(absmax, std::fabs(row[c]));
    }
    scb[r] = absmax;
    // Python's `127.0 / row_stats` is torch's __rtruediv__: reciprocal first, then times 127.
    const float factor = absmax > 0 ? 127.0f * (1.0f / absmax) : 0.0f;
    for (uint64_t c = 0; c < cols; ++c)
      cb[r * cols + c] = static_cast<int8_t>(std::clamp(std::nearbyint(row[c] * factor), -127.0f, 127.0f));
  }
}

void llm_int8_dequantize(std::span<const int8_t> cb, std::span<const float> scb, uint64_t cols,
                         uint64_t first, uint64_t count, Dtype out, std::span<std::byte> dst) {
  check_int8(cols, cb.size(), scb.size());
  const auto end = detail::checked_add(first, count);
  if (!end || *end > cb.size())
    throw_invalid(fmt::format("elements [{}, +{}) are outside the {} values", first, count, cb.size()));
  produce(first, count, out, dst,
          [&](uint64_t at, uint64_t m, float* o) {
            for (uint64_t i = 0; i < m; ++i)
              o[i] = static_cast<float>(cb[at + i]) * scb[(at + i) / cols] * kInt8Dequant;
          },
          [](uint64_t, uint64_t, uint16_t*) { return false; });
}

}  // namespace tlio

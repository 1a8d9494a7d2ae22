// quant/bnb/bnb_tables.cpp: the NF4, FP4 and dynamic-map tables of bitsandbytes
// (functional.get_4bit_type and create_dynamic_map, as float32 bit patterns) and what the
// quantizers derive from them.
#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "quant/bnb/bnb.hpp"
#include "quant/bnb/bnb_common.hpp"

namespace tlio {

// The shared helpers of quant/bnb/bnb_common.hpp.
using namespace detail;

namespace {

// Tables as float32 bit patterns (bitsandbytes functional.get_4bit_type and
// create_dynamic_map(); checked against the goldens' tables.json in tests).
constexpr std::array<uint32_t, 16> kNf4Bits = {
    0xbf800000u, 0xbf3239b1u, 0xbf066b30u, 0xbeca32a0u, 0xbe91a24du, 0xbe3d353fu,
    0xbdba7871u, 0x00000000u, 0x3da2faffu, 0x3e24cae3u, 0x3e7c04ddu, 0x3ead033au,
    0x3ee1a4b8u, 0x3f1007abu, 0x3f3913b3u, 0x3f800000u,
};
// FP4 entry 8 is +0.0: bnb builds the table from a Python list whose "-0" is the integer 0.
constexpr std::array<uint32_t, 16> kFp4Bits = {
    0x00000000u, 0x3baaaaabu, 0x3f2aaaabu, 0x3f800000u, 0x3eaaaaabu, 0x3f000000u,
    0x3e2aaaabu, 0x3e800000u, 0x00000000u, 0xbbaaaaabu, 0xbf2aaaabu, 0xbf800000u,
    0xbeaaaaabu, 0xbf000000u, 0xbe2aaaabu, 0xbe800000u,
};
constexpr std::array<uint32_t, 256> kDynamicBits = {
    0xbf7e3333u, 0xbf7a9999u, 0xbf770000u, 0xbf736666u, 0xbf6fccccu, 0xbf6c3333u, 0xbf68999au,
    0xbf650000u, 0xbf616666u, 0xbf5dccccu, 0xbf5a3333u, 0xbf569999u, 0xbf530000u, 0xbf4f6666u,
    0xbf4bccccu, 0xbf483333u, 0xbf44999au, 0xbf410000u, 0xbf3d6667u, 0xbf39cccdu, 0xbf363334u,
    0xbf32999au, 0xbf2f0000u, 0xbf2b6667u, 0xbf27cccdu, 0xbf243333u, 0xbf20999au, 0xbf1d0000u,
    0xbf196666u, 0xbf15cccdu, 0xbf123334u, 0xbf0e999au, 0xbf0b0000u, 0xbf076666u, 0xbf03cccdu,
    0xbf003333u, 0xbef93334u, 0xbef20000u, 0xbeeaccccu, 0xbee3999au, 0xbedc6666u, 0xbed53332u,
    0xbece0000u, 0xbec6ccccu, 0xbebf999au, 0xbeb86666u, 0xbeb13332u, 0xbeaa0000u, 0xbea2ccccu,
    0xbe9b999au, 0xbe946666u, 0xbe8d3334u, 0xbe860000u, 0xbe7d999au, 0xbe6f3334u, 0xbe60cccdu,
    0xbe526666u, 0xbe440000u, 0xbe359999u, 0xbe273333u, 0xbe18cccdu, 0xbe0a6666u, 0xbdf80000u,
    0xbddb3334u, 0xbdc9eb85u, 0xbdc428f5u, 0xbdbe6667u, 0xbdb8a3d7u, 0xbdb2e148u, 0xbdad1eb8u,
    0xbda75c28u, 0xbda1999au, 0xbd9bd70au, 0xbd96147bu, 0xbd9051ebu, 0xbd8a8f5du, 0xbd84cccdu,
    0xbd7e147au, 0xbd728f5du, 0xbd670a3du, 0xbd5b851fu, 0xbd500000u, 0xbd447ae1u, 0xbd38f5c3u,
    0xbd2d70a3u, 0xbd21eb85u, 0xbd166667u, 0xbd0ae147u, 0xbcfeb852u, 0xbce7ae13u, 0xbcd0a3d7u,
    0xbcb9999au, 0xbca28f5cu, 0xbc8b851fu, 0xbc68f5c3u, 0xbc3ae148u, 0xbc1f3b64u, 0xbc160418u,
    0xbc0ccccdu, 0xbc039581u, 0xbbf4bc6au, 0xbbe24dd3u, 0xbbcfdf3bu, 0xbbbd70a4u, 0xbbab020du,
    0xbb989374u, 0xbb8624ddu, 0xbb676c8au, 0xbb428f5cu, 0xbb1db22du, 0xbaf1a9fcu, 0xbaa7ef9du,
    0xba7765ffu, 0xba59e83eu, 0xba3c6a80u, 0xba1eecc1u, 0xba016f01u, 0xb9c7e283u, 0xb98ce705u,
    0xb923d70bu, 0xb8ba1f4bu, 0xb88aefb3u, 0xb8378034u, 0xb7b24206u, 0xb70205ffu, 0xb65a1a94u,
    0xb513a3b7u, 0x00000000u, 0x3513a3b7u, 0x365a1a94u, 0x370205ffu, 0x37b24206u, 0x38378034u,
    0x388aefb3u, 0x38ba1f4bu, 0x3923d70bu, 0x398ce705u, 0x39c7e283u, 0x3a016f01u, 0x3a1eecc1u,
    0x3a3c6a80u, 0x3a59e83eu, 0x3a7765ffu, 0x3aa7ef9du, 0x3af1a9fcu, 0x3b1db22du, 0x3b428f5cu,
    0x3b676c8au, 0x3b8624ddu, 0x3b989374u, 0x3bab020du, 0x3bbd70a4u, 0x3bcfdf3bu, 0x3be24dd3u,
    0x3bf4bc6au, 0x3c039581u, 0x3c0ccccdu, 0x3c160418u, 0x3c1f3b64u, 0x3c3ae148u, 0x3c68f5c3u,
    0x3c8b851fu, 0x3ca28f5cu, 0x3cb9999au, 0x3cd0a3d7u, 0x3ce7ae13u, 0x3cfeb852u, 0x3d0ae147u,
    0x3d166667u, 0x3d21eb85u, 0x3d2d70a3u, 0x3d38f5c3u, 0x3d447ae1u, 0x3d500000u, 0x3d5b851fu,
    0x3d670a3du, 0x3d728f5du, 0x3d7e147au, 0x3d84cccdu, 0x3d8a8f5du, 0x3d9051ebu, 0x3d96147bu,
    0x3d9bd70au, 0x3da1999au, 0x3da75c28u, 0x3dad1eb8u, 0x3db2e148u, 0x3db8a3d7u, 0x3dbe6667u,
    0x3dc428f5u, 0x3dc9eb85u, 0x3ddb3334u, 0x3df80000u, 0x3e0a6666u, 0x3e18cccdu, 0x3e273333u,
    0x3e359999u, 0x3e440000u, 0x3e526666u, 0x3e60cccdu, 0x3e6f3334u, 0x3e7d999au, 0x3e860000u,
    0x3e8d3334u, 0x3e946666u, 0x3e9b999au, 0x3ea2ccccu, 0x3eaa0000u, 0x3eb13332u, 0x3eb86666u,
    0x3ebf999au, 0x3ec6ccccu, 0x3ece0000u, 0x3ed53332u, 0x3edc6666u, 0x3ee3999au, 0x3eeaccccu,
    0x3ef20000u, 0x3ef93334u, 0x3f003333u, 0x3f03cccdu, 0x3f076666u, 0x3f0b0000u, 0x3f0e999au,
    0x3f123334u, 0x3f15cccdu, 0x3f196666u, 0x3f1d0000u, 0x3f20999au, 0x3f243333u, 0x3f27cccdu,
    0x3f2b6667u, 0x3f2f0000u, 0x3f32999au, 0x3f363334u, 0x3f39cccdu, 0x3f3d6667u, 0x3f410000u,
    0x3f44999au, 0x3f483333u, 0x3f4bccccu, 0x3f4f6666u, 0x3f530000u, 0x3f569999u, 0x3f5a3333u,
    0x3f5dccccu, 0x3f616666u, 0x3f650000u, 0x3f68999au, 0x3f6c3333u, 0x3f6fccccu, 0x3f736666u,
    0x3f770000u, 0x3f7a9999u, 0x3f7e3333u, 0x3f800000u,
};

template <size_t N>
std::array<float, N> floats_of(const std::array<uint32_t, N>& bits) {
  std::array<float, N> out{};
  for (size_t i = 0; i < N; ++i) out[i] = std::bit_cast<float>(bits[i]);
  return out;
}

Codebook4 make_codebook(const std::array<float, 16>& table) {
  Codebook4 c;
  std::array<uint8_t, 16> order{};
  for (uint8_t i = 0; i < 16; ++i) order[i] = i;
  // Stable: FP4's two +0.0 entries keep code 0 before code 8, as torch's argsort gave.
  std::stable_sort(order.begin(), order.end(),
                   [&](uint8_t a, uint8_t b) { return table[a] < table[b]; });
  for (int i = 0; i < 15; ++i) c.bounds[i] = (table[order[i]] + table[order[i + 1]]) / 2.0f;
  c.code_of_position = order;
  uint8_t pos = 0;
  for (float b : c.bounds) pos = static_cast<uint8_t>(pos + (b < 0.0f));
  c.zero_code = order[pos];
  return c;
}

}  // namespace

const Codebook4& detail::codebook(BnbQuantType type) {
  static const Codebook4 nf4 = make_codebook(bnb_4bit_table(BnbQuantType::nf4));
  static const Codebook4 fp4 = make_codebook(bnb_4bit_table(BnbQuantType::fp4));
  return type == BnbQuantType::nf4 ? nf4 : fp4;
}

const std::array<float, 255>& detail::dynamic_bounds() {
  static const std::array<float, 255> bounds = [] {
    std::array<float, 255> b{};
    const auto& code = bnb_dynamic_map();
    for (size_t i = 0; i < 255; ++i) b[i] = (code[i] + code[i + 1]) / 2.0f;
    return b;
  }();
  return bounds;
}

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

const std::array<float, 16>& detail::bnb_4bit_table(BnbQuantType type) noexcept {
  static const std::array<float, 16> nf4 = floats_of(kNf4Bits), fp4 = floats_of(kFp4Bits);
  return type == BnbQuantType::nf4 ? nf4 : fp4;
}

const std::array<float, 256>& detail::bnb_dynamic_map() noexcept {
  static const std::array<float, 256> map = floats_of(kDynamicBits);
  return map;
}

}  // namespace tlio

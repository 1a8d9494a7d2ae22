// dtype/dtype.cpp: the dtype table (names, bit sizes, write order) and name parsing.
#include "tlio/dtype.hpp"

#include <algorithm>
#include <cctype>
#include <string>

namespace tlio {
namespace {

struct DtypeRow {
  Dtype dtype;
  std::string_view name;
  unsigned bits;
  std::string_view torch;  // str(torch dtype) after "torch.", as config.json records it; "": none
};

// Enumerator order = the reference implementation's declaration order.
constexpr DtypeRow kTable[kDtypeCount] = {
    {Dtype::BOOL, "BOOL", 8, "bool"},
    {Dtype::F4, "F4", 4, "float4_e2m1fn_x2"},
    {Dtype::F6_E2M3, "F6_E2M3", 6, ""},
    {Dtype::F6_E3M2, "F6_E3M2", 6, ""},
    {Dtype::U8, "U8", 8, "uint8"},
    {Dtype::I8, "I8", 8, "int8"},
    {Dtype::F8_E5M2, "F8_E5M2", 8, "float8_e5m2"},
    {Dtype::F8_E4M3, "F8_E4M3", 8, "float8_e4m3fn"},
    {Dtype::F8_E8M0, "F8_E8M0", 8, "float8_e8m0fnu"},
    {Dtype::F8_E4M3FNUZ, "F8_E4M3FNUZ", 8, "float8_e4m3fnuz"},
    {Dtype::F8_E5M2FNUZ, "F8_E5M2FNUZ", 8, "float8_e5m2fnuz"},
    {Dtype::I16, "I16", 16, "int16"},
    {Dtype::U16, "U16", 16, "uint16"},
    {Dtype::F16, "F16", 16, "float16"},
    {Dtype::BF16, "BF16", 16, "bfloat16"},
    {Dtype::I32, "I32", 32, "int32"},
    {Dtype::U32, "U32", 32, "uint32"},
    {Dtype::F32, "F32", 32, "float32"},
    {Dtype::C64, "C64", 64, "complex64"},
    {Dtype::F64, "F64", 64, "float64"},
    {Dtype::I64, "I64", 64, "int64"},
    {Dtype::U64, "U64", 64, "uint64"},
};

// numpy / torch / ml_dtypes spellings accepted from users (lowercase).
struct Alias {
  std::string_view alias;
  Dtype dtype;
};
constexpr Alias kAliases[] = {
    {"bool", Dtype::BOOL},
    {"uint8", Dtype::U8},
    {"int8", Dtype::I8},
    {"int16", Dtype::I16},
    {"uint16", Dtype::U16},
    {"int32", Dtype::I32},
    {"uint32", Dtype::U32},
    {"int64", Dtype::I64},
    {"uint64", Dtype::U64},
    {"float16", Dtype::F16},
    {"fp16", Dtype::F16},
    {"half", Dtype::F16},
    {"bfloat", Dtype::BF16},
    {"bfloat16", Dtype::BF16},
    {"float32", Dtype::F32},
    {"fp32", Dtype::F32},
    {"float", Dtype::F32},
    {"float64", Dtype::F64},
    {"fp64", Dtype::F64},
    {"double", Dtype::F64},
    {"complex64", Dtype::C64},
    {"float8_e4m3fn", Dtype::F8_E4M3},
    {"float8_e4m3", Dtype::F8_E4M3},
    {"fp8_e4m3", Dtype::F8_E4M3},
    {"float8_e5m2", Dtype::F8_E5M2},
    {"fp8_e5m2", Dtype::F8_E5M2},
    {"float8_e8m0fnu", Dtype::F8_E8M0},
    {"float8_e4m3fnuz", Dtype::F8_E4M3FNUZ},
    {"float8_e5m2fnuz", Dtype::F8_E5M2FNUZ},
    {"float4_e2m1fn", Dtype::F4},
    {"float4_e2m1fn_x2", Dtype::F4},
    {"float6_e2m3fn", Dtype::F6_E2M3},
    {"float6_e3m2fn", Dtype::F6_E3M2},
};

const DtypeRow& row(Dtype d) noexcept { return kTable[static_cast<size_t>(d)]; }

}  // namespace

const std::array<Dtype, kDtypeCount>& all_dtypes() noexcept {
  static const std::array<Dtype, kDtypeCount> all = [] {
    std::array<Dtype, kDtypeCount> a{};
    for (int i = 0; i < kDtypeCount; ++i) a[i] = kTable[i].dtype;
    return a;
  }();
  return all;
}

std::string_view dtype_name(Dtype d) noexcept { return row(d).name; }
unsigned dtype_bits(Dtype d) noexcept { return row(d).bits; }
std::string_view torch_dtype_name(Dtype d) noexcept { return row(d).torch; }
int write_rank(Dtype d) noexcept { return kDtypeCount - 1 - static_cast<int>(d); }

std::optional<Dtype> parse_dtype(std::string_view name) noexcept {
  // Called once per tensor of every header: compare the cheap parts before the bytes.
  if (name.size() < 2 || name.size() > 11) return std::nullopt;
  for (const auto& r : kTable)
    if (r.name.size() == name.size() && r.name[1] == name[1] && r.name == name) return r.dtype;
  return std::nullopt;
}

std::optional<Dtype> parse_dtype_alias(std::string_view name) noexcept {
  std::string upper(name), lower(name);
  std::transform(upper.begin(), upper.end(), upper.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (auto d = parse_dtype(upper)) return d;
  for (const auto& a : kAliases)
    if (a.alias == lower) return a.dtype;
  return std::nullopt;
}

bool is_floating(Dtype d) noexcept {
  switch (d) {
    case Dtype::F4:
    case Dtype::F6_E2M3:
    case Dtype::F6_E3M2:
    case Dtype::F8_E5M2:
    case Dtype::F8_E4M3:
    case Dtype::F8_E8M0:
    case Dtype::F8_E4M3FNUZ:
    case Dtype::F8_E5M2FNUZ:
    case Dtype::F16:
    case Dtype::BF16:
    case Dtype::F32:
    case Dtype::F64:
      return true;
    default:
      return false;
  }
}

bool is_integer(Dtype d) noexcept {
  switch (d) {
    case Dtype::U8:
    case Dtype::I8:
    case Dtype::I16:
    case Dtype::U16:
    case Dtype::I32:
    case Dtype::U32:
    case Dtype::I64:
    case Dtype::U64:
      return true;
    default:
      return false;
  }
}

bool is_sub_byte(Dtype d) noexcept { return dtype_bits(d) < 8; }

}  // namespace tlio

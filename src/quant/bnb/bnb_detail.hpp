// quant/bnb/bnb_detail.hpp: the two pieces of bitsandbytes arithmetic and text that reproduce
// another program's behaviour (torch's summation order, Python's float repr), kept out of the
// public header and tested on their own.
#pragma once

#include <span>
#include <string>

namespace tlio::detail {

/// The float32 mean of `values` as torch computes it on a CPU (its summation order), which is
/// what bitsandbytes stores as nested_offset.
float bnb_mean(std::span<const float> values) noexcept;

/// Python's repr() of a float: shortest round-trip digits, exponent form below 1e-4 and from
/// 1e16, ".0" on whole numbers ("0.0", "1e-05", "0.05738766863942146").
std::string python_float_repr(double value);

}  // namespace tlio::detail

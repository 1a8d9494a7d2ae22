// common/simd_targets.cpp: the functions Highway's headers call into its library
// (hwy::SupportedTargets and hwy::GetChosenTarget for run-time dispatch, hwy::Abort for the
// assertions a build without NDEBUG keeps), defined here so that libtlio does not link
// libhwy.so. That library runs a timer calibration in a load-time initializer (about 7 ms on this
// VM, more than the rest of `tlio --version` together) for its nanobenchmark, which tlio never
// uses. The kernels still come from Highway's headers (foreach_target.h, HWY_EXPORT,
// HWY_DYNAMIC_DISPATCH) and dispatch at run time as before.
//
// The feature groups are Highway 1.0's for the x86 targets tlio compiles (SSSE3, SSE4, AVX2,
// AVX3); a target is reported only when every instruction set its code may use is present and the
// OS saves the registers it needs (XCR0). tests/common/simd_targets_test.cpp checks the answer
// against libhwy's own SupportedTargets() on the machine that runs it.
#include <hwy/targets.h>

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#if HWY_ARCH_X86
#include <cpuid.h>
#endif

namespace hwy {
namespace {

#if HWY_ARCH_X86
struct CpuidRegs {
  uint32_t a = 0, b = 0, c = 0, d = 0;
};

CpuidRegs cpuid(uint32_t leaf, uint32_t subleaf) {
  CpuidRegs r;
  if (__get_cpuid_count(leaf, subleaf, &r.a, &r.b, &r.c, &r.d) == 0) return {};
  return r;
}

constexpr bool bit(uint32_t reg, int index) { return ((reg >> index) & 1U) != 0; }

// XCR0: which register states the OS saves on a context switch.
uint64_t read_xcr0() {
  uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

int64_t detect_x86_targets() {
  const CpuidRegs l1 = cpuid(1, 0);
  const CpuidRegs l7 = cpuid(7, 0);
  const CpuidRegs e1 = cpuid(0x80000001U, 0);
  const bool ssse3 = bit(l1.d, 25) && bit(l1.d, 26) && bit(l1.c, 0) && bit(l1.c, 9);
  const bool sse4 = ssse3 && bit(l1.c, 19) && bit(l1.c, 20) && bit(l1.c, 1) && bit(l1.c, 25);
  const bool osxsave = bit(l1.c, 27);
  const uint64_t xcr0 = osxsave ? read_xcr0() : 0;
  const bool os_ymm = (xcr0 & 0x6) == 0x6;    // SSE and AVX state
  const bool os_zmm = (xcr0 & 0xE6) == 0xE6;  // plus opmask, ZMM_Hi256, Hi16_ZMM
  const bool avx2 = sse4 && os_ymm && bit(l1.c, 28) /*AVX*/ && bit(l7.b, 5) /*AVX2*/ &&
                    bit(l7.b, 3) /*BMI*/ && bit(l7.b, 8) /*BMI2*/ && bit(l1.c, 12) /*FMA*/ &&
                    bit(l1.c, 29) /*F16C*/ && bit(e1.c, 5) /*LZCNT*/;
  const bool avx3 = avx2 && os_zmm && bit(l7.b, 16) /*F*/ && bit(l7.b, 17) /*DQ*/ &&
                    bit(l7.b, 30) /*BW*/ && bit(l7.b, 31) /*VL*/;
  int64_t targets = 0;
  if (ssse3) targets |= HWY_SSSE3;
  if (sse4) targets |= HWY_SSE4;
  if (avx2) targets |= HWY_AVX2;
  if (avx3) targets |= HWY_AVX3;
  return targets;
}
#endif

}  // namespace

int64_t SupportedTargets() {
  // Computed once: CPUID is slow under some hypervisors, and the answer never changes.
  static const int64_t targets = [] {
    int64_t t = HWY_SCALAR | HWY_EMU128;
#if HWY_ARCH_X86
    t |= detect_x86_targets();
#endif
    return t;
  }();
  return targets;
}

ChosenTarget& GetChosenTarget() {
  static ChosenTarget chosen;
  return chosen;
}

// A failed HWY_ASSERT/HWY_DASSERT (Debug builds): a bug in a kernel, never bad input.
void Abort(const char* file, int line, const char* format, ...) {
  std::fprintf(stderr, "tlio: Highway assertion failed at %s:%d: ", file, line);
  va_list args;
  va_start(args, format);
  std::vfprintf(stderr, format, args);
  va_end(args);
  std::fputc('\n', stderr);
  std::abort();
}

}  // namespace hwy

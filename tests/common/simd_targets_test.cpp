// Tests common/simd_targets.cpp: the targets tlio dispatches to are the ones libhwy.so itself
// reports for this CPU (loaded with dlopen here, since libtlio defines the same names), and
// dispatch picks the best of them.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <cstdint>

namespace {

TEST(SimdTargets, SameAsHighwayForCompiledTargets) {
  void* lib = dlopen(TLIO_HWY_SONAME, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  using SupportedFn = int64_t (*)();
  auto theirs_fn = reinterpret_cast<SupportedFn>(dlsym(lib, "_ZN3hwy16SupportedTargetsEv"));
  ASSERT_NE(theirs_fn, nullptr) << dlerror();
  const int64_t compiled = HWY_TARGETS;
  const int64_t ours = hwy::SupportedTargets() & compiled;
  const int64_t theirs = theirs_fn() & compiled;
  EXPECT_EQ(ours, theirs) << std::hex << "tlio 0x" << ours << ", libhwy 0x" << theirs;
  dlclose(lib);
}

TEST(SimdTargets, BaselineAlwaysPresentAndChosenOnce) {
  const int64_t t = hwy::SupportedTargets();
  EXPECT_NE(t & HWY_SCALAR, 0);
  EXPECT_EQ(t, hwy::SupportedTargets());
  EXPECT_EQ(&hwy::GetChosenTarget(), &hwy::GetChosenTarget());
}

}  // namespace

// Tests for common/text.hpp: regexes from users and the include/exclude name filter.
#include "common/text.hpp"

#include <gtest/gtest.h>

#include "tlio/error.hpp"

namespace tlio::detail {
namespace {

TEST(NameFilter, DefaultIncludeAndExclude) {
  const NameFilter none("", "");
  EXPECT_TRUE(none.selects("a.weight", true));
  EXPECT_FALSE(none.selects("a.weight", false));
  EXPECT_FALSE(none.has_include());

  const NameFilter inc("proj", "");  // searched, not matched whole; replaces the default
  EXPECT_TRUE(inc.has_include());
  EXPECT_TRUE(inc.selects("layers.0.q_proj.weight", false));
  EXPECT_FALSE(inc.selects("embed.weight", true));

  const NameFilter exc("", "^lm_head");
  EXPECT_TRUE(exc.selects("layers.0.q_proj.weight", true));
  EXPECT_FALSE(exc.selects("lm_head.weight", true));

  const NameFilter both("weight$", "layers\\.1\\.");
  EXPECT_TRUE(both.selects("layers.0.w.weight", false));
  EXPECT_FALSE(both.selects("layers.1.w.weight", true));
  EXPECT_FALSE(both.selects("layers.0.w.bias", true));
}

TEST(NameFilter, BadRegexIsAnInvalidArgumentWithoutCliFlagNames) {
  try {
    NameFilter bad("(", "");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("invalid include regex \"(\"", 0), 0u) << what;
    EXPECT_EQ(what.find("--"), std::string::npos) << what;
  }
  EXPECT_THROW(NameFilter("", "[z-a]"), Error);
}

}  // namespace
}  // namespace tlio::detail

// logfmt: the key=value fields of ferry's log lines.
#include "ferry/base/logfmt.h"

#include <gtest/gtest.h>

namespace ferry {
namespace {

TEST(Logfmt, PlainValuesAreBareAndNumbersAreDecimal) {
    logfmt l("server down");
    l.kv("upstream", "py").kv("server", "10.77.0.2:9000").kv("checks", 3u).kv("down_seconds", 1.25, 1);
    EXPECT_EQ(l.str(), "server down upstream=py server=10.77.0.2:9000 checks=3 down_seconds=1.2");
}

TEST(Logfmt, SpacesQuotesEqualsAndEmptyValuesAreQuoted) {
    EXPECT_EQ(logfmt::quote("connect refused"), "\"connect refused\"");
    EXPECT_EQ(logfmt::quote("a=b"), "\"a=b\"");
    EXPECT_EQ(logfmt::quote(""), "\"\"");
    EXPECT_EQ(logfmt::quote("say \"hi\" \\o/"), "\"say \\\"hi\\\" \\\\o/\"");
}

TEST(Logfmt, ControlCharactersCannotBreakTheLine) {
    // A value from outside (a path, an error text) never starts a second line.
    EXPECT_EQ(logfmt::quote("a\nb\tc\x01"), "\"a\\nb\\tc\\x01\"");
    EXPECT_EQ(logfmt::quote("\x7f"), "\"\\x7f\"");
}

}  // namespace
}  // namespace ferry

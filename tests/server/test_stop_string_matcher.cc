#include <gtest/gtest.h>

#include "server/stop_string_matcher.h"

namespace crosspoint {
namespace {

// Feeds pieces one by one; returns everything emitted (and whether it stopped).
std::pair<std::string, bool> feed(StopStringMatcher& m, const std::vector<std::string>& pieces) {
  std::string out;
  for (const auto& p : pieces) {
    auto piece = m.push(p);
    out += piece.text;
    if (piece.stopped) return {out, true};
  }
  return {out + m.flush(), false};
}

TEST(StopStringMatcher, StopSplitAcrossTokensIsFoundAndNotEmitted) {
  StopStringMatcher m({"###"});
  auto [out, stopped] = feed(m, {"Hello", " wor", "ld#", "#", "# more", "ignored"});
  EXPECT_TRUE(stopped);
  EXPECT_EQ(out, "Hello world");
}

TEST(StopStringMatcher, HeldBackTextIsReleasedWhenItIsNotAStop) {
  StopStringMatcher m({"END"});
  auto p1 = m.push("abcE");
  EXPECT_EQ(p1.text, "abc");  // "E" might start END
  auto p2 = m.push("Nx");
  EXPECT_EQ(p2.text, "ENx");
  EXPECT_FALSE(p2.stopped);
  EXPECT_EQ(m.push("EN").text, "");
  EXPECT_EQ(m.flush(), "EN");  // generation ended without the stop
}

TEST(StopStringMatcher, EarliestOfSeveralStopsWins) {
  StopStringMatcher m({"world", "lo w"});
  auto p = m.push("hello world");
  EXPECT_TRUE(p.stopped);
  EXPECT_EQ(p.matched_stop, "lo w");
  EXPECT_EQ(p.text, "hel");
  EXPECT_EQ(m.push("more").text, "");
  EXPECT_EQ(m.flush(), "");
}

TEST(StopStringMatcher, IncludeStopInOutput) {
  StopStringMatcher m({"\n\n"}, /*include_stop_in_output=*/true);
  auto [out, stopped] = feed(m, {"a\n", "\nb"});
  EXPECT_TRUE(stopped);
  EXPECT_EQ(out, "a\n\n");
}

TEST(StopStringMatcher, MultiByteCharactersAreNeverSplit) {
  StopStringMatcher m({"é!"});
  auto p1 = m.push("café");
  EXPECT_EQ(p1.text, "caf");  // "é" held whole, as a possible start of "é!"
  auto p2 = m.push("?");
  EXPECT_EQ(p2.text, "é?");
}

TEST(StopStringMatcher, NoStopsPassesEverythingThrough) {
  StopStringMatcher m({"", ""});
  EXPECT_EQ(m.push("abc").text, "abc");
  EXPECT_EQ(m.flush(), "");
}

}  // namespace
}  // namespace crosspoint

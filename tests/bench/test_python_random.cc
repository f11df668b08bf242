// PythonRandom against CPython's random module (fixture from make_fixtures.py).
#include <gtest/gtest.h>

#include <numeric>

#include "bench/python_random.h"
#include "bench_test_util.h"

namespace crosspoint::bench {
namespace {

TEST(PythonRandom, MatchesCPythonForEverySeed) {
  const nlohmann::json cases = testing::load_fixture_json("python_random.json");
  ASSERT_GE(cases.size(), 4u);
  for (const auto& c : cases) {
    const uint64_t seed = c["seed"].get<uint64_t>();
    SCOPED_TRACE("seed " + std::to_string(seed));
    {
      PythonRandom rng(seed);
      std::vector<int> items(50);
      std::iota(items.begin(), items.end(), 0);
      rng.shuffle(items);
      EXPECT_EQ(items, c["shuffle50"].get<std::vector<int>>());
    }
    {
      PythonRandom rng(seed);
      const auto expected = c["getrandbits_1_to_32"].get<std::vector<uint64_t>>();
      for (int k = 1; k <= 32; ++k) EXPECT_EQ(rng.getrandbits(k), expected[k - 1]) << "k=" << k;
    }
    {
      PythonRandom rng(seed);
      for (double expected : c["random5"].get<std::vector<double>>()) EXPECT_EQ(rng.random(), expected);
    }
    {
      PythonRandom rng(seed);
      const auto ns = c["randbelow_n"].get<std::vector<uint64_t>>();
      const auto expected = c["randbelow"].get<std::vector<uint64_t>>();
      for (size_t i = 0; i < ns.size(); ++i) EXPECT_EQ(rng.randbelow(ns[i]), expected[i]) << "n=" << ns[i];
    }
    {
      PythonRandom rng(seed);
      for (size_t expected : c["choice37"].get<std::vector<size_t>>()) EXPECT_EQ(rng.choice_index(37), expected);
    }
  }
}

}  // namespace
}  // namespace crosspoint::bench

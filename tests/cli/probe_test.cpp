// Tests for `stacklab probe`: seeds are parsed as integers (a seed above 2^24 is not rounded, as
// it was when they went through a float), malformed --seeds exit 1 naming the flag, and the
// written JSON holds every metric the registry sends to probes.
#include <cstdio>
#include <string>

#include <gtest/gtest.h>

#include "support/cli.h"

namespace sl {
namespace {

using namespace sl::testing;

std::vector<std::string> probe_args(const std::string& out, const std::string& seeds) {
  return concat({"probe", base_config(), "--seeds", seeds, "--out", out, "--quiet"},
                tiny_model_args());
}

TEST(ProbeCommand, SeedsAbove2To24AreKeptExactly) {
  const std::string out = make_temp_dir("probe") + "/probe.json";
  // 16777217 = 2^24 + 1 has no float; 2^64 - 1 is the largest seed
  const auto r = run_stacklab(probe_args(out, "16777217,18446744073709551615,0"));
  ASSERT_EQ(r.exit_code, 0) << r;
  const nlohmann::json j = read_json(out);
  ASSERT_EQ(j.at("seeds").size(), 3u);
  EXPECT_EQ(j.at("seeds")[0].at("seed").get<uint64_t>(), 16777217u);
  EXPECT_EQ(j.at("seeds")[1].at("seed").get<uint64_t>(), 18446744073709551615u);
  EXPECT_EQ(j.at("seeds")[2].at("seed").get<uint64_t>(), 0u);
  // 2^24 and 2^24 + 1 are different seeds, so different initial weights and losses
  const std::string out2 = make_temp_dir("probe") + "/probe.json";
  ASSERT_EQ(run_stacklab(probe_args(out2, "16777216")).exit_code, 0);
  EXPECT_NE(read_json(out2).at("seeds")[0].at("loss"), j.at("seeds")[0].at("loss"));
}

TEST(ProbeCommand, MalformedSeedsExit1NamingTheFlag) {
  const std::string out = make_temp_dir("probe") + "/probe.json";
  for (const char* bad : {"1.5", "-1", "a", "1,,2", "18446744073709551616", ""}) {
    const auto r = run_stacklab(probe_args(out, bad));
    EXPECT_EQ(r.exit_code, 1) << "--seeds '" << bad << "': " << r;
    EXPECT_NE(r.output.find("--seeds"), std::string::npos) << r;
  }
}

// issue 31 item 9: "--seeds 0,0" averaged the same seed twice, with exit 0.
TEST(ProbeCommand, ASeedGivenTwiceIsRefusedNamingIt) {
  const std::string out = make_temp_dir("probe") + "/probe.json";
  for (const char* seeds : {"0,0", "3,1,3"}) {
    const auto r = run_stacklab(probe_args(out, seeds));
    EXPECT_EQ(r.exit_code, 1) << seeds << ": " << r;
    EXPECT_NE(r.output.find("--seeds: seed "), std::string::npos) << r;
    EXPECT_NE(r.output.find("appears twice"), std::string::npos) << r;
  }
}

TEST(ProbeCommand, WritesTheNewAttentionAndStreamMetrics) {
  const std::string out = make_temp_dir("probe") + "/probe.json";
  ASSERT_EQ(run_stacklab(probe_args(out, "0,1")).exit_code, 0);
  const nlohmann::json j = read_json(out);
  for (const char* key : {"attn_entropy", "attn_logit_max", "stream_cos"}) {
    ASSERT_TRUE(j.at("mean").contains(key)) << key;
    EXPECT_EQ(j.at("mean").at(key).size(), 2u) << key;  // n_layer = 2
    for (const auto& v : j.at("mean").at(key)) EXPECT_TRUE(v.is_number()) << key;
  }
  EXPECT_TRUE(j.at("layer_metrics").is_array());
}

// The printed table: each block's branch / stream ratio (the JSON's mean.branch_ratio) and the
// first / last gradient ratio, under either model.emb_scale.
TEST(ProbeCommand, PrintsEachBlocksBranchRatioAndTheFirstLastRatioUnderEitherEmbScale) {
  for (const char* e : {"init_std", "unit"}) {
    const std::string out = make_temp_dir("probe") + "/probe.json";
    const auto r = run_stacklab(concat({"probe", base_config(), "--seeds", "0", "--out", out,
                                        std::string("--model.emb_scale=") + e},
                                       tiny_model_args()));
    ASSERT_EQ(r.exit_code, 0) << r;
    EXPECT_NE(r.out.find(std::string("emb_scale ") + e), std::string::npos) << r;
    EXPECT_NE(r.out.find("branch_ratio"), std::string::npos) << r;
    EXPECT_NE(r.out.find("first / last block (0 / 1) gradient norm:"), std::string::npos) << r;
    const nlohmann::json j = read_json(out);
    char cell[32];
    std::snprintf(cell, sizeof cell, " %12.4g\n",
                  j.at("mean").at("branch_ratio").at(0).get<double>());
    EXPECT_NE(r.out.find(cell), std::string::npos) << "block 0's branch_ratio " << cell << r;
  }
}

}  // namespace
}  // namespace sl

// The rule tester's decisions from given latencies: nn-Meter's BasicFusion criterion, MON's
// comparison of the two hypotheses, dependency order and dependency handling, DETAIL output, and the
// checks that refuse bad input before anything is written.
#include <gtest/gtest.h>

#include "nnmeter/ruletest.h"
#include "support/test_support.h"

namespace nnmeter {
namespace {

using test::TempDir;

RuleTestSettings settings_for(const std::string& backend, std::vector<std::string> testcases) {
  RuleTestSettings s;
  s.backend = backend;
  s.testcases = std::move(testcases);
  return s;
}

TEST(FusionDecision, BasicFusionCriterion) {
  // (T1 + T2) − T12 > α·min(T1, T2)
  EXPECT_TRUE(basic_fusion_obeys(1.0, 0.4, 1.0, 0.5));    // saved 0.4 > 0.2
  EXPECT_FALSE(basic_fusion_obeys(1.0, 0.4, 1.25, 0.5));  // saved 0.15 < 0.2
  EXPECT_FALSE(basic_fusion_obeys(1.0, 0.4, 1.2, 0.5));   // saved exactly 0.2: not strictly more
  EXPECT_FALSE(basic_fusion_obeys(0.3, 0.3, 0.6, 0.5));   // two ops run one after the other
  EXPECT_TRUE(basic_fusion_obeys(0.3, 0.3, 0.6, -0.1));   // α scales the threshold
  // The minimum of the two operators, not of all three latencies (nn-Meter issue #88).
  EXPECT_TRUE(basic_fusion_obeys(2.0, 2.0, 2.9, 0.5));    // saved 1.1 > 0.5·2.0
  EXPECT_FALSE(basic_fusion_obeys(2.0, 2.0, 3.1, 0.5));   // saved 0.9 < 1.0
  // A chain: the saving against α times its cheapest op; two ops give the pair criterion.
  EXPECT_TRUE(basic_fusion_obeys({1.0, 0.4, 0.6}, 1.1, 0.5));   // saved 0.9 > 0.2
  EXPECT_FALSE(basic_fusion_obeys({1.0, 0.4, 0.6}, 1.85, 0.5));  // saved 0.15 < 0.2
  EXPECT_EQ(basic_fusion_obeys({1.0, 0.4}, 1.0, 0.5), basic_fusion_obeys(1.0, 0.4, 1.0, 0.5));
  EXPECT_FALSE(basic_fusion_obeys(std::vector<double>{}, 0.0, 0.5));
}

TEST(FusionDecision, MonPicksTheCloserHypothesis) {
  // producer 1.0, consumer 0.5, fused pair 1.0, branch 1.0: fused predicts 2.0, separate 2.5.
  EXPECT_TRUE(mon_obeys(1.0, 0.5, 1.0, 1.0, 2.1));
  EXPECT_FALSE(mon_obeys(1.0, 0.5, 1.0, 1.0, 2.4));
  EXPECT_FALSE(mon_obeys(1.0, 0.5, 1.0, 1.0, 2.25));  // a tie is no evidence of fusion
  EXPECT_TRUE(mon_obeys(1.0, 0.5, 1.0, 1.0, 1.5));    // faster than both: closer to fused
  EXPECT_FALSE(mon_obeys(1.0, 0.5, 1.0, 1.0, 3.0));
}

TEST(FusionDecision, DependenciesComeFirst) {
  const std::map<std::string, std::vector<std::string>> deps = {{"A", {"B"}}, {"B", {"C"}}, {"C", {}}, {"D", {}}};
  EXPECT_EQ(order_by_dependencies({"A", "D"}, deps), (std::vector<std::string>{"C", "B", "A", "D"}));
  EXPECT_EQ(order_by_dependencies({"D", "C", "A"}, deps), (std::vector<std::string>{"D", "C", "B", "A"}));
  const std::string cycle = test::error_of([] { order_by_dependencies({"X"}, {{"X", {"Y"}}, {"Y", {"X"}}}); });
  EXPECT_NE(cycle.find("cycle"), std::string::npos) << cycle;
}

class RuleTesterFixture : public ::testing::Test {
 protected:
  RuleTester tester(const std::vector<std::string>& testcases, const Json& overrides = Json::object()) {
    const Registry registry(tmp / "home");
    if (!fs::exists(tmp / "ws")) create_workspace(registry, tmp / "ws", WorkspaceFlavor::Builtin, "onednn_cpu");
    Workspace ws = Workspace::load(tmp / "ws");
    for (const auto& [k, v] : overrides.items()) ws.ruletest_config[k] = v;
    return RuleTester(ws, registry, settings_for("onednn_cpu", testcases));
  }
  static ProfiledCase latencies(std::map<std::string, double> ms) {
    ProfiledCase pc;
    for (const auto& [k, v] : ms) pc.latencies[k] = Latency{v, 0.01};
    return pc;
  }
  TempDir tmp;
};

TEST_F(RuleTesterFixture, PairNamesAndDependenciesAreResolved) {
  const RuleTester t = tester({"MON", "conv_relu", "BF_relu_relu"});
  // MON needs BF_dwconv_relu: it is added and decided before MON.
  EXPECT_EQ(t.testcases(), (std::vector<std::string>{"BF_dwconv_relu", "MON", "BF_conv_relu", "BF_relu_relu"}));
  EXPECT_EQ(t.depends_on("MON"), std::vector<std::string>{"BF_dwconv_relu"});
  EXPECT_FALSE(fs::exists(tmp / "ws" / "fusion_rule_test")) << "constructing writes nothing";
}

TEST_F(RuleTesterFixture, DefaultCasesAreTheConfigLists) {
  const RuleTester t = tester({}, {{"BASIC_TESTCASES", {"conv_bn", "relu_relu"}}, {"OTHER_TESTCASES", Json::array()}});
  EXPECT_EQ(t.testcases(), (std::vector<std::string>{"BF_conv_bn", "BF_relu_relu"}));
  const RuleTester all = tester({}, {{"BASIC_TESTCASES", Json::array()}, {"OTHER_TESTCASES", {"MON"}}});
  EXPECT_EQ(all.testcases(), (std::vector<std::string>{"BF_dwconv_relu", "MON"}));
}

TEST_F(RuleTesterFixture, DecidesFromLatencies) {
  const RuleTester t = tester({"conv_relu", "relu_relu", "MON"});
  const Json rules = t.detect({{"BF_conv_relu", latencies({{"conv", 1.0}, {"relu", 0.3}, {"block", 1.02}})},
                               {"BF_relu_relu", latencies({{"relu_1", 0.3}, {"relu_2", 0.3}, {"block", 0.61}})},
                               {"BF_dwconv_relu", latencies({{"dwconv", 0.5}, {"relu", 0.3}, {"block", 0.52}})},
                               {"MON", latencies({{"dwconv", 0.5}, {"relu", 0.3}, {"dwconv_relu", 0.52},
                                                  {"branch", 0.5}, {"block", 1.29}})}});
  EXPECT_EQ(rules["BF_conv_relu"], (Json{{"obey", true}}));
  EXPECT_EQ(rules["BF_relu_relu"], (Json{{"obey", false}}));
  EXPECT_EQ(rules["BF_dwconv_relu"], (Json{{"obey", true}}));
  EXPECT_EQ(rules["MON"], (Json{{"obey", false}})) << "1.29 is near 0.5 + 0.3 + 0.5, not 0.52 + 0.5";
  EXPECT_EQ(rules.size(), 4u);
}

TEST_F(RuleTesterFixture, MarginWithinTheMeasurementNoiseIsUndecidedNotGuessed) {
  const RuleTester t = tester({"conv_relu", "conv_bn"});
  ProfiledCase heavy;  // a 3 ms conv with ±2 % spread hides a 30 µs ReLU either way
  heavy.latencies = {{"conv", Latency{3.0, 0.06}}, {"relu", Latency{0.03, 0.001}}, {"block", Latency{3.01, 0.06}}};
  ProfiledCase clear;  // the same spread, but the BN clearly vanishes into the conv
  clear.latencies = {{"conv", Latency{3.0, 0.06}}, {"bn", Latency{0.9, 0.02}}, {"block", Latency{3.02, 0.06}}};
  const Json rules = t.detect({{"BF_conv_relu", heavy}, {"BF_conv_bn", clear}});
  EXPECT_TRUE(rules["BF_conv_relu"]["obey"].is_null()) << rules.dump();
  EXPECT_NE(rules["BF_conv_relu"].value("error", "").find("within the measurement noise"), std::string::npos) << rules.dump();
  EXPECT_EQ(rules["BF_conv_bn"]["obey"], true) << rules.dump();
}

// A backend that reports the kernels each model runs settles what the timing cannot: fewer kernels for
// the block than for the two ops apart means the second op became part of the first.
TEST_F(RuleTesterFixture, KernelCountsSettleWhatTheNoiseLeavesOpen) {
  const RuleTester t = tester({"conv_relu", "conv_bn"});
  ProfiledCase fused, separate;
  fused.latencies = separate.latencies = {
      {"conv", Latency{3.0, 0.06}}, {"relu", Latency{0.03, 0.001}}, {"block", Latency{3.01, 0.06}}};
  fused.kernels = {{"conv", 1}, {"relu", 1}, {"block", 1}};
  separate.kernels = {{"conv", 1}, {"relu", 1}, {"block", 2}};
  Json rules = t.detect({{"BF_conv_relu", fused}});
  EXPECT_EQ(rules["BF_conv_relu"]["obey"], true) << rules.dump();
  EXPECT_NE(rules["BF_conv_relu"].value("reason", "").find("1 kernel(s) for the block, 2 for the two ops apart"),
            std::string::npos) << rules.dump();
  rules = t.detect({{"BF_conv_relu", separate}});
  EXPECT_EQ(rules["BF_conv_relu"]["obey"], false) << rules.dump();

  // Clear timing is never overruled by the counts.
  ProfiledCase clear = latencies({{"conv", 1.0}, {"relu", 0.3}, {"block", 1.3}});
  clear.kernels = {{"conv", 1}, {"relu", 1}, {"block", 1}};
  rules = t.detect({{"BF_conv_relu", clear}});
  EXPECT_EQ(rules["BF_conv_relu"], (Json{{"obey", false}})) << rules.dump();
}

// MON between its two predictions: a block near their midpoint, by less than the latencies' noise, is a coin
// flip that a burst of the device decides; the kernel counts settle it, and without them it is undecided (and
// measured again) rather than guessed.
TEST_F(RuleTesterFixture, MonWithinTheNoiseIsSettledByKernelCountsOrLeftUndecided) {
  const RuleTester t = tester({"MON"});
  const ProfiledCase dependency = latencies({{"dwconv", 0.5}, {"relu", 0.3}, {"block", 0.52}});
  // fused predicts 0.52 + 0.5 = 1.02, apart 0.5 + 0.3 + 0.5 = 1.3; the block 1.17 is 0.01 past the midpoint
  // while every latency spreads by ±0.05.
  ProfiledCase noisy;
  for (const auto& [model, ms] : std::map<std::string, double>{
           {"dwconv", 0.5}, {"relu", 0.3}, {"dwconv_relu", 0.52}, {"branch", 0.5}, {"block", 1.17}})
    noisy.latencies[model] = Latency{ms, 0.05};
  Json rules = t.detect({{"BF_dwconv_relu", dependency}, {"MON", noisy}});
  EXPECT_TRUE(rules["MON"]["obey"].is_null()) << rules.dump();
  EXPECT_EQ(rules["MON"].value("error", "").rfind("undecidable: the block is +0.0100 ms from the midpoint", 0), 0u)
      << rules.dump();

  noisy.kernels = {{"dwconv", 1}, {"relu", 1}, {"dwconv_relu", 1}, {"branch", 1}, {"block", 3}};
  rules = t.detect({{"BF_dwconv_relu", dependency}, {"MON", noisy}});
  EXPECT_EQ(rules["MON"]["obey"], false) << rules.dump();
  EXPECT_NE(rules["MON"].value("reason", "").find("3 kernel(s) for the block, 2 if fused, 3 if not"), std::string::npos)
      << rules.dump();
  noisy.kernels["block"] = 2;
  rules = t.detect({{"BF_dwconv_relu", dependency}, {"MON", noisy}});
  EXPECT_EQ(rules["MON"]["obey"], true) << rules.dump();

  // Counts that cannot tell the two apart (the pair alone runs as many kernels as the ops apart) leave it open.
  noisy.kernels["dwconv_relu"] = 2;
  rules = t.detect({{"BF_dwconv_relu", dependency}, {"MON", noisy}});
  EXPECT_TRUE(rules["MON"]["obey"].is_null()) << rules.dump();

  // Clear timing is never overruled by the counts: 1.29 is 0.13 past the midpoint, the noise ±0.045.
  ProfiledCase clear = latencies({{"dwconv", 0.5}, {"relu", 0.3}, {"dwconv_relu", 0.52}, {"branch", 0.5}, {"block", 1.29}});
  clear.kernels = {{"dwconv", 1}, {"relu", 1}, {"dwconv_relu", 1}, {"branch", 1}, {"block", 2}};
  rules = t.detect({{"BF_dwconv_relu", dependency}, {"MON", clear}});
  EXPECT_EQ(rules["MON"], (Json{{"obey", false}})) << rules.dump();
}

TEST_F(RuleTesterFixture, DependencyNotObeyedMeansFalseWithoutEvaluation) {
  const RuleTester t = tester({"MON"});
  // MON's own latencies would say "fused"; the dependency decides first.
  const Json rules = t.detect({{"BF_dwconv_relu", latencies({{"dwconv", 0.5}, {"relu", 0.3}, {"block", 0.8}})},
                               {"MON", latencies({{"dwconv", 0.5}, {"relu", 0.3}, {"dwconv_relu", 0.52},
                                                  {"branch", 0.5}, {"block", 1.02}})}});
  EXPECT_EQ(rules["BF_dwconv_relu"]["obey"], false);
  EXPECT_EQ(rules["MON"]["obey"], false);
  EXPECT_NE(rules["MON"].value("reason", "").find("BF_dwconv_relu"), std::string::npos) << rules.dump();
}

TEST_F(RuleTesterFixture, FailedProfilingIsUndecidedAndPropagates) {
  const RuleTester t = tester({"MON", "conv_relu"});
  ProfiledCase failed;
  failed.error = "model block failed to profile: worker timed out";
  const Json rules = t.detect({{"BF_dwconv_relu", failed}});
  EXPECT_TRUE(rules["BF_dwconv_relu"]["obey"].is_null());
  EXPECT_EQ(rules["BF_dwconv_relu"]["error"], failed.error);
  EXPECT_TRUE(rules["MON"]["obey"].is_null());
  EXPECT_NE(rules["MON"].value("error", "").find("depends on BF_dwconv_relu"), std::string::npos);
  EXPECT_TRUE(rules["BF_conv_relu"]["obey"].is_null()) << "a case without latencies is never decided";
  EXPECT_TRUE(rules["BF_conv_relu"].contains("error"));
}

TEST_F(RuleTesterFixture, DetailAddsLatenciesAndTheirSum) {
  const RuleTester t = tester({"relu_relu"}, {{"DETAIL", true}});
  const Json rules = t.detect({{"BF_relu_relu", latencies({{"relu_1", 0.25}, {"relu_2", 0.5}, {"block", 0.75}})}});
  const Json& lat = rules["BF_relu_relu"]["latency"];
  EXPECT_EQ(lat["relu_1"], Latency({0.25, 0.01}).str());
  EXPECT_EQ(lat["block"], Latency({0.75, 0.01}).str());
  EXPECT_EQ(Latency::parse(lat["ops"].get<std::string>()).value_ms, 0.75);
  EXPECT_EQ(rules["BF_relu_relu"]["obey"], false);
}

TEST_F(RuleTesterFixture, BadInputFailsBeforeAnyFileIsWritten) {
  auto err = [&](const std::vector<std::string>& cases, const Json& overrides = Json::object()) {
    return test::error_of([&] { tester(cases, overrides); });
  };
  EXPECT_NE(err({}, {{"BASIC_TESTCASES", {"conv_nosuchop"}}}).find("unknown operator 'nosuchop'"), std::string::npos);
  EXPECT_NE(err({}, {{"BASIC_TESTCASES", {"conv"}}}).find("BASIC_TESTCASES entry 'conv' must be a pair"),
            std::string::npos);
  EXPECT_NE(err({}, {{"EMP_ALPHA", "half"}}).find("EMP_ALPHA must be a number"), std::string::npos);
  EXPECT_NE(err({}, {{"EMP_ALPHA", -1}}).find("EMP_ALPHA must be a number in [0, 100], got -1"), std::string::npos);
  EXPECT_NE(err({}, {{"HW", 0}}).find("HW must be an integer in [1, "), std::string::npos);
  EXPECT_NE(err({}, {{"IMPLEMENT", "tensorflow"}}).find("set IMPLEMENT: onnx"), std::string::npos);
  EXPECT_NE(err({"NOPE"}).find("unknown test case 'NOPE'"), std::string::npos);
  // fc is 1-D (LAYERS_1D), conv needs [C, H, W]: the pair cannot be built.
  EXPECT_NE(err({"fc_conv"}).find("test case BF_fc_conv: operator 'conv' needs a [C, H, W] input"), std::string::npos);
  EXPECT_NE(err({}, {{"BASIC_TESTCASES", Json::array()}, {"OTHER_TESTCASES", Json::array()}}).find("no test cases"),
            std::string::npos);
  const Registry registry(tmp / "home");
  Workspace ws = Workspace::load(tmp / "ws");
  EXPECT_NE(test::error_of([&] { RuleTester(ws, registry, settings_for("no_such_backend", {"conv_relu"})); })
                .find("no_such_backend"),
            std::string::npos);
  EXPECT_FALSE(fs::exists(tmp / "ws" / "fusion_rule_test"));
}

}  // namespace
}  // namespace nnmeter

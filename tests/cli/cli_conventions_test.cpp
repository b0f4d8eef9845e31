// CLI conventions: --json on the commands that print data, exit codes (0 ok, 1 runtime error, 2 usage error).
#include "networks/layers.h"
#include "nnmeter/common.h"
#include "onnx_io/tensor_file.h"
#include "support/cli_expect.h"
#include "support/plugin_fixtures.h"

namespace nnmeter::test {
namespace {

TEST(CliConventions, JsonListsEveryListAskedFor) {
  TempDir home;
  const CliResult r = run_cli({"--json", "--list-backends", "--list-kernels", "--list-predictors", "--list-operators",
                               "--list-testcases"},
                              home.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json doc = Json::parse(r.out);
  ASSERT_TRUE(doc["backends"].is_array());
  EXPECT_TRUE(std::any_of(doc["backends"].begin(), doc["backends"].end(),
                          [](const Json& b) { return b["name"] == "onednn_cpu" && b["customized"] == false; }))
      << r.out;
  EXPECT_GE(doc["kernels"].size(), 30u);
  EXPECT_TRUE(doc["predictors"].is_array());
  EXPECT_EQ(doc["operators"][0]["implement"], "onnx") << r.out;
  EXPECT_TRUE(doc["testcases"].is_array());
  // Only what was asked for.
  const Json one = Json::parse(run_cli({"--list-kernels", "--json"}, home.path()).out);
  EXPECT_EQ(one.size(), 1u);
  EXPECT_TRUE(one.contains("kernels"));
}

TEST(CliConventions, CheckEnvAsJson) {
  TempDir home;
  const CliResult r = run_cli({"check-env", "--json"}, home.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json doc = Json::parse(r.out);
  EXPECT_FALSE(doc["nn_meter"].get<std::string>().empty());
  EXPECT_GE(doc["cpus"].get<int>(), 1);
  bool onednn = false;
  for (const Json& b : doc["backends"])
    if (b["name"] == "onednn_cpu") {
      onednn = true;
      EXPECT_NE(b["version"], "None");
      EXPECT_EQ(b["version"].get<std::string>().find('\t'), std::string::npos);
    }
  EXPECT_TRUE(onednn) << r.out;
}

TEST(CliConventions, UsageErrorsExitTwoRuntimeErrorsOne) {
  TempDir home;
  for (const std::vector<std::string>& usage : std::vector<std::vector<std::string>>{
           {"--no-such-flag"}, {"predict"}, {"evaluate", "--predictor", "x", "--onnx", "y", "--repeats", "abc"},
           {"no-such-command"}}) {
    const CliResult r = run_cli(usage, home.path());
    EXPECT_EQ(r.exit_code, 2) << usage.front() << ": " << r.err;
  }
  const CliResult runtime = run_cli({"predict", "--predictor", "ghost", "--onnx", (home / "none.onnx").string()}, home.path());
  EXPECT_EQ(runtime.exit_code, 1) << runtime.err;
  EXPECT_EQ(run_cli({"--help"}, home.path()).exit_code, 0);
  EXPECT_EQ(run_cli({"--version"}, home.path()).exit_code, 0);
}

// What a fuzzed model's names hold (a newline, a byte that is not UTF-8) reaches the user escaped: errors stay
// one line, --json stays JSON. `backend run` takes each input once.
TEST(CliConventions, NamesAreEscapedAndInputsCountedOnce) {
  TempDir home, dir;
  const std::string odd = "x\ny";
  const std::string bytes = odd + static_cast<char>(0xff);  // not UTF-8: no engine plan (JSON) can hold it
  auto relu_model = [&](const std::string& name, const std::string& file) {
    networks::LayerBuilder b("odd");
    b.output(b.relu(b.input(name, {1, 4})));
    b.save(dir / file);
    onnx_io::write_tensor_pb(dir / (file + ".pb"), Tensor{name, {1, 4}, std::vector<float>(4, -1.f)});
    return (dir / file).string();
  };
  const std::string model = relu_model(odd, "odd.onnx");
  const CliResult ran = run_cli({"--json", "backend", "onednn_cpu", "run", "--onnx-path", model, "--input", model + ".pb",
                                 "--output-dir", (dir / "out").string()},
                                home.path());
  ASSERT_EQ(ran.exit_code, 0) << ran.err;
  Json parsed;
  EXPECT_NO_THROW(parsed = Json::parse(ran.out)) << ran.out;
  // The text form names each output on one line, its name escaped.
  onnx::ModelProto renamed;
  ASSERT_TRUE(renamed.ParseFromString(read_text(model)));
  renamed.mutable_graph()->mutable_node(0)->set_output(0, "y\nz");
  renamed.mutable_graph()->mutable_output(0)->set_name("y\nz");
  write_text(dir / "odd_out.onnx", renamed.SerializeAsString());
  const CliResult text = run_cli({"backend", "onednn_cpu", "run", "--onnx-path", (dir / "odd_out.onnx").string(), "--input",
                                  model + ".pb", "--output-dir", (dir / "out_text").string()},
                                 home.path());
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_TRUE(contains(text.out + text.err, "output \"y\\nz\" [1,4] -> ")) << text.out << text.err;
  EXPECT_EQ(std::count(text.err.begin(), text.err.end(), '\n') + std::count(text.out.begin(), text.out.end(), '\n'), 1)
      << text.out << text.err;
  expect_one_line_error(run_cli({"backend", "onednn_cpu", "run", "--onnx-path", model, "--input", model + ".pb", "--input",
                                 model + ".pb", "--output-dir", (dir / "out2").string()},
                                home.path()),
                        "2 inputs given but the model reads 1");
  const std::string not_utf8 = relu_model(bytes, "bytes.onnx");
  expect_one_line_error(run_cli({"backend", "onednn_cpu", "run", "--onnx-path", not_utf8, "--input", not_utf8 + ".pb",
                                 "--output-dir", (dir / "out4").string()},
                                home.path()),
                        "tensor name \"x\\ny\ufffd\" is not UTF-8 text");
  // A node name, as the user had it: the same one line from every engine, never a JSON exception.
  onnx::ModelProto named;
  ASSERT_TRUE(named.ParseFromString(read_text(model)));
  named.mutable_graph()->mutable_node(0)->set_name(bytes);
  write_text(dir / "node_bytes.onnx", named.SerializeAsString());
  for (const std::string backend : {"onednn_cpu", "xnnpack_cpu"})
    expect_one_line_error(run_cli({"backend", backend, "run", "--onnx-path", (dir / "node_bytes.onnx").string(), "--input",
                                   model + ".pb", "--output-dir", (dir / ("out_" + backend)).string()},
                                  home.path()),
                          "node name \"x\\ny\ufffd\" is not UTF-8 text");

  networks::LayerBuilder two("two");
  two.output(two.add(two.input("a", {1, 4}), two.input("b", {1, 4})));
  two.save(dir / "two.onnx");
  onnx_io::write_tensor_pb(dir / "a.pb", Tensor{"a", {1, 4}, std::vector<float>(4, 1.f)});
  expect_one_line_error(run_cli({"backend", "onednn_cpu", "run", "--onnx-path", (dir / "two.onnx").string(), "--input",
                                 (dir / "a.pb").string(), "--input", (dir / "a.pb").string(), "--output-dir", (dir / "out3").string()},
                                home.path()),
                        "input 'a' is given twice");

  // A file name is any bytes: --json output replaces what is not UTF-8 instead of failing.
  const fs::path ir = dir / (std::string("ir") + static_cast<char>(0xfe) + ".json");
  const CliResult listed = run_cli({"--json", "get_ir", "--onnx", model, "--output", ir.string()}, home.path());
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_TRUE(fs::exists(ir));
  EXPECT_TRUE(contains(Json::parse(listed.out)["ir"].get<std::string>(), "ir\ufffd.json")) << listed.out;

  // A Gemm whose weight does not fit its input, in a node named with a newline: one line, the name escaped.
  networks::LayerBuilder bad("bad");
  const auto x = bad.input("x", {1, 8});
  bad.output(bad.node("Gemm", {x, bad.random_weights({4, 6}, 0.1f)}, {1, 4}, {networks::attr("transB", int64_t{1})}));
  onnx::ModelProto m = bad.model();
  m.mutable_graph()->mutable_node(0)->set_name(odd);
  write_text(dir / "bad.onnx", m.SerializeAsString());
  const CliResult refused = run_cli({"get_ir", "--onnx", (dir / "bad.onnx").string()}, home.path());
  expect_one_line_error(refused, "x\\ny");
}

}  // namespace
TEST(CliConventions, RegisterCreateConnectUnregisterAsJson) {
  TempDir tmp;
  const fs::path home = tmp / "home";
  const fs::path meta = make_backend_package(tmp / "pkg");
  const CliResult reg = run_cli({"--json", "register", "--backend", meta.string()}, home);
  ASSERT_EQ(reg.exit_code, 0) << reg.err;
  EXPECT_EQ(Json::parse(reg.out), (Json{{"registered", "backend"}, {"name", "my_backend"}, {"implement", ""}}));
  const CliResult created =
      run_cli({"--json", "create", "--customized-workspace", (tmp / "ws").string(), "--backend", "my_backend"}, home);
  ASSERT_EQ(created.exit_code, 0) << created.err;
  const Json ws = Json::parse(created.out);
  EXPECT_EQ(ws["platform"], "customized");
  EXPECT_TRUE(fs::exists(fs::path(ws["configs"].get<std::string>()) / "backend_config.yaml"));
  const CliResult connected =
      run_cli({"--json", "connect", "--backend", "my_backend", "--workspace", (tmp / "ws").string()}, home);
  ASSERT_EQ(connected.exit_code, 0) << connected.err;
  EXPECT_EQ(Json::parse(connected.out)["backend"], "my_backend");
  EXPECT_FALSE(Json::parse(connected.out)["message"].get<std::string>().empty());
  const CliResult gone = run_cli({"unregister", "--backend", "my_backend", "--json"}, home);
  ASSERT_EQ(gone.exit_code, 0) << gone.err;
  EXPECT_EQ(Json::parse(gone.out)["unregistered"], "backend");
  EXPECT_EQ(Json::parse(gone.out)["removed"], 1);
  // Without --json the lines stay nn-Meter's.
  EXPECT_EQ(run_cli({"register", "--backend", meta.string()}, home).out,
            "(nn-Meter) Successfully register backend my_backend\n");
}

// CLI11's own checks (options that exclude each other, too few values) report like every other usage
// error: one "(nn-Meter) " line that points at the command's --help, exit 2, stdout empty.
TEST(CliConventions, ParseErrorsAreOneHouseLine) {
  TempDir home;
  const CliResult both = run_cli({"register", "--backend", "a.yaml", "--kernel", "b.yaml"}, home.path());
  EXPECT_EQ(both.exit_code, 2) << both.err;
  expect_one_line_error(both, "--backend excludes --kernel (see nn-meter register --help)");
  EXPECT_EQ(both.out, "");
  const CliResult few = run_cli({"unregister", "--operator", "x"}, home.path());
  EXPECT_EQ(few.exit_code, 2) << few.err;
  expect_one_line_error(few, "--operator: At least 2 required but received 1 (see nn-meter unregister --help)");
  EXPECT_EQ(few.out, "");
  expect_one_line_error(run_cli({"--no-such-flag"}, home.path()), "--no-such-flag (see nn-meter --help)");
}

}  // namespace nnmeter::test

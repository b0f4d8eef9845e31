// Hostile files given where a meta or config file is expected: an alias bomb, a FIFO, a device. Each is a
// one-line error, never a hang or memory running out.
#include <sys/stat.h>

#include <fstream>

#include "support/cli_expect.h"

namespace nnmeter::test {
namespace {

TEST(HardeningFiles, YamlAliasBombIsRefused) {
  TempDir tmp;
  // Nine levels of nine aliases: under 700 bytes, 9^9 (387 million) values once expanded.
  std::string bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n";
  for (char level = 'b'; level <= 'i'; ++level) {
    const char prev = static_cast<char>(level - 1);
    bomb += std::string(1, level) + ": &" + level + " [";
    for (int i = 0; i < 9; ++i) bomb += std::string(i ? ", *" : "*") + prev;
    bomb += "]\n";
  }
  bomb += "builtinName: bomb\n";
  ASSERT_LT(bomb.size(), 700u);
  write_text(tmp / "bomb.yaml", bomb);
  expect_one_line_error(run_cli({"register", "--backend", (tmp / "bomb.yaml").string()}, tmp / "home"),
                        "expands to more than 1000000 values");
}

TEST(HardeningFiles, FifoAndDeviceAreNotRead) {
  TempDir tmp;
  const fs::path fifo = tmp / "meta.yaml";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // Opening a FIFO with no writer blocks forever; the check must come before the open.
  expect_one_line_error(run_cli({"register", "--backend", fifo.string()}, tmp / "home"), "is not a regular file");
  expect_one_line_error(run_cli({"register", "--backend", "/dev/zero"}, tmp / "home"), "/dev/zero is not a regular file");
}

TEST(HardeningFiles, OversizedYamlIsRefused) {
  TempDir tmp;
  const fs::path big = tmp / "big.yaml";
  fs::create_directories(tmp.path());
  { std::ofstream(big) << "builtinName: big\n"; }
  fs::resize_file(big, (16u << 20) + 1);  // sparse: no disk used
  expect_one_line_error(run_cli({"register", "--backend", big.string()}, tmp / "home"), "more than the 16777216");
}

}  // namespace
}  // namespace nnmeter::test

// Every input kept under fuzz/corpus/<target>/ (the ones that crashed a fuzzer, plus a few valid seeds) goes
// through the fuzzer's own entry point: it must load or end in a clean nnmeter::Error, never another
// exception. A crash or a sanitizer report ends the test binary, which fails the suite as well.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>

#include "fuzz/fuzz_targets.h"
#include "nnmeter/common.h"

namespace nnmeter {
namespace {

const fs::path kCorpus = fs::path(NNMETER_SOURCE_DIR) / "fuzz" / "corpus";

std::vector<uint8_t> bytes_of(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

class CorpusReplay : public ::testing::TestWithParam<fuzz::Target> {};

TEST_P(CorpusReplay, EveryInputLoadsOrIsACleanError) {
  const fuzz::Target& target = GetParam();
  const fs::path folder = kCorpus / target.name;
  ASSERT_TRUE(fs::is_directory(folder)) << folder << " is missing: every target keeps a corpus";
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(folder))
    if (e.is_regular_file()) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  ASSERT_FALSE(files.empty()) << folder;
  for (const auto& file : files) {
    const std::vector<uint8_t> data = bytes_of(file);
    EXPECT_NO_THROW(target.entry(data.data(), data.size())) << file;
  }
}

INSTANTIATE_TEST_SUITE_P(Fuzz, CorpusReplay, ::testing::ValuesIn(fuzz::targets()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace nnmeter

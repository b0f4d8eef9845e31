// Atomic writes and what a killed writer leaves behind.
#include <gtest/gtest.h>
#include <unistd.h>

#include "common/io.h"
#include "support/test_support.h"

namespace nnmeter {
namespace {

using test::TempDir;

TEST(TempFiles, ARunKilledMidWriteLeavesOneTempFileThatOnlyItsKindOfSweepRemoves) {
  TempDir tmp;
  const fs::path file = tmp / "converted" / "model.onnx";
  io::write_file_atomic(file, "finished");
  const fs::path left = test::kill_mid_write(file);
  ASSERT_TRUE(fs::exists(left));
  // The file itself is whole: the last finished write (the first, or one of the child's).
  EXPECT_TRUE(fs::file_size(file) == 8 || fs::file_size(file) == (8u << 20)) << fs::file_size(file);
  // What the sweep must keep: a live writer's temp file (this process's), other programs' temp files and
  // names that only look alike, in the folder and below it.
  const std::string me = std::to_string(::getpid());
  const std::vector<fs::path> kept = {tmp / "converted" / (".a.onnx.tmp." + me + ".0"), tmp / "converted" / ".tmp-3xk2",
                                      tmp / "converted" / "b.onnx.tmp.1.2", tmp / "converted" / ".c.tmp.x1.2",
                                      tmp / "converted" / ".d.tmp.1", tmp / "converted" / "sub" / ".e.tmp.2.x"};
  for (const auto& k : kept) test::write_text(k, "other");
  const fs::path nested = tmp / "converted" / "sub" / left.filename();
  fs::copy_file(left, nested);

  EXPECT_EQ(io::remove_stale_temp_files(tmp / "converted"), 2u);
  EXPECT_FALSE(fs::exists(left));
  EXPECT_FALSE(fs::exists(nested));
  for (const auto& k : kept) EXPECT_TRUE(fs::exists(k)) << k;
  EXPECT_TRUE(fs::file_size(file) == 8 || fs::file_size(file) == (8u << 20));
  EXPECT_EQ(io::remove_stale_temp_files(tmp / "converted"), 0u);
  EXPECT_EQ(io::remove_stale_temp_files(tmp / "no such folder"), 0u);
}

}  // namespace
}  // namespace nnmeter

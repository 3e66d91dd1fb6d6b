// A WAL that fills its disk must recover on the same disk (issue 11, item 4): the newest segment used to be kept
// even when all its batches had landed, so every rerun met the same full disk and exited 75 forever.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <filesystem>

#include "support/duckdb_probe.h"
#include "support/pipeline_fixture.h"

namespace skippr::test {
namespace {

// A small tmpfs at `where`, unmounted when the object dies.
class SmallTmpfs {
 public:
  SmallTmpfs(const std::filesystem::path& where, const char* size) : where_(where) {
    std::filesystem::create_directories(where);
    mounted_ = ::mount("tmpfs", where.c_str(), "tmpfs", 0, (std::string("size=") + size).c_str()) == 0;
  }
  ~SmallTmpfs() {
    if (mounted_) ::umount2(where_.c_str(), MNT_DETACH);
  }
  bool mounted() const { return mounted_; }
  uint64_t free_bytes() const {
    struct statvfs st {};
    ::statvfs(where_.c_str(), &st);
    return static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
  }

 private:
  std::filesystem::path where_;
  bool mounted_ = false;
};

// The trips table of `f` holds `rows` rows once each, with the content of a run that met no full disk.
void expect_every_row_once_as_an_unkilled_run(const PipelineFixture& f, uint64_t rows, uint64_t seed) {
  const TableDigest got = trips_digest(f.path("out.duckdb"));
  EXPECT_EQ(got.rows, rows);
  EXPECT_EQ(got.distinct_ids, rows);
  PipelineFixture calm(sample_to_duckdb_config(rows, seed));
  ASSERT_EQ(calm.skipprd({"sync", "--pipeline", "bikehire", "--once"}).exit_code, 0);
  EXPECT_EQ(got, trips_digest(calm.path("out.duckdb")));
}

// Sample -> DuckDB with DATA_DIR on a 3 MiB tmpfs and the default 64 MiB segments: the newest segment fills the
// disk with batches that have landed. The commit that meets the full disk waits for the rest to land, replaces the
// segment and goes on, so one run gets everything through the same 3 MiB.
TEST(DiskFull, AWalThatFillsItsDiskWithLandedBatchesReplacesItsSegmentAndGoesOn) {
  if (geteuid() != 0) GTEST_SKIP() << "mounting a tmpfs needs root";
  constexpr uint64_t kRows = 300000;
  PipelineFixture f(sample_to_duckdb_config(kRows, 11));  // the DuckDB file is beside DATA_DIR, not on the tmpfs
  SmallTmpfs disk(f.path("data"), "3m");
  if (!disk.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here";
  auto r =
      f.skipprd({"sync", "--pipeline", "bikehire", "--once", "--log", "info"}, {{"BUFFER_THRESHOLD_BYTES", "300000"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("holds only landed batches"), std::string::npos) << "the disk never filled: " << r.err;
  expect_every_row_once_as_an_unkilled_run(f, kRows, 11);
}

// The disk filled by something else, less room left than one batch needs: the run stops with 75 and "the disk is full";
// once space is freed, a rerun on the same disk delivers everything, once.
TEST(DiskFull, ADiskFullOfSomethingElseStopsWith75AndARerunFinishesOnceSpaceIsFreed) {
  if (geteuid() != 0) GTEST_SKIP() << "mounting a tmpfs needs root";
  constexpr uint64_t kRows = 100000;
  PipelineFixture f(sample_to_duckdb_config(kRows, 12));
  SmallTmpfs disk(f.path("data"), "3m");
  if (!disk.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here";
  ASSERT_EQ(f.skipprd({"query", "--sql", "RESET PIPELINE bikehire"}).exit_code, 0);  // state.json, before filling
  write_text(f.path("data/filler"), std::string(disk.free_bytes() - 16384, 'x'));
  const std::map<std::string, std::string> env = {{"BUFFER_THRESHOLD_BYTES", "300000"}};
  auto full = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env);
  ASSERT_EQ(full.exit_code, 75) << full.err;
  EXPECT_NE(full.err.find("the disk is full"), std::string::npos) << full.err;
  std::filesystem::remove(f.path("data/filler"));
  auto rerun = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env);
  ASSERT_EQ(rerun.exit_code, 0) << rerun.err;
  expect_every_row_once_as_an_unkilled_run(f, kRows, 12);
}

}  // namespace
}  // namespace skippr::test

#include "core/env.h"

#include <gtest/gtest.h>

#include "wal/wal_test_util.h"

namespace skippr {
namespace {

using skippr::testing::read_all;
using skippr::testing::ScratchDir;

TEST(Env, WriteFileAtomicallyReplacesTheContentAndLeavesNoTemporary) {
  ScratchDir scratch;
  const auto path = scratch.path() / "state.json";
  ASSERT_TRUE(write_file_atomically(default_env(), path, "first"));
  EXPECT_EQ(read_all(path), "first");
  ASSERT_TRUE(write_file_atomically(default_env(), path, "second, longer"));
  EXPECT_EQ(read_all(path), "second, longer");
  auto names = default_env().list_dir(scratch.path());
  ASSERT_TRUE(names);
  EXPECT_EQ(*names, std::vector<std::string>{"state.json"});
}

TEST(Env, CreateDirsMakesEveryMissingLevel) {
  ScratchDir scratch;
  const auto dir = scratch.path() / "a" / "b" / "c";
  ASSERT_TRUE(default_env().create_dirs(dir));
  EXPECT_TRUE(std::filesystem::is_directory(dir));
  EXPECT_TRUE(default_env().create_dirs(dir)) << "an existing directory is fine";
}

TEST(Env, WritableFileAppendsTruncatesAndReadsBack) {
  ScratchDir scratch;
  const auto path = scratch.path() / "f";
  auto file = default_env().open_writable(path, OpenMode::kCreateExclusive);
  ASSERT_TRUE(file);
  ASSERT_TRUE((*file)->append("hello world"));
  ASSERT_TRUE((*file)->truncate(5));
  ASSERT_TRUE((*file)->append("!"));
  ASSERT_TRUE((*file)->sync());
  ASSERT_TRUE((*file)->close());
  EXPECT_EQ(*default_env().read_file(path), "hello!");
  EXPECT_EQ(*default_env().read_range(path, 4, 100), "o!");
  EXPECT_FALSE(default_env().open_writable(path, OpenMode::kCreateExclusive)) << "must never clobber a file";
}

}  // namespace
}  // namespace skippr

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/config.h"
#include "config_test_util.h"

namespace skippr {
namespace {

using skippr::testing::ScopedEnv;
using skippr::testing::TempDir;
using ::testing::HasSubstr;

TEST(DiscoverConfig, FindsSkipprYmlInTheNearestParent) {
  TempDir dir;
  ScopedEnv no_env("SKIPPR_CONFIG_FILE", std::nullopt);
  const auto file = dir.write("project/skippr.yml", "pipelines: {}\n");
  std::filesystem::create_directories(dir.path() / "project/a/b");
  auto found = discover_config(std::nullopt, dir.path() / "project/a/b");
  ASSERT_TRUE(found.has_value()) << found.error().message;
  EXPECT_EQ(*found, file);
  EXPECT_TRUE(found->is_absolute());
}

TEST(DiscoverConfig, TheNearestOneWins) {
  TempDir dir;
  ScopedEnv no_env("SKIPPR_CONFIG_FILE", std::nullopt);
  dir.write("skippr.yml", "");
  const auto inner = dir.write("a/skippr.yml", "");
  std::filesystem::create_directories(dir.path() / "a/b");
  auto found = discover_config(std::nullopt, dir.path() / "a/b");
  ASSERT_TRUE(found.has_value()) << found.error().message;
  EXPECT_EQ(*found, inner);
}

TEST(DiscoverConfig, EnvironmentVariableWinsOverSearchAndExplicitPathWinsOverBoth) {
  TempDir dir;
  dir.write("skippr.yml", "");
  const auto from_env = dir.write("elsewhere/env.yml", "");
  const auto explicit_file = dir.write("explicit.yml", "");
  ScopedEnv env("SKIPPR_CONFIG_FILE", from_env.string());

  auto found = discover_config(std::nullopt, dir.path());
  ASSERT_TRUE(found.has_value()) << found.error().message;
  EXPECT_EQ(*found, from_env);

  auto chosen = discover_config(explicit_file, dir.path());
  ASSERT_TRUE(chosen.has_value()) << chosen.error().message;
  EXPECT_EQ(*chosen, explicit_file);
}

TEST(DiscoverConfig, ExplicitPathMustExist) {
  TempDir dir;
  dir.write("skippr.yml", "");  // must not be used as a fallback
  auto found = discover_config(dir.path() / "typo.yml", dir.path());
  ASSERT_FALSE(found.has_value());
  EXPECT_EQ(found.error().kind, ErrorKind::kConfig);
  EXPECT_THAT(found.error().message, HasSubstr("config file " + (dir.path() / "typo.yml").string() + " not found"));
}

TEST(DiscoverConfig, EnvironmentPathMustExist) {
  TempDir dir;
  dir.write("skippr.yml", "");
  ScopedEnv env("SKIPPR_CONFIG_FILE", (dir.path() / "gone.yml").string());
  auto found = discover_config(std::nullopt, dir.path());
  ASSERT_FALSE(found.has_value());
  EXPECT_THAT(found.error().message, HasSubstr("SKIPPR_CONFIG_FILE"));
}

TEST(DiscoverConfig, NothingFoundSaysWhereItLookedAndWhatToDo) {
  TempDir dir;
  ScopedEnv no_env("SKIPPR_CONFIG_FILE", std::nullopt);
  // The temp folder's parents could hold a stray skippr.yml; only run the assertion when they do not.
  for (auto p = dir.path(); p != p.parent_path(); p = p.parent_path()) {
    if (std::filesystem::exists(p / "skippr.yml")) GTEST_SKIP() << "a skippr.yml exists above " << p;
  }
  auto found = discover_config(std::nullopt, dir.path());
  ASSERT_FALSE(found.has_value());
  EXPECT_EQ(found.error().kind, ErrorKind::kConfig);
  EXPECT_THAT(found.error().message, HasSubstr(dir.path().string()));
  EXPECT_THAT(found.error().message, HasSubstr("create skippr.yml"));
  EXPECT_THAT(found.error().message, HasSubstr("--config"));
}

}  // namespace
}  // namespace skippr

// The Debian package (cpack -G DEB on this build): what it holds and depends on, a binary that runs from wherever it
// is unpacked (DuckDB's library found beside it), a real install (run as root, as CI is: dpkg -i, then purged) whose
// systemd unit passes `systemd-analyze verify` and whose service user exists, an install on a minimal Debian root as
// the Dockerfile's runtime stage does it, and the bash completion.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "support/process.h"

namespace skippr::test {
namespace {

namespace fs = std::filesystem;

ProcessResult sh(const std::string& command, const fs::path& cwd) {
  return run_process({"/bin/sh", "-c", command}, cwd);
}

class Package : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    const fs::path build = fs::path(SKIPPRD_BINARY).parent_path();
    const auto made =
        sh(fmt::format("cpack -G DEB -B '{}' --config '{}/CPackConfig.cmake'", dir_->path().string(), build.string()),
           build);
    ASSERT_EQ(made.exit_code, 0) << made.out << made.err;
    for (const auto& entry : fs::directory_iterator(dir_->path())) {
      if (entry.path().extension() == ".deb") deb_ = new fs::path(entry.path());
    }
    ASSERT_NE(deb_, nullptr) << "cpack made no .deb";
  }
  static void TearDownTestSuite() {
    delete deb_;
    delete dir_;
  }
  static TempDir* dir_;
  static fs::path* deb_;
};
TempDir* Package::dir_ = nullptr;
fs::path* Package::deb_ = nullptr;

TEST_F(Package, HoldsTheBinaryItsLibraryTheUnitAndCompletionAndDependsOnTheSharedLibraries) {
  const auto info = sh(fmt::format("dpkg-deb -I '{}'", deb_->string()), dir_->path());
  ASSERT_EQ(info.exit_code, 0) << info.err;
  for (const char* needed :
       {"Package: skipprd", "libpq5", "librdkafka1", "libodbc2", "adduser", "postinst", "postrm"}) {
    EXPECT_NE(info.out.find(needed), std::string::npos) << needed << " missing in:\n" << info.out;
  }
  const auto files = sh(fmt::format("dpkg-deb -c '{}'", deb_->string()), dir_->path());
  for (const char* file :
       {"./usr/bin/skipprd", "./usr/lib/skipprd/libduckdb.so", "./usr/lib/systemd/system/skipprd@.service",
        "./usr/lib/systemd/system/skipprd.service", "./usr/share/bash-completion/completions/skipprd",
        "./usr/share/doc/skipprd/README.md", "./usr/share/doc/skipprd/docs/connectors/DuckDB.md"}) {
    EXPECT_NE(files.out.find(file), std::string::npos) << file << " missing in:\n" << files.out;
  }
  // Unpacked anywhere, the binary finds its DuckDB through its RUNPATH ($ORIGIN/../lib/skipprd).
  const fs::path root = dir_->path() / "root";
  ASSERT_EQ(sh(fmt::format("dpkg-deb -x '{}' '{}'", deb_->string(), root.string()), dir_->path()).exit_code, 0);
  const auto version = run_process({(root / "usr/bin/skipprd").string(), "--version"}, dir_->path());
  EXPECT_EQ(version.exit_code, 0) << version.err;
  EXPECT_NE(version.out.find("skipprd 0.1.0"), std::string::npos) << version.out;
  const auto ldd = sh(fmt::format("ldd '{}'", (root / "usr/bin/skipprd").string()), dir_->path());
  EXPECT_NE(ldd.out.find((root / "usr/bin/../lib/skipprd/libduckdb.so").string()), std::string::npos) << ldd.out;
}

TEST_F(Package, InstallsAndItsUnitPassesSystemdAnalyzeVerify) {
  // It installs on this machine for real: only as root (CI runs as root), and never over a skipprd someone
  // installed here. What it installs is purged at the end, whatever the assertions say.
  if (geteuid() != 0) GTEST_SKIP() << "installing the package needs root (CI runs as root)";
  if (sh("dpkg-query -W -f='${Status}' skipprd 2>/dev/null | grep -q 'install ok installed'", dir_->path()).exit_code ==
      0) {
    GTEST_SKIP() << "a skipprd package is installed on this machine already: not replaced by a test";
  }
  struct Purge {
    const fs::path& cwd;
    ~Purge() { sh("dpkg -P skipprd >/dev/null 2>&1", cwd); }
  } purge{dir_->path()};
  const auto installed = sh(fmt::format("dpkg -i '{}'", deb_->string()), dir_->path());
  ASSERT_EQ(installed.exit_code, 0) << installed.out << installed.err;
  const auto verify =
      sh("systemd-analyze verify /usr/lib/systemd/system/skipprd@.service "
         "/usr/lib/systemd/system/skipprd.service",
         dir_->path());
  EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;
  EXPECT_EQ(verify.err, "") << "systemd-analyze had remarks";
  EXPECT_EQ(sh("getent passwd skipprd", dir_->path()).exit_code, 0) << "the service user was not created";
  EXPECT_EQ(sh("stat -c '%U:%G %a' /etc/skipprd", dir_->path()).out, "root:skipprd 750\n");
  const auto version = run_process({"/usr/bin/skipprd", "--version"}, dir_->path());
  EXPECT_NE(version.out.find("skipprd 0.1.0"), std::string::npos) << version.out << version.err;
  // The unit's restart policy, as systemd reads it: exit 75 restarts, 1, 2, 3 and 70 do not.
  const auto policy =
      sh("systemctl show -p Restart -p RestartPreventExitStatus -p SuccessExitStatus "
         "--no-pager skipprd@x.service 2>/dev/null || grep -E '^(Restart|RestartPrevent|SuccessExit)' "
         "/usr/lib/systemd/system/skipprd@.service",
         dir_->path());
  EXPECT_NE(policy.out.find("on-failure"), std::string::npos) << policy.out;
  EXPECT_NE(policy.out.find("1 2 3 70"), std::string::npos) << policy.out;
  const auto purged = sh("dpkg -P skipprd", dir_->path());
  EXPECT_EQ(purged.exit_code, 0) << purged.out << purged.err;
  EXPECT_FALSE(fs::exists("/usr/bin/skipprd"));
}

// The Dockerfile's runtime stage without a container engine or a registry (packaging/docker/check-runtime-stage.sh):
// on a minimal Debian 12 root made by debootstrap (--variant=minbase, close to debian:12-slim) the package installs
// with apt as the Dockerfile installs it, so its Depends are complete, and the sample lands as the skipprd user.
TEST_F(Package, InstallsOnAMinimalDebianAsTheDockerfilesRuntimeStageDoes) {
  if (geteuid() != 0) GTEST_SKIP() << "debootstrap and chroot need root (CI runs as root)";
  const auto checked =
      sh(fmt::format("bash '{}/packaging/docker/check-runtime-stage.sh' '{}'", SKIPPR_SOURCE_DIR, deb_->string()),
         dir_->path());
  EXPECT_EQ(checked.exit_code, 0) << checked.out << checked.err;
  EXPECT_NE(checked.out.find("100000 committed, 100000 landed"), std::string::npos) << checked.out << checked.err;
  EXPECT_NE(checked.out.find("runtime stage ok"), std::string::npos) << checked.out;
}

// The Kubernetes example's skippr.yml (its ConfigMap) is a configuration this build accepts.
TEST(KubernetesExample, ItsConfigurationValidates) {
  TempDir dir;
  const auto extracted =
      sh(fmt::format("awk '/^  skippr.yml: [|]/{{f=1;next}} /^---/{{f=0}} f{{sub(/^    /,\"\"); print}}' "
                     "{}/packaging/kubernetes/skipprd.yaml > skippr.yml",
                     SKIPPR_SOURCE_DIR),
         dir.path());
  ASSERT_EQ(extracted.exit_code, 0) << extracted.err;
  ASSERT_NE(read_text(dir / "skippr.yml").find("pipelines:"), std::string::npos);
  const auto valid = run_process({SKIPPRD_BINARY, "validate", "--config", (dir / "skippr.yml").string()}, dir.path(),
                                 {{"ORDERS_DB_PASSWORD", "x"}});
  EXPECT_EQ(valid.exit_code, 0) << valid.out << valid.err;
}

TEST(Completion, CompletesCommandsOptionsAndThePipelinesOfSkipprYml) {
  TempDir dir;
  write_text(dir / "skippr.yml",
             "data_sources:\n  s:\n    Sample: {}\npipelines:\n  bikehire:\n    data_source: data_sources.s\n  "
             "orders:\n    data_source: data_sources.s\n");
  auto complete = [&](const std::string& words, int cword) {
    return sh(fmt::format("bash -c 'source {}/packaging/completion/skipprd.bash; COMP_WORDS=({}); COMP_CWORD={}; "
                          "_skipprd; echo \"${{COMPREPLY[*]}}\"'",
                          SKIPPR_SOURCE_DIR, words, cword),
              dir.path())
        .out;
  };
  EXPECT_EQ(complete("skipprd sy", 1), "sync\n");
  EXPECT_EQ(complete("skipprd sync --pipeline \"\"", 3), "bikehire orders\n");
  EXPECT_EQ(complete("skipprd sync --pipeline o", 3), "orders\n");
  EXPECT_EQ(complete("skipprd sync --o", 2), "--once --output\n");
}

}  // namespace
}  // namespace skippr::test

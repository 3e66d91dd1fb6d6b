// WAL_STORAGE=s3 with SKIPPR_STATE_STORE=dynamodb, run as users run it: skipprd processes on machines that can be
// lost. A kill loop deletes DATA_DIR before every restart; a second copy is refused; a copy that was paused past its
// lease is fenced once another took over; SHOW PIPELINE, wal inspect and RESET work on what S3 and DynamoDB hold.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <sstream>
#include <thread>

#include "core/failpoint.h"
#include "remote_wal/remote_test_env.h"
#include "support/chaos_loop.h"
#include "support/postgres_pipeline.h"

namespace skippr::test {
namespace {

using Clock = std::chrono::steady_clock;

// The exit code of `pid` (128 + signal when killed), or -1 when it has not ended within `seconds`.
int wait_for_exit(int pid, double seconds) {
  const auto until = Clock::now() + std::chrono::duration<double>(seconds);
  while (Clock::now() < until) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return -1;
}

// `skipprd sync --pipeline bikehire` (no --once) of `fixture`'s config in its own folder and DATA_DIR.
int spawn_sync(const PipelineFixture& fixture, const TempDir& machine, std::map<std::string, std::string> env,
               bool once = false) {
  env["DATA_DIR"] = (machine / "data").string();
  env["SKIPPR_CONFIG_FILE"] = fixture.path("skippr.yml").string();
  std::vector<std::string> args = {SKIPPRD_BINARY, "sync", "--pipeline", "bikehire", "--output", "text"};
  if (once) args.push_back("--once");
  return spawn_process(args, machine.path(), env);
}

// The seqs a `--output text` run printed as committed ("committed pipeline/lineage/epoch/seq (N rows)").
std::vector<uint64_t> committed_seqs(const std::string& out) {
  std::vector<uint64_t> seqs;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("committed ", 0) != 0) continue;
    const std::string id = line.substr(10, line.find(' ', 10) - 10);
    seqs.push_back(std::stoull(id.substr(id.rfind('/') + 1)));
  }
  return seqs;
}

std::string show(const PipelineFixture& f, const std::map<std::string, std::string>& env, const std::string& what) {
  auto r = f.skipprd({"query", "--sql", "SHOW PIPELINE bikehire"}, env);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(what + " ", 0) == 0) {
      const size_t value = line.find_first_not_of(' ', what.size());
      return value == std::string::npos ? "" : line.substr(value);
    }
  }
  return "";
}

// The headline of this mode: the machine is replaced after every kill, and nothing that was committed is lost,
// nothing lands twice, and the table equals an unkilled run's.
TEST(EphemeralMachine, EveryRowLandsOnceWhenDataDirIsDeletedBeforeEveryRestart) {
  constexpr uint64_t kRows = 120000;
  PipelineFixture chaos(sample_to_duckdb_config(kRows, 11));
  std::map<std::string, std::string> env = remote_storage_env();
  SharedMoto().reset_gate_stats();
  // Every run starts on an empty DATA_DIR (state from DynamoDB, the WAL from S3): up to 2 s before the kill, so a run
  // still gets past that start when another test binary shares the two cores (at 1.2 s, 300 runs once made none).
  env.insert(
      {{"SKIPPR_CHAOS_MIN_SECONDS", "0.3"}, {"SKIPPR_CHAOS_MAX_SECONDS", "2.0"}, {"BUFFER_THRESHOLD_BYTES", "131072"}});
  const ChaosRuns runs = sync_until_done_under_chaos(chaos, "bikehire", env, /*seed_base=*/5000,
                                                     {.lose_data_dir_every = 1, .min_kills = 20});
  ASSERT_TRUE(runs.finished) << runs.failure;
  std::cout << "ephemeral machine: " << runs.summary() << "\n";
  EXPECT_GE(runs.kills, 20);
  EXPECT_EQ(runs.data_dirs_lost, runs.kills);
  EXPECT_EQ(runs.logged_kills, runs.kills);
  EXPECT_GE(runs.by_cause.count(std::string(failpoint::kWalBeforeFsync)), 1u)
      << "never killed between the object PUT and the commit record (the orphan case)";

  expect_same_as_unkilled_run(chaos, kRows, 11);

  // The state came from DynamoDB every time (never "a first run"), and batches committed before a kill were landed
  // from S3 by the next machine.
  auto stats = chaos.skipprd({"query", "--sql", "SHOW STATS FOR bikehire"}, env);
  ASSERT_EQ(stats.exit_code, 0) << stats.err;
  EXPECT_EQ(show(chaos, env, "epoch"), "1");
  EXPECT_EQ(show(chaos, env, "last_committed_batch"), show(chaos, env, "last_landed_batch"));
  EXPECT_EQ(show(chaos, env, "wal_segments"), "0") << "every landed batch's object was deleted";
  EXPECT_EQ(SharedMoto().keys(env.at("SKIPPR_WAL_S3_BUCKET")).size(), 0u);
  // Through the gate that checks signatures as AWS does: S3 listings, puts, deletes and DynamoDB's conditional
  // writes, every one accepted.
  SharedMoto().expect_every_request_accepted();
}

// A sync whose requests meet lost answers (after S3 or DynamoDB acted), SlowDowns and 500s on every step of the
// protocol: it finishes, and the table equals an unkilled, undisturbed run's.
TEST(EphemeralMachine, LostAnswersAndErrorStormsLoseAndDuplicateNothing) {
  constexpr uint64_t kRows = 40000;
  PipelineFixture f(sample_to_duckdb_config(kRows, 13));
  auto env = remote_storage_env();
  env["BUFFER_THRESHOLD_BYTES"] = "65536";
  FaultProxy& proxy = SharedProxy();
  proxy.clear();
  const std::vector<int> rules = {
      proxy.add({.method = "PUT", .path_regex = "\\.batch$", .action = "drop_after_forward", .skip = 2, .times = 4}),
      proxy.add({.target_regex = "UpdateItem",
                 .body_regex = "wal_seq = :s",
                 .action = "drop_after_forward",
                 .skip = 1,
                 .times = 4}),
      proxy.add({.method = "PUT",
                 .path_regex = "\\.batch$",
                 .action = "status",
                 .status = 503,
                 .code = "SlowDown",
                 .times = 6}),
      proxy.add({.target_regex = "UpdateItem",
                 .body_regex = "wal_landed",
                 .action = "status_after_forward",
                 .status = 500,
                 .times = 4}),
      proxy.add({.method = "DELETE", .action = "status", .status = 500, .times = 3}),
      proxy.add({.method = "GET", .path_regex = "\\.batch$", .action = "drop_before_forward", .times = 2}),
  };
  auto r = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (size_t i = 0; i + 1 < rules.size(); ++i) EXPECT_GT(proxy.hits(rules[i]), 0) << "rule " << i << " never struck";
  proxy.clear();
  expect_same_as_unkilled_run(f, kRows, 13);
  // What failed deletes left behind is removed by the next start, never landed again.
  auto again = f.skipprd({"sync", "--pipeline", "bikehire", "--once", "--output", "text"}, env);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("0 batches landed"), std::string::npos) << again.out;
  EXPECT_TRUE(SharedMoto().keys(env.at("SKIPPR_WAL_S3_BUCKET")).empty());
  expect_same_as_unkilled_run(f, kRows, 13);
}

TEST(EphemeralMachine, ASecondCopyOnAnotherMachineExits3NamingTheFirst) {
  PipelineFixture f(sample_to_duckdb_config(2000, 3));
  const auto env = remote_storage_env();
  TempDir first_machine, second_machine;
  const int first = spawn_sync(f, first_machine, env);  // keeps running (and holding the lease) after its first poll
  for (int i = 0; i < 200 && show(f, env, "running") == "no"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_NE(show(f, env, "running"), "no");
  auto elsewhere = env;
  elsewhere["DATA_DIR"] = (second_machine / "data").string();
  auto second = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, elsewhere);
  EXPECT_EQ(second.exit_code, 3) << second.err;
  EXPECT_NE(second.err.find("already running (pid " + std::to_string(first)), std::string::npos) << second.err;
  kill(first, SIGTERM);
  EXPECT_EQ(wait_for_exit(first, 30), 0) << read_text(first_machine / "spawned.err");
  EXPECT_EQ(trips_digest(f.path("out.duckdb")).rows, 2000u);
}

// The first copy is paused (SIGSTOP) past its lease; a second one takes over and finishes; the first, resumed,
// commits and lands nothing more and exits 75. Postgres, so that both can hold the destination at once.
TEST(EphemeralMachine, ACopyPausedPastItsLeaseIsFencedWhenItResumes) {
  constexpr uint64_t kRows = 200000;
  PostgresServer& pg = SharedPostgres();
  const std::string db = pg.create_database("fence");
  PipelineFixture f(sample_to_postgres_config(kRows, 5));
  auto env = remote_storage_env(/*lease_seconds=*/2);
  for (const auto& [k, v] : postgres_env(pg, db)) env[k] = v;
  env["BUFFER_THRESHOLD_BYTES"] = "65536";
  TempDir first_machine, second_machine;
  const int first = spawn_sync(f, first_machine, env);
  auto landed = [&] {
    try {
      return std::stoull(pg.value(db, "SELECT count(*) FROM bike.trips"));
    } catch (const std::exception&) {
      return 0ull;  // the table does not exist yet
    }
  };
  for (int i = 0; i < 600 && landed() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_GT(landed(), 0u);
  ASSERT_EQ(kill(first, SIGSTOP), 0);
  const uint64_t landed_when_paused = landed();
  ASSERT_LT(landed_when_paused, kRows) << "the first copy finished before it could be paused";
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // its lease runs out

  const int second = spawn_sync(f, second_machine, env, /*once=*/true);
  // Give the second copy time to take over (it watches the lease for a whole lease on its own clock first, then may
  // wait on a transaction the paused copy holds open), then resume the first.
  std::this_thread::sleep_for(std::chrono::seconds(6));
  const std::string committed_by_second_early = show(f, env, "running");
  EXPECT_NE(committed_by_second_early.find("pid " + std::to_string(second)), std::string::npos)
      << committed_by_second_early;
  ASSERT_EQ(kill(first, SIGCONT), 0);
  EXPECT_EQ(wait_for_exit(first, 30), 75) << read_text(first_machine / "spawned.err");
  EXPECT_NE(read_text(first_machine / "spawned.err").find("was taken over by pid " + std::to_string(second)),
            std::string::npos)
      << read_text(first_machine / "spawned.err");
  EXPECT_EQ(wait_for_exit(second, 300), 0) << read_text(second_machine / "spawned.err");
  // Every seq was committed by exactly one of them: the paused copy committed nothing once the other had the lease.
  std::vector<uint64_t> by_first = committed_seqs(read_text(first_machine / "spawned.out"));
  const std::vector<uint64_t> by_second = committed_seqs(read_text(second_machine / "spawned.out"));
  ASSERT_FALSE(by_first.empty());
  ASSERT_FALSE(by_second.empty());
  EXPECT_LT(by_first.back(), by_second.front()) << "the paused copy committed after the takeover";
  by_first.insert(by_first.end(), by_second.begin(), by_second.end());
  for (size_t i = 0; i < by_first.size(); ++i) EXPECT_EQ(by_first[i], i + 1) << "a seq committed twice or skipped";

  const PgTripsDigest got = pg_trips_digest(pg, db);
  EXPECT_EQ(got.rows, std::to_string(kRows));
  EXPECT_EQ(got.distinct_ids, std::to_string(kRows));
  const std::string calm_db = pg.create_database("calm");
  PipelineFixture calm(sample_to_postgres_config(kRows, 5));
  auto r = calm.skipprd({"sync", "--pipeline", "bikehire", "--once"}, postgres_env(pg, calm_db));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(got, pg_trips_digest(pg, calm_db));
}

// Batches committed to S3 wait while the destination is unreachable: SHOW PIPELINE and wal inspect show them, a
// later run lands them from S3 on another machine, and RESET empties the WAL and moves to a new epoch.
TEST(EphemeralMachine, ShowInspectAndResetWorkOnWhatS3AndDynamoDbHold) {
  PostgresServer& pg = SharedPostgres();
  const std::string db = pg.create_database("show");
  PipelineFixture f(sample_to_postgres_config(3000, 9));
  auto env = remote_storage_env();
  for (const auto& [k, v] : postgres_env(pg, db)) env[k] = v;
  env["BUFFER_THRESHOLD_BYTES"] = "65536";
  auto first = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env);
  ASSERT_EQ(first.exit_code, 0) << first.err;

  // More rows, and the destination unreachable: they commit to S3 and wait.
  write_text(f.path("skippr.yml"), sample_to_postgres_config(9000, 9));
  auto down = env;
  down["PG_PORT"] = std::to_string(free_loopback_port());
  down["SINK_RETRY_SECONDS"] = "1";
  std::filesystem::remove_all(f.path("data"));
  auto waiting = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, down);
  ASSERT_EQ(waiting.exit_code, 75) << waiting.err;
  EXPECT_NE(waiting.err.find("s3://" + env.at("SKIPPR_WAL_S3_BUCKET") + "/skippr/bikehire/wal/"), std::string::npos)
      << waiting.err;
  const std::string batches_waiting = show(f, env, "batches_waiting");
  ASSERT_NE(batches_waiting, "0");
  EXPECT_EQ(show(f, env, "wal_segments"), batches_waiting) << "one object per waiting batch";
  EXPECT_EQ(show(f, env, "state"), "DynamoDB table " + env.at("SKIPPR_STATE_DYNAMODB_TABLE"));

  std::filesystem::remove_all(f.path("data"));
  auto inspect = f.skipprd({"wal", "inspect", "--pipeline", "bikehire"}, env);
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  EXPECT_NE(inspect.out.find("s3://" + env.at("SKIPPR_WAL_S3_BUCKET")), std::string::npos) << inspect.out;
  size_t committed_lines = 0;
  for (size_t at = inspect.out.find(" committed "); at != std::string::npos;
       at = inspect.out.find(" committed ", at + 1)) {
    ++committed_lines;
  }
  EXPECT_EQ(std::to_string(committed_lines), batches_waiting) << inspect.out;

  // Another machine, the destination back: the waiting batches land from S3, then the rest is read.
  std::filesystem::remove_all(f.path("data"));
  auto back = f.skipprd({"sync", "--pipeline", "bikehire", "--once", "--output", "text"}, env);
  ASSERT_EQ(back.exit_code, 0) << back.err;
  EXPECT_NE((back.out + back.err).find("(" + batches_waiting + " replayed from the WAL"), std::string::npos)
      << back.out << back.err;
  EXPECT_EQ(pg_trips_digest(pg, db).rows, "9000");
  EXPECT_EQ(pg_trips_digest(pg, db).distinct_ids, "9000");

  // RESET: a new epoch in DynamoDB, nothing left in S3.
  auto reset = f.skipprd({"query", "--sql", "RESET PIPELINE bikehire"}, env);
  ASSERT_EQ(reset.exit_code, 0) << reset.err;
  EXPECT_EQ(show(f, env, "epoch"), "2");
  EXPECT_EQ(show(f, env, "last_committed_batch"), "none");
  EXPECT_TRUE(SharedMoto().keys(env.at("SKIPPR_WAL_S3_BUCKET")).empty());
}

}  // namespace
}  // namespace skippr::test

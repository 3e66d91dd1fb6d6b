// WAL_STORAGE=clustered with SKIPPR_STATE_STORE=dynamodb (moto_server's DynamoDB): `skipprd sync` runs on both
// "machines" as a service manager runs it, restarted when it dies. The one without the lease stands by; when the
// primary is killed, or its machine is lost, the standby takes the pipeline over from its copy by itself, with no
// `skipprd promote`.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "cluster/exactly_once_as_unkilled.h"
#include "support/chaos_loop.h"
#include "support/cluster_machines.h"
#include "support/moto_server.h"
#include "wal/wal.h"

namespace skippr::test {
namespace {

using Clock = std::chrono::steady_clock;

// One machine's service: its replica runs all along, its `sync --once` is started again after it exits, like a
// systemd unit with Restart=on-failure.
struct Service {
  Machine* machine;
  Machine* peer;
  TempDir cwd;  // spawned.out / spawned.err of its current sync
  int pid = -1;
  Clock::time_point start_at = Clock::now();
  std::string stderr_so_far;  // of the runs that ended
};

// The exit code of `pid` (128 + signal when killed), or -1 while it runs.
int exited(int pid) {
  int status = 0;
  if (waitpid(pid, &status, WNOHANG) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Whether `machine` holds a complete copy of the pipeline (its replica received all of the primary's WAL).
bool holds_complete_copy(const Machine& machine) {
  const auto record = machine.data_dir() / "pipelines" / "bikehire" / "copy.json";
  std::error_code ec;
  if (!std::filesystem::exists(record, ec)) return false;
  const auto j = nlohmann::json::parse(read_text(record), nullptr, false);
  return j.is_object() && j.value("complete", false);
}

std::map<std::string, std::string> dynamodb_state_env() {
  static int tables = 0;
  auto env = SharedMoto().env();
  env["SKIPPR_STATE_STORE"] = "dynamodb";
  env["SKIPPR_STATE_DYNAMODB_TABLE"] = "skippr-cluster-" + std::to_string(++tables);
  return env;
}

// What each test starts from: Sample -> a database of its own, machines a and b with their replicas running
// (`replica_env`: more for both), and the environment of a sync on either: PostgreSQL, the state in a DynamoDB table
// of its own, the config file, and `sync_env`. A sync gets it merged with its machine's primary_env.
struct TwoMachines {
  TwoMachines(const std::string& name, uint64_t rows, uint64_t seed, const std::map<std::string, std::string>& sync_env,
              const std::map<std::string, std::string>& replica_env = {})
      : db(SharedPostgres().create_database(name)),
        f(sample_to_postgres_config(rows, seed)),
        pki(TestPki::make(pki_dir.path(), name)),
        a("a", merged(pki.env(), replica_env)),
        b("b", merged(pki.env(), replica_env)),
        env(merged(merged(merged(postgres_env(SharedPostgres(), db), dynamodb_state_env()), sync_env),
                   {{"SKIPPR_CONFIG_FILE", f.path("skippr.yml").string()}})) {
    a.start_replica();
    b.start_replica();
  }
  // The environment of a sync on `machine`, whose peer is the other one.
  std::map<std::string, std::string> on(const Machine& machine) const {
    return merged(env, machine.primary_env(&machine == &a ? b : a));
  }

  std::string db;
  PipelineFixture f;
  TempDir pki_dir;
  TestPki pki;
  Machine a, b;
  std::map<std::string, std::string> env;
};

// SIGKILL the primary again and again (chaos timer: a run dies 0.4-1.8 s after it took the lease), and every fourth
// time lose its machine (replica killed, DATA_DIR deleted, an empty one back as the new replica). Half the restarts
// wait a moment, so the standby on the other machine takes over. Every row lands once, as unkilled.
TEST(AutomaticTakeover, KilledPrimariesAndLostMachinesEndExactlyOnceWithoutPromote) {
  constexpr uint64_t kRows = 300000;
  TwoMachines m("takeover", kRows, 13,
                {{"SKIPPR_LEASE_SECONDS", "4"},
                 {"BUFFER_THRESHOLD_BYTES", "150000"},
                 {"WAL_BYTES_PER_FILE", "600000"},
                 {"SKIPPR_CLUSTER_ACK_TIMEOUT_SECONDS", "20"},
                 {"SKIPPR_CHAOS_MODE", "yes"},
                 {"SKIPPR_CHAOS_MIN_SECONDS", "0.4"},
                 {"SKIPPR_CHAOS_MAX_SECONDS", "1.8"}});
  Service services[2] = {{&m.a, &m.b, {}, -1, Clock::now(), {}}, {&m.b, &m.a, {}, -1, Clock::now(), {}}};
  int runs = 0, kills = 0, losses = 0, standing_down = 0;
  bool done = false;
  const auto give_up = Clock::now() + std::chrono::minutes(6);
  while (!done && Clock::now() < give_up) {
    for (Service& s : services) {
      if (s.pid < 0 && Clock::now() >= s.start_at) {
        ++runs;
        auto env = m.on(*s.machine);
        env["SKIPPR_CHAOS_SEED"] = std::to_string(4000 + runs);
        s.pid = spawn_process({SKIPPRD_BINARY, "sync", "--pipeline", "bikehire", "--once"}, s.cwd.path(), env);
        continue;
      }
      if (s.pid < 0) continue;
      const int code = exited(s.pid);
      if (code < 0) continue;
      s.pid = -1;
      const std::string err = read_text(s.cwd / "spawned.err");
      s.stderr_so_far += err;
      if (code == 0) {
        done = true;
        break;
      }
      if (code == 75) {
        // It found its WAL on the other machine (this one lost its DATA_DIR) and gave the lease back.
        ASSERT_NE(err.find("the pipeline runs there"), std::string::npos) << err;
        ++standing_down;
        s.start_at = Clock::now() + std::chrono::milliseconds(1500);
        continue;
      }
      ASSERT_EQ(code, 137) << s.machine->name() << ":\n"
                           << err << "\nreplica log of " << s.peer->name() << ":\n"
                           << s.peer->replica_log();
      ++kills;
      s.start_at = Clock::now() + std::chrono::milliseconds(kills % 2 == 0 ? 1500 : 0);
      // A machine is lost only while the other holds a complete copy: the guarantee is one machine's loss.
      if (kills % 4 == 0 && holds_complete_copy(*s.peer)) {
        s.machine->lose_data_dir();
        s.machine->start_replica();
        ++losses;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (Service& s : services) {
    if (s.pid < 0) continue;
    ::kill(s.pid, SIGKILL);  // the standby, which may have just taken the finished pipeline over
    wait_process(s.pid);
    s.stderr_so_far += read_text(s.cwd / "spawned.err");
  }
  ASSERT_TRUE(done) << runs << " runs, " << kills << " kills\n" << services[0].stderr_so_far.substr(0, 20000);
  int takeovers = 0;
  for (const Service& s : services) {
    for (size_t at = 0; (at = s.stderr_so_far.find("taking it over on this machine", at)) != std::string::npos; ++at) {
      ++takeovers;
    }
  }
  std::cout << "automatic takeover: " << runs << " runs, " << kills << " kills, " << losses << " machines lost, "
            << takeovers << " takeovers from a copy, " << standing_down << " runs gave the lease back\n";
  EXPECT_GE(kills, 15);
  EXPECT_GE(losses, 3);
  EXPECT_GE(takeovers, 3);
  expect_exactly_once_as_unkilled(SharedPostgres(), m.db, kRows, 13);
}

// The two ways a machine that lost its DATA_DIR meets a pipeline whose state (and lineage) lives on in DynamoDB.
// While the peer's copy holds batches not landed, it gives the lease back (exit 75) and the peer's machine takes
// over. Once everything has landed, it starts afresh from the destination's ledger with a new lineage: reusing the
// old one would number its batches from 1 again, and with other batch boundaries (here a doubled
// BUFFER_THRESHOLD_BYTES) the ledger would take them for batches it already holds and skip their rows.
TEST(AutomaticTakeover, AMachineWithoutItsWalDefersToTheCopyOrStartsAfreshWithANewLineage) {
  constexpr uint64_t kRows = 200000;
  TwoMachines m("nowal", kRows, 17, {{"SKIPPR_LEASE_SECONDS", "4"}, {"BUFFER_THRESHOLD_BYTES", "100000"}});
  Machine& a = m.a;
  Machine& b = m.b;

  // A dies while it lands its third group: batches are committed (copied to B) and not landed.
  auto r = a.skipprd(kSync, m.f.root(), armed_at(m.on(a), "sink.in_transaction", 3));
  ASSERT_EQ(r.exit_code, 137) << r.err;
  const WalInspection copy = b.wal();
  ASSERT_GT(copy.last_committed_seq, copy.landed_watermark);

  // A's machine is replaced: it finds its WAL on B and gives the lease back.
  a.lose_data_dir();
  a.start_replica();
  r = a.skipprd(kSync, m.f.root(), m.on(a));
  EXPECT_EQ(r.exit_code, 75) << r.err;
  EXPECT_NE(r.err.find("the pipeline runs there"), std::string::npos) << r.err;
  // A term chosen by hand would not be a lease token: promote is refused in this mode, and changes nothing.
  r = b.skipprd({"promote", "--pipeline", "bikehire"}, m.f.root(), m.env);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("needs no promote"), std::string::npos) << r.err;

  // B takes over by itself (no promote) and is stopped gracefully midway: what it committed lands, LANDED reaches A.
  const int pid = spawn_process({SKIPPRD_BINARY, "sync", "--pipeline", "bikehire", "--once"}, m.f.root(), m.on(b));
  ASSERT_TRUE(a.wait_for_seq(copy.last_committed_seq + 4)) << read_text(m.f.root() / "spawned.err");
  ::kill(pid, SIGTERM);
  ASSERT_EQ(wait_process(pid), 143) << read_text(m.f.root() / "spawned.err");
  const std::string took_over = read_text(m.f.root() / "spawned.err");
  EXPECT_NE(took_over.find("taking it over on this machine from the copy here"), std::string::npos) << took_over;
  const WalInspection on_a = a.wal();
  ASSERT_EQ(on_a.landed_watermark, on_a.last_committed_seq);

  // Now B's machine is replaced: nothing waits to land anywhere, so it starts afresh, with other batch boundaries.
  b.lose_data_dir();
  b.start_replica();
  r = b.skipprd(kSync, m.f.root(), merged(m.on(b), {{"BUFFER_THRESHOLD_BYTES", "200000"}}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("has no WAL on this machine"), std::string::npos) << r.err;
  expect_exactly_once_as_unkilled(SharedPostgres(), m.db, kRows, 17);
}

// Every restart takes a new lease token, which is the term. A restarted primary whose copy ends on one of its own
// batches continues that copy instead of copying everything again: a copy started again is incomplete (and cannot
// be promoted) until it holds the whole backlog, so restarts must not open that window.
TEST(AutomaticTakeover, ARestartedPrimaryContinuesItsCopy) {
  constexpr uint64_t kRows = 60000;
  TwoMachines m("restart", kRows, 23, {{"SKIPPR_LEASE_SECONDS", "4"}, {"BUFFER_THRESHOLD_BYTES", "50000"}});
  auto r = m.a.skipprd(kSync, m.f.root(), armed_at(m.on(m.a), "sink.in_transaction", 3));
  ASSERT_EQ(r.exit_code, 137) << r.err;
  const WalInspection before = m.b.wal();
  ASSERT_GT(before.last_committed_seq, before.landed_watermark);
  std::vector<std::string> logged = kSync;
  logged.insert(logged.end(), {"--log", "info"});
  r = m.a.skipprd(logged, m.f.root(), m.on(m.a));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("does not continue this WAL"), std::string::npos) << r.err;
  EXPECT_EQ(m.b.wal().last_committed_seq, m.a.wal().last_committed_seq);
  expect_exactly_once_as_unkilled(SharedPostgres(), m.db, kRows, 23);
}

// RESET run on the machine that holds the copy: the copy (and its record) go, and a sync there, with no WAL,
// starts the new epoch from the source's start as RESET says (the ledger's batches are of the old epoch), while
// the other machine's WAL of the old epoch is never run again.
TEST(AutomaticTakeover, AResetOnTheCopysMachineStartsTheSourceOver) {
  constexpr uint64_t kRows = 30000;
  TwoMachines m("reset", kRows, 29, {{"SKIPPR_LEASE_SECONDS", "4"}, {"BUFFER_THRESHOLD_BYTES", "50000"}});
  auto r = m.a.skipprd(kSync, m.f.root(), m.on(m.a));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = m.b.skipprd({"query", "--sql", "RESET PIPELINE bikehire"}, m.f.root(), m.on(m.b));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::error_code ec;
  EXPECT_FALSE(std::filesystem::exists(m.b.data_dir() / "pipelines" / "bikehire" / "copy.json", ec));
  r = m.b.skipprd(kSync, m.f.root(), m.on(m.b));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // An append table gets the rows again after a RESET (the README's promise), each batch once in the ledger.
  auto& pg = SharedPostgres();
  EXPECT_EQ(pg.value(m.db, "SELECT count(*) FROM bike.trips"), std::to_string(2 * kRows));
  EXPECT_EQ(pg.value(m.db, "SELECT count(DISTINCT trip_id) FROM bike.trips"), std::to_string(kRows));
  EXPECT_EQ(pg.value(m.db, "SELECT count(*) - count(DISTINCT batch_id) FROM bike._skippr_batches"), "0");
  EXPECT_EQ(pg.value(m.db, "SELECT sum(\"rows\") FROM bike._skippr_batches"), std::to_string(2 * kRows));
  // A's WAL of the old epoch is deleted at its next start, not run: nothing more lands.
  r = m.a.skipprd(kSync, m.f.root(), m.on(m.a));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(pg.value(m.db, "SELECT count(*) FROM bike.trips"), std::to_string(2 * kRows));
}

// The primary is paused (SIGSTOP) past its lease: the standby takes over (after the lease runs out and its replica
// ends the silent session, here after 3 s instead of the default minute), and the old primary, resumed, is fenced
// (exit 75) by its lost lease and by the replica's term; every row lands once, as unkilled.
TEST(AutomaticTakeover, APausedPrimaryIsReplacedAndIsFencedWhenItResumes) {
  constexpr uint64_t kRows = 300000;
  TwoMachines m("paused", kRows, 19,
                {{"SKIPPR_LEASE_SECONDS", "3"},
                 {"BUFFER_THRESHOLD_BYTES", "100000"},
                 {"SKIPPR_CLUSTER_ACK_TIMEOUT_SECONDS", "30"}},
                {{"SKIPPR_CLUSTER_IDLE_TIMEOUT_SECONDS", "3"}});
  TempDir a_cwd, b_cwd;
  const std::vector<std::string> sync = {SKIPPRD_BINARY, "sync", "--pipeline", "bikehire", "--once"};
  const int old_primary = spawn_process(sync, a_cwd.path(), m.on(m.a));
  ASSERT_TRUE(m.b.wait_for_seq(4)) << read_text(a_cwd / "spawned.err");
  ::kill(old_primary, SIGSTOP);
  const int standby = spawn_process(sync, b_cwd.path(), m.on(m.b));
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  while (read_text(b_cwd / "spawned.err").find("taking it over on this machine") == std::string::npos) {
    ASSERT_EQ(exited(standby), -1) << read_text(b_cwd / "spawned.err");
    ASSERT_LT(Clock::now(), deadline) << read_text(b_cwd / "spawned.err");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::kill(old_primary, SIGCONT);
  EXPECT_EQ(wait_process(old_primary), 75) << read_text(a_cwd / "spawned.err");
  int code = wait_process(standby);
  for (int again = 0; code == 75 && again < 3; ++again) {
    // It may have given up on A's replica while the paused primary still held A's folder: a restart goes on.
    code = run_process(sync, b_cwd.path(), m.on(m.b)).exit_code;
  }
  ASSERT_EQ(code, 0) << read_text(b_cwd / "spawned.err");
  expect_exactly_once_as_unkilled(SharedPostgres(), m.db, kRows, 19);
}

}  // namespace
}  // namespace skippr::test

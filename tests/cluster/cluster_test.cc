// WAL_STORAGE=clustered against the real binary: a primary and `skipprd replica` on two "machines" (two DATA_DIRs and
// two loopback ports; see support/cluster_machines.h), Sample -> the real PostgreSQL server.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <utility>

#include "cluster/exactly_once_as_unkilled.h"
#include "support/chaos_loop.h"
#include "support/cluster_machines.h"
#include "support/postgres_pipeline.h"
#include "wal/wal.h"

namespace skippr::test {
namespace {

// `skipprd promote` on `machine`, retried while the replica there still serves the primary that just died (exit 3).
ProcessResult promote(const Machine& machine, const PipelineFixture& f) {
  ProcessResult r;
  for (int attempt = 0; attempt < 50; ++attempt) {
    r = machine.skipprd({"promote", "--pipeline", "bikehire"}, f.root());
    if (r.exit_code != 3) return r;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return r;
}

class Cluster : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    pki_dir_ = new TempDir();
    pki_ = new TestPki(TestPki::make(pki_dir_->path(), "cluster"));
    rogue_ = new TestPki(TestPki::make(pki_dir_->path(), "rogue"));
  }
  static void TearDownTestSuite() {
    delete rogue_;
    delete pki_;
    delete pki_dir_;
  }
  static TempDir* pki_dir_;
  static TestPki* pki_;
  static TestPki* rogue_;
};
TempDir* Cluster::pki_dir_ = nullptr;
TestPki* Cluster::pki_ = nullptr;
TestPki* Cluster::rogue_ = nullptr;

// SIGKILL the primary again and again (by timer and at the WAL's fsync), and every fourth time lose its machine:
// promote the replica's copy, delete the old primary's DATA_DIR, and run on. Every row lands once, as unkilled.
TEST_F(Cluster, KilledPrimariesAndLostMachinesEndExactlyOnce) {
  constexpr uint64_t kRows = 400000;
  auto& pg = SharedPostgres();
  const auto db = pg.create_database("failover");
  PipelineFixture f(sample_to_postgres_config(kRows, 7));
  Machine a("a", pki_->env());
  Machine b("b", pki_->env());
  Machine* primary = &a;
  Machine* replica = &b;
  replica->start_replica();
  const auto base = merged(postgres_env(pg, db), {{"BUFFER_THRESHOLD_BYTES", "150000"},
                                                  {"WAL_BYTES_PER_FILE", "600000"},
                                                  {"SKIPPR_CLUSTER_ACK_TIMEOUT_SECONDS", "20"}});
  int runs = 0, kills = 0, failovers = 0, refused_promotions = 0;
  bool done = false;
  while (!done && runs < 200) {
    ++runs;
    auto env = merged(base, primary->primary_env(*replica));
    if (kills < 18 && runs % 3 != 0) {  // two runs in three die at the WAL's fsync, the third by the timer
      env = armed_at(env, kills % 4 < 2 ? "wal.before_fsync" : "wal.after_fsync", 1 + (kills / 2) % 3);
    } else {
      env = merged(env, {{"SKIPPR_CHAOS_MODE", "yes"},
                         {"SKIPPR_CHAOS_SEED", std::to_string(9000 + runs)},
                         {"SKIPPR_CHAOS_MIN_SECONDS", "0.3"},
                         {"SKIPPR_CHAOS_MAX_SECONDS", "1.5"}});
    }
    const ProcessResult r = primary->skipprd(kSync, f.root(), env);
    if (r.exit_code == 0) {
      done = true;
      break;
    }
    ASSERT_EQ(r.exit_code, 137) << "run " << runs << " on " << primary->name() << ":\n"
                                << r.err << "\nreplica log:\n"
                                << replica->replica_log();
    ++kills;
    if (kills % 4 != 0) continue;
    // The primary's machine is lost. The replica's copy is promoted, and the old machine comes back empty, as the
    // new replica.
    const ProcessResult p = promote(*replica, f);
    if (p.exit_code != 0) {
      // Only a copy caught mid-catch-up may be refused, and then nothing may be deleted: the old primary goes on.
      ASSERT_EQ(p.exit_code, 70) << p.err;
      ASSERT_NE(p.err.find("incomplete"), std::string::npos) << p.err;
      ++refused_promotions;
      continue;
    }
    EXPECT_NE(p.out.find("promoted on this machine at term"), std::string::npos) << p.out;
    primary->lose_data_dir();
    primary->start_replica();
    std::swap(primary, replica);
    ++failovers;
  }
  ASSERT_TRUE(done) << runs << " runs, " << kills << " kills";
  std::cout << "clustered failover: " << runs << " runs, " << kills << " kills, " << failovers << " failovers ("
            << refused_promotions << " promotions refused: copy incomplete)\n";
  EXPECT_GE(kills, 15);
  EXPECT_GE(failovers, 3);
  expect_exactly_once_as_unkilled(pg, db, kRows, 7);
}

// Batch ids reported committed (JSON events on stdout), as seqs.
std::vector<uint64_t> committed_seqs(const std::string& events) {
  std::vector<uint64_t> seqs;
  std::istringstream lines(events);
  std::string line;
  while (std::getline(lines, line)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object() || j.value("event", "") != "batch_committed") continue;
    const std::string id = j.value("batch_id", "");
    seqs.push_back(std::stoull(id.substr(id.rfind('/') + 1)));
  }
  return seqs;
}

// A peer killed, then one that hangs (SIGSTOP), mid-run: no batch is reported committed that its copy lacks, the
// primary stops with exit 75 within the ack timeout, and once the peer is back the sync completes exactly once.
TEST_F(Cluster, APeerThatDiesOrHangsStopsThePrimaryWithinTheTimeoutAndLosesNothing) {
  constexpr uint64_t kRows = 600000;
  constexpr double kTimeout = 3;
  auto& pg = SharedPostgres();
  const auto db = pg.create_database("peerlost");
  PipelineFixture f(sample_to_postgres_config(kRows, 11));
  Machine a("a", pki_->env());
  Machine b("b", pki_->env());
  b.start_replica();
  auto env = merged(merged(postgres_env(pg, db), a.primary_env(b)),
                    {{"BUFFER_THRESHOLD_BYTES", "100000"},
                     {"SKIPPR_CLUSTER_ACK_TIMEOUT_SECONDS", fmt::format("{}", kTimeout)},
                     {"DATA_DIR", a.data_dir().string()},
                     {"SKIPPR_CONFIG_FILE", ""}});
  for (const int signo : {SIGKILL, SIGSTOP}) {
    SCOPED_TRACE(signo == SIGKILL ? "peer killed" : "peer hangs");
    const auto out = f.root() / "spawned.out";
    std::filesystem::remove(out);
    const int pid =
        spawn_process({SKIPPRD_BINARY, "sync", "--pipeline", "bikehire", "--once", "--output", "json"}, f.root(), env);
    // Let some batches be committed, then take the peer away.
    ASSERT_TRUE(b.wait_for_seq(b.wal().last_committed_seq + 4)) << "no batches reached the peer";
    const auto taken = std::chrono::steady_clock::now();
    if (signo == SIGKILL) {
      b.kill_replica();
    } else {
      b.signal_replica(SIGSTOP);
    }
    const int code = wait_process(pid);
    const double stopped_after = std::chrono::duration<double>(std::chrono::steady_clock::now() - taken).count();
    const std::string err = read_text(f.root() / "spawned.err");
    EXPECT_EQ(code, 75) << err;
    EXPECT_NE(err.find("has not confirmed a copy of batch"), std::string::npos) << err;
    EXPECT_LE(stopped_after, kTimeout + 4) << err;
    if (signo == SIGSTOP) b.kill_replica();  // the hung peer dies too, its copy stays on disk
    // Every batch the primary reported committed is in the copy.
    const WalInspection copy = b.wal();
    const auto seqs = committed_seqs(read_text(out));
    ASSERT_FALSE(seqs.empty());
    for (uint64_t seq : seqs) EXPECT_LE(seq, copy.last_committed_seq) << "batch " << seq << " reported committed";
    b.start_replica();
  }
  auto done = a.skipprd(kSync, f.root(), env);
  ASSERT_EQ(done.exit_code, 0) << done.err;
  expect_exactly_once_as_unkilled(pg, db, kRows, 11);
}

// The old primary, revived after its replica was promoted, is refused before it lands or commits anything; a
// machine whose DATA_DIR is new refuses to start afresh while the peer's copy holds batches not landed.
TEST_F(Cluster, TheOldPrimaryRevivedAfterAFailoverWritesNothing) {
  constexpr uint64_t kRows = 120000;
  auto& pg = SharedPostgres();
  const auto db = pg.create_database("revived");
  PipelineFixture f(sample_to_postgres_config(kRows, 3));
  Machine a("a", pki_->env());
  Machine b("b", pki_->env());
  b.start_replica();
  const auto base = merged(postgres_env(pg, db), {{"BUFFER_THRESHOLD_BYTES", "60000"}});
  // Killed inside its third landing: batches committed (on both machines) but not landed.
  auto killed = a.skipprd(kSync, f.root(), armed_at(merged(base, a.primary_env(b)), "sink.in_transaction", 3));
  ASSERT_EQ(killed.exit_code, 137) << killed.err;
  const WalInspection left = a.wal();
  ASSERT_GT(left.last_committed_seq, left.landed_watermark) << "nothing left to land: the test proves nothing";

  // A machine with a new DATA_DIR may not start the pipeline afresh beside that copy.
  Machine fresh("fresh", pki_->env());
  auto afresh = fresh.skipprd(kSync, f.root(), merged(base, fresh.primary_env(b)));
  EXPECT_EQ(afresh.exit_code, 2) << afresh.err;
  EXPECT_NE(afresh.err.find("lost its DATA_DIR"), std::string::npos) << afresh.err;

  auto p = promote(b, f);
  ASSERT_EQ(p.exit_code, 0) << p.err;
  const std::string landed_before = pg.value(db, "SELECT count(*) FROM bike.trips");
  const std::string ledger_before = pg.value(db, "SELECT count(*) FROM bike._skippr_batches");

  auto revived = a.skipprd(kSync, f.root(), merged(base, a.primary_env(b)));
  EXPECT_EQ(revived.exit_code, 75) << revived.err;
  EXPECT_NE(revived.err.find("was promoted to term 1"), std::string::npos) << revived.err;
  EXPECT_EQ(pg.value(db, "SELECT count(*) FROM bike.trips"), landed_before);
  EXPECT_EQ(pg.value(db, "SELECT count(*) FROM bike._skippr_batches"), ledger_before);
  EXPECT_EQ(a.wal().last_committed_seq, left.last_committed_seq) << "the fenced primary committed";

  // The old machine becomes the new primary's replica; the new primary finishes the job.
  a.start_replica();
  auto finished = b.skipprd(kSync, f.root(), merged(base, b.primary_env(a)));
  ASSERT_EQ(finished.exit_code, 0) << finished.err;
  expect_exactly_once_as_unkilled(pg, db, kRows, 3);

  // RESET on the new primary starts the peer's copy again at the new epoch, so no promotion can bring back the old.
  const uint64_t old_epoch = a.wal().epoch;
  auto reset = b.skipprd({"query", "--sql", "RESET PIPELINE bikehire"}, f.root(), merged(base, b.primary_env(a)));
  ASSERT_EQ(reset.exit_code, 0) << reset.err;
  EXPECT_GT(a.wal().epoch, old_epoch);
  EXPECT_EQ(a.wal().batches.size(), 0u);

  // A machine with a new DATA_DIR may start beside a copy that holds nothing to land, at the term the peer knows
  // (a term-0 start after a failover would be taken for the replaced primary and refused).
  Machine fresh_ok("fresh-ok", pki_->env());
  auto started = fresh_ok.skipprd(kSync, f.root(), merged(base, fresh_ok.primary_env(a)));
  EXPECT_EQ(started.exit_code, 0) << started.err;
}

// The model's PROMOTE_INCOMPLETE (model/clustered.pml): a copy being started again (RESET_COPY received, CAUGHT_UP
// not yet) lacks batches its primary committed, so promoting it would lose them. `skipprd promote` refuses it (exit
// 70) and changes nothing: it stays a copy, and the primary goes on. The copy record is set as RESET_COPY leaves it,
// because nothing makes a kill fall inside a catch-up by itself.
TEST_F(Cluster, AnIncompleteCopyIsNeverPromoted) {
  constexpr uint64_t kRows = 30000;
  auto& pg = SharedPostgres();
  const auto db = pg.create_database("incomplete");
  PipelineFixture f(sample_to_postgres_config(kRows, 5));
  Machine a("a", pki_->env());
  Machine b("b", pki_->env());
  b.start_replica();
  const auto base = merged(postgres_env(pg, db), {{"BUFFER_THRESHOLD_BYTES", "60000"}});
  auto killed = a.skipprd(kSync, f.root(), armed_at(merged(base, a.primary_env(b)), "sink.in_transaction", 2));
  ASSERT_EQ(killed.exit_code, 137) << killed.err;
  const WalInspection copy = b.wal();
  ASSERT_GT(copy.last_committed_seq, 1u);

  const auto record = b.data_dir() / "pipelines" / "bikehire" / "copy.json";
  ASSERT_TRUE(std::filesystem::exists(record));
  auto j = nlohmann::json::parse(read_text(record));
  ASSERT_TRUE(j.value("complete", false)) << "a caught-up copy is complete";
  j["complete"] = false;
  write_text(record, j.dump() + "\n");

  const ProcessResult p = promote(b, f);
  EXPECT_EQ(p.exit_code, 70) << p.err;
  EXPECT_NE(p.err.find("is incomplete"), std::string::npos) << p.err;
  EXPECT_TRUE(std::filesystem::exists(record)) << "the copy was taken for a WAL";
  EXPECT_EQ(b.wal().last_committed_seq, copy.last_committed_seq);

  // The old primary was never replaced: it finishes, and its copy is complete again.
  auto finished = a.skipprd(kSync, f.root(), merged(base, a.primary_env(b)));
  ASSERT_EQ(finished.exit_code, 0) << finished.err;
  expect_exactly_once_as_unkilled(pg, db, kRows, 5);
  EXPECT_TRUE(nlohmann::json::parse(read_text(record)).value("complete", false));
}

// Mutual TLS: a peer whose certificate another CA signed is refused either way round, with exit 2 and what to do;
// plaintext needs asking for by name. Nothing reaches the copy.
TEST_F(Cluster, TlsRefusesPeersOfAnotherCaAndPlaintextMustBeAskedFor) {
  auto& pg = SharedPostgres();
  const auto db = pg.create_database("tls");
  PipelineFixture f(sample_to_postgres_config(2000, 1));
  Machine b("b", pki_->env());
  b.start_replica();
  // Small batches and segments, so that the copy has landed segments to delete.
  const std::map<std::string, std::string> base_tuning = {{"SKIPPR_CLUSTER_ACK_TIMEOUT_SECONDS", "5"},
                                                          {"BUFFER_THRESHOLD_BYTES", "20000"},
                                                          {"WAL_BYTES_PER_FILE", "40000"}};
  const auto base = merged(postgres_env(pg, db), base_tuning);

  Machine a_rogue("rogue", rogue_->env());  // trusts only the rogue CA: the replica is not trusted
  auto r = a_rogue.skipprd(kSync, f.root(), merged(base, a_rogue.primary_env(b)));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("is not trusted"), std::string::npos) << r.err;

  // Trusts the cluster's CA but presents the rogue CA's certificate: the replica refuses it.
  auto mixed_env = rogue_->env();
  mixed_env["SKIPPR_CLUSTER_TLS_CA"] = pki_->ca.string();
  Machine a_mixed("mixed", mixed_env);
  r = a_mixed.skipprd(kSync, f.root(), merged(base, a_mixed.primary_env(b)));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("refused this machine's TLS certificate"), std::string::npos) << r.err;
  EXPECT_NE(b.replica_log().find("fails verification"), std::string::npos) << b.replica_log();

  Machine a_plain("plain", {});
  r = a_plain.skipprd(kSync, f.root(), merged(base, a_plain.primary_env(b)));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("SKIPPR_CLUSTER_INSECURE=yes"), std::string::npos) << r.err;
  std::error_code ec;
  EXPECT_FALSE(std::filesystem::exists(b.wal_dir("bikehire"), ec));

  // With the right certificates it runs; LANDED marks reach the copy, which then frees its landed segments too.
  Machine a("a", pki_->env());
  r = a.skipprd(kSync, f.root(), merged(base, a.primary_env(b)));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(pg.value(db, "SELECT count(*) FROM bike.trips"), "2000");
  const WalInspection copy = b.wal();
  EXPECT_GE(copy.last_committed_seq, 10u);
  EXPECT_EQ(copy.last_committed_seq, a.wal().last_committed_seq);
  EXPECT_EQ(copy.landed_watermark, copy.last_committed_seq);
  EXPECT_EQ(copy.segments.size(), 1u) << "landed segments stay on the peer";

  // Plaintext when both sides ask for it by name, with a warning on each.
  const std::map<std::string, std::string> insecure = {{"SKIPPR_CLUSTER_INSECURE", "yes"}};
  Machine c("plain-replica", insecure);
  c.start_replica();
  Machine d("plain-primary", insecure);
  const auto plain_db = pg.create_database("plain");
  r = d.skipprd(kSync, f.root(), merged(merged(postgres_env(pg, plain_db), base_tuning), d.primary_env(c)));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("in plaintext, without authentication"), std::string::npos) << r.err;
  EXPECT_NE(c.replica_log().find("received in plaintext"), std::string::npos) << c.replica_log();
  EXPECT_EQ(pg.value(plain_db, "SELECT count(*) FROM bike.trips"), "2000");

  // One side plaintext, the other TLS: a configuration mistake (exit 2), found at once, either way round.
  Machine e("plain-to-tls", insecure);
  r = e.skipprd(kSync, f.root(), merged(base, e.primary_env(b)));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("both sides must agree"), std::string::npos) << r.err;
  Machine g("tls-to-plain", pki_->env());
  r = g.skipprd(kSync, f.root(), merged(base, g.primary_env(c)));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(c.replica_log().find("does not speak plaintext cluster frames"), std::string::npos) << c.replica_log();
}

}  // namespace
}  // namespace skippr::test

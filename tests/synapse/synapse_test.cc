// The Synapse sink against tests/support/synapse_emulator.py: TDS 7.4 served by an emulator that runs the statements
// on the real PostgreSQL server, COPY INTO read from azurite with the credential the statement carries. A SIGKILL
// loop (DATA_DIR lost every fourth kill) with COMMIT answers dropped ends with the table equal to an unkilled run's,
// each BatchId once in the ledger, and no staged blob left; a wrong password or storage key stops with a clear
// message that holds neither.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <iostream>

#include "support/azurite_server.h"
#include "support/chaos_loop.h"
#include "support/pipeline_fixture.h"
#include "support/postgres_pipeline.h"
#include "support/sink_suite.h"
#include "support/synapse_emulator.h"

namespace skippr::test {
namespace {

std::string synapse_config(uint64_t rows, uint64_t seed, const std::string& container,
                           const std::string& landing = "append") {
  return fmt::format(R"(data_sources:
  sample:
    Sample: {{ rows: {}, seed: {} }}
data_sinks:
  warehouse:
    Synapse:
      server: 127.0.0.1
      port: ${{SYNAPSE_PORT}}
      database: "${{PG_DATABASE}}"
      user: {}
      password: "${{SYNAPSE_PASSWORD}}"
      encrypt: false
      schema: bike
      table: trips
      storage_account: {}
      storage_endpoint: "${{AZURITE_ENDPOINT}}"
      account_key: "${{STORAGE_KEY}}"
      container: {}
pipelines:
  bikehire:
    data_source: data_sources.sample
    data_sink: data_sinks.warehouse
    landing: {}
)",
                     rows, seed, SynapseEmulator::kUser, AzuriteServer::kAccount, container, landing);
}

std::map<std::string, std::string> synapse_env(const SynapseEmulator& emulator, const std::string& db) {
  return {{"SYNAPSE_PORT", std::to_string(emulator.port())},
          {"SYNAPSE_PASSWORD", SynapseEmulator::kPassword},
          {"PG_DATABASE", db},
          {"AZURITE_ENDPOINT", SharedAzurite().endpoint()},
          {"STORAGE_KEY", AzuriteServer::kKey}};
}

TEST(Synapse, KilledAndDroppedCommitsEndExactlyOnceAsUnkilled) {
  constexpr uint64_t kRows = 400000;
  auto& pg = SharedPostgres();
  const SynapseEmulator emulator(pg, /*drop_commit_every=*/4, /*late_commit_every=*/15);
  const auto db = pg.create_database("syn");
  const std::string container = SharedAzurite().create_container("stage");
  PipelineFixture f(synapse_config(kRows, 31, container));
  auto env = synapse_env(emulator, db);
  env["BUFFER_THRESHOLD_BYTES"] = "100000";
  env["WAL_BYTES_PER_FILE"] = "1MiB";  // segments land and are deleted often: the segment-delete point is passed
  const ChaosRuns runs = sync_until_done_under_chaos(
      f, "bikehire", env, /*seed_base=*/7500,
      {.max_runs = 300, .lose_data_dir_every = 4, .each_failpoint_in_turn = true, .min_kills = 15});
  ASSERT_TRUE(runs.finished) << runs.summary() << "\n" << runs.failure << "\n" << emulator.log();
  std::cout << "synapse: " << runs.summary() << ", " << emulator.dropped_commits() << " COMMIT answers dropped, "
            << emulator.late_commits() << " commits finished after their answer was lost\n";
  EXPECT_GE(runs.kills, 15);
  EXPECT_GE(runs.data_dirs_lost, 3);
  EXPECT_GT(emulator.dropped_commits(), 0);
  EXPECT_GT(emulator.late_commits(), 0);

  const PgTripsDigest got = pg_trips_digest(pg, db);
  EXPECT_EQ(got.rows, std::to_string(kRows));
  EXPECT_EQ(got.distinct_ids, std::to_string(kRows));
  EXPECT_EQ(pg.value(db, "SELECT sum(\"rows\") FROM bike._skippr_batches"), std::to_string(kRows));
  EXPECT_EQ(pg.value(db, "SELECT count(*) - count(DISTINCT batch_id) FROM bike._skippr_batches"), "0");
  EXPECT_EQ(pg.value(db, "SELECT count(*) FROM bike._skippr_batches WHERE landed_at IS NULL"), "0");
  EXPECT_TRUE(SharedAzurite().names(container).empty())
      << "staged blobs left: " << SharedAzurite().names(container).size();

  const SynapseEmulator calm_emulator(pg);
  const auto calm_db = pg.create_database("syncalm");
  PipelineFixture calm(synapse_config(kRows, 31, SharedAzurite().create_container("calm")));
  auto r = calm.skipprd({"sync", "--pipeline", "bikehire", "--once"}, synapse_env(calm_emulator, calm_db));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(got, pg_trips_digest(pg, calm_db));
}

TEST(Synapse, AWrongPasswordOrStorageKeyStopsWithAClearMessageAndNoSecret) {
  auto& pg = SharedPostgres();
  const SynapseEmulator emulator(pg);
  const auto db = pg.create_database("synbad");
  const std::string container = SharedAzurite().create_container("bad");
  PipelineFixture f(synapse_config(100, 1, container));

  auto env = synapse_env(emulator, db);
  env["SYNAPSE_PASSWORD"] = "not-the-password;x";
  auto r = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("Login failed for user"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("not-the-password"), std::string::npos) << r.err;

  // Another account's key: the storage service refuses the staging folder's sweep at open, before anything lands.
  env = synapse_env(emulator, db);
  env["STORAGE_KEY"] = "c2tpcHByLXRlc3Qtbm90LXRoZS1rZXktYXQtYWxsLTEyMzQ1Njc4OTA=";
  r = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err.find(env["STORAGE_KEY"]), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the credentials from account_key are refused"), std::string::npos) << r.err;
  EXPECT_EQ(pg.value(db, "SELECT count(*) FROM bike._skippr_batches"), "0");

  PipelineFixture merge(synapse_config(100, 1, container, "merge_by_key") + "    primary_key: trip_id\n");
  r = merge.skipprd({"sync", "--pipeline", "bikehire", "--once"}, synapse_env(emulator, db));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("append only"), std::string::npos) << r.err;
}

// The sink suite (tests/support/sink_suite.h) on Synapse: an emulator of its own (no answers dropped; the test above
// drops them), a database and a staging container of its own.
const SinkUnderTest& synapse_under_test() {
  static const SynapseEmulator emulator(SharedPostgres());
  static const SinkUnderTest sut = [] {
    const std::string db = SharedPostgres().create_database("synsuite");
    const std::string container = SharedAzurite().create_container("synsuite");
    SinkUnderTest s;
    s.name = "Synapse";
    s.lands_streams = true;
    s.sink = [container](const std::string& table) {
      return fmt::format(R"(Synapse: {{ server: 127.0.0.1, port: "${{SYNAPSE_PORT}}", database: "${{PG_DATABASE}}", )"
                         R"(user: {}, password: "${{SYNAPSE_PASSWORD}}", encrypt: false, schema: bike, table: "{}", )"
                         R"(storage_account: {}, storage_endpoint: "${{AZURITE_ENDPOINT}}", account_key: )"
                         R"("${{STORAGE_KEY}}", container: {} }})",
                         SynapseEmulator::kUser, table, AzuriteServer::kAccount, container);
    };
    read_from_postgres(s, db, "bike");
    s.env = synapse_env(emulator, db);
    s.after_landing = [container](const PipelineFixture&, const std::string&) {
      EXPECT_TRUE(SharedAzurite().names(container).empty()) << "staged blobs left";
    };
    return s;
  }();
  return sut;
}

}  // namespace

INSTANTIATE_SINK_SUITE(Synapse, synapse_under_test());

}  // namespace skippr::test

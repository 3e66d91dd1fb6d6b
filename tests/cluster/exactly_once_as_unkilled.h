// What every clustered test ends with: Sample -> PostgreSQL, each row once, as a run that was never killed.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "support/pipeline_fixture.h"
#include "support/postgres_pipeline.h"

namespace skippr::test {

inline const std::vector<std::string> kSync = {"sync", "--pipeline", "bikehire", "--once"};

inline std::map<std::string, std::string> merged(std::map<std::string, std::string> a,
                                                 const std::map<std::string, std::string>& b) {
  for (const auto& [k, v] : b) a[k] = v;
  return a;
}

// The table equals a run into a fresh database that was never killed nor clustered, each row once, each batch once
// in the ledger.
inline void expect_exactly_once_as_unkilled(PostgresServer& pg, const std::string& db, uint64_t rows, uint64_t seed) {
  const PgTripsDigest got = pg_trips_digest(pg, db);
  EXPECT_EQ(got.rows, std::to_string(rows));
  EXPECT_EQ(got.distinct_ids, std::to_string(rows));
  EXPECT_EQ(pg.value(db, "SELECT sum(\"rows\") FROM bike._skippr_batches"), std::to_string(rows));
  EXPECT_EQ(pg.value(db, "SELECT count(*) - count(DISTINCT batch_id) FROM bike._skippr_batches"), "0");
  const auto calm_db = pg.create_database("calm");
  PipelineFixture calm(sample_to_postgres_config(rows, seed));
  auto r = calm.skipprd(kSync, postgres_env(pg, calm_db));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(got, pg_trips_digest(pg, calm_db));
}

}  // namespace skippr::test

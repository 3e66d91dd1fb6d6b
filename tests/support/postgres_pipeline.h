// Test support: Sample -> Postgres pipelines and what the tests compare about the landed table.
#pragma once

#include <map>
#include <string>

#include "support/postgres_server.h"

namespace skippr::test {

// Pipeline "bikehire": Sample (rows, seed) into table `trips` of the database named by ${PG_DATABASE}, through
// host/port/user/password from ${PG_PORT} and ${PG_PASSWORD} (see postgres_env), with `landing` (and trip_id as the
// key for merge_by_key).
std::string sample_to_postgres_config(uint64_t rows, uint64_t seed, const std::string& landing = "append");

// The `Postgres:` block of a data_sinks entry (indented for it) writing `schema`.`table` through the variables above.
std::string postgres_sink_yaml(const std::string& schema, const std::string& table);

// The environment that points the config above at `server`'s `database`.
std::map<std::string, std::string> postgres_env(const PostgresServer& server, const std::string& database);

// count(*), count(DISTINCT trip_id) and an md5 over every column of every row, ordered by trip_id.
struct PgTripsDigest {
  std::string rows;
  std::string distinct_ids;
  std::string md5;
  bool operator==(const PgTripsDigest&) const = default;
};
PgTripsDigest pg_trips_digest(const PostgresServer& server, const std::string& database);

}  // namespace skippr::test

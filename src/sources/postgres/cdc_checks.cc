// The catalog and replication slot checks of the Postgres CDC source (methods of cdc_detail::CdcSource): the
// server and table can be read by logical replication (wal_level, rights, replica identity, a unique key), the
// publication exists for the table, older default names are adopted or warned about, and the slot is this
// pipeline's own and not ahead of its position. Kept apart from cdc_source.cc, which runs the source.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "clients/postgres/pg_client.h"
#include "sources/postgres/cdc_position.h"
#include "sources/postgres/cdc_source.h"
#include "sources/postgres/cdc_source_internal.h"
#include "sources/postgres/pg_table_reader.h"
#include "sources/postgres/replication_stream.h"

namespace skippr::cdc_detail {

Status CdcSource::check_server(PgConnection& conn) {
  auto level = conn.query("SHOW wal_level");
  if (!level) return std::unexpected(level.error());
  if (const auto value = level->rows.at(0).at(0).value_or(""); value != "logical") {
    return fail(ErrorKind::kConfig,
                fmt::format("{}: the server's wal_level is '{}', and CDC needs logical decoding; set wal_level = "
                            "logical in postgresql.conf and restart the server",
                            what_, value));
  }
  auto rights = conn.query("SELECT rolreplication OR rolsuper FROM pg_roles WHERE rolname = current_user");
  if (!rights) return std::unexpected(rights.error());
  if (rights->rows.empty() || rights->rows.at(0).at(0) != "t") {
    return fail(ErrorKind::kConfig, fmt::format("{}: the user may not use logical replication; ALTER ROLE <user> "
                                                "REPLICATION (or connect as a user that has it)",
                                                what_));
  }
  return ok();
}

Status CdcSource::check_table(PgConnection& conn, CdcTable& table) {
  if (per_table_) {
    // Several tables are each keyed by their own primary key (the pipeline's primary_key names one table's).
    auto key = pg_primary_key(conn, table.qualified);
    if (!key) return std::unexpected(key.error());
    if (key->empty()) {
      return fail(ErrorKind::kConfig,
                  fmt::format("{}: table {} has no primary key, and CDC of several tables keys each table by its "
                              "own; add one (ALTER TABLE {} ADD PRIMARY KEY (...)), or leave the table out with "
                              "exclude_tables",
                              what_, table.qualified, table.qualified));
    }
  }
  auto described =
      pg_describe_keyed_table(conn, table.qualified, table.key, what_, "CDC needs to apply updates and deletes");
  if (!described) return std::unexpected(described.error());
  table.columns = std::move(described->columns);
  table.key = std::move(described->key);
  auto rights = conn.query("SELECT has_table_privilege(current_user, to_regclass($1), 'SELECT')", {table.qualified});
  if (!rights) return std::unexpected(rights.error());
  if (rights->rows.at(0).at(0) != "t") {
    return fail(ErrorKind::kConfig, fmt::format("{}: the user may not read table {}; GRANT SELECT ON {} TO the user",
                                                what_, table.qualified, table.qualified));
  }
  SKIPPR_TRY(check_replica_identity(conn, table));
  return check_key_unique(conn, table);
}

// merge_by_key keeps one row per key: a primary_key that two rows share would silently collapse them (and a delete
// of one would remove both). Only a primary key or unique index proves it unique; else the user must say so, and the
// snapshot checks it.
Status CdcSource::check_key_unique(PgConnection& conn, CdcTable& table) {
  auto unique = pg_key_is_unique(conn, table.qualified, table.key);
  if (!unique) return std::unexpected(unique.error());
  table.key_backed = *unique;
  if (*unique || options_.primary_key_unique) return ok();
  std::vector<std::string> quoted;
  for (const auto& k : table.key) quoted.push_back(pg_quote_identifier(k));
  return fail(
      ErrorKind::kConfig,
      fmt::format("{}: primary_key ({}) of table {} is backed by no primary key or unique index, so rows "
                  "that share it would collapse into one row in the destination; create one (CREATE UNIQUE "
                  "INDEX ON {} ({})), name the table's real key in primary_key, or, if the values are "
                  "unique, set primary_key_unique: true on the source to have the snapshot check them",
                  what_, fmt::join(table.key, ", "), table.qualified, table.qualified, fmt::join(quoted, ", ")));
}

// With primary_key_unique, the snapshot proves the key unique before its first row is read (inside the same
// snapshot, so the check and the read see the same rows). Later changes cannot be checked: the stream has no
// memory of other rows.
Status CdcSource::check_no_duplicate_keys(PgConnection& conn, const CdcTable& table) {
  std::vector<std::string> quoted, as_text;
  for (const auto& k : table.key) {
    quoted.push_back(pg_quote_identifier(k));
    as_text.push_back(fmt::format("{}::text", quoted.back()));
  }
  auto rows = conn.query(fmt::format("SELECT {}, count(*) FROM {} GROUP BY {} HAVING count(*) > 1 LIMIT 1",
                                     fmt::join(as_text, ", "), table.qualified, fmt::join(quoted, ", ")));
  if (!rows) {
    return fail(
        rows.error().kind == ErrorKind::kConfig ? ErrorKind::kConfig : ErrorKind::kUnavailable,
        fmt::format("{}: checking that primary_key is unique in {}: {}", what_, table.qualified, rows.error().message));
  }
  if (rows->rows.empty()) return ok();
  const auto& row = rows->rows[0];
  std::vector<std::string> values;
  for (size_t i = 0; i < table.key.size(); ++i) values.push_back(row[i].value_or("NULL"));
  return fail(ErrorKind::kBadInput,
              fmt::format("{}: {} rows of table {} share primary_key ({}) = ({}), although primary_key_unique is "
                          "true; they would collapse into one row in the destination. Name columns in primary_key "
                          "that are unique together (or create a unique index), then RESET the pipeline",
                          what_, row[table.key.size()].value_or("?"), table.qualified, fmt::join(table.key, ", "),
                          fmt::join(values, ", ")));
}

// A delete (and a key-changing update) reaches the stream with the old key only when the replica identity holds it.
Status CdcSource::check_replica_identity(PgConnection& conn, const CdcTable& table) {
  const std::string& qualified = table.qualified;
  auto rows = conn.query("SELECT relreplident FROM pg_class WHERE oid = to_regclass($1)", {qualified});
  if (!rows) return std::unexpected(rows.error());
  const std::string identity = rows->rows.at(0).at(0).value_or("");
  if (identity == "f") return ok();
  auto table_key = pg_primary_key(conn, qualified);
  if (!table_key) return std::unexpected(table_key.error());
  auto sorted = [](std::vector<std::string> v) {
    std::ranges::sort(v);
    return v;
  };
  if (identity == "d" && !table_key->empty() && sorted(*table_key) == sorted(table.key)) return ok();
  if (identity == "d" && table_key->empty()) {
    return fail(ErrorKind::kConfig,
                fmt::format("{}: table {} has no primary key, so its default replica identity sends deletes and "
                            "updates without any key; run ALTER TABLE {} REPLICA IDENTITY FULL (or add a primary key)",
                            what_, qualified, qualified));
  }
  return fail(ErrorKind::kConfig,
              fmt::format("{}: deletes on table {} would reach the stream without the key ({}); run ALTER TABLE {} "
                          "REPLICA IDENTITY FULL (or make the pipeline's primary_key the table's primary key)",
                          what_, qualified,
                          identity == "d" ? "the replica identity is the table's primary key, not primary_key "
                                            "of the pipeline"
                                          : "its replica identity is neither the primary key nor FULL",
                          qualified));
}

// The publication holds every table read. A publication this source names by default is created with them, and
// given the tables added to `tables` later; one named in skippr.yml is the user's, and a table missing from it is
// exit 2 with the statement that adds it. Partitioned tables publish their changes under their own name.
Status CdcSource::ensure_publication(PgConnection& conn) {
  std::vector<std::string> all;
  for (const auto& table : tables_) all.push_back(table.qualified);
  const std::string publication = pg_quote_identifier(publication_);
  auto found = conn.query("SELECT 1 FROM pg_publication WHERE pubname = $1", {publication_});
  if (!found) return std::unexpected(found.error());
  if (found->rows.empty()) {
    const std::string create =
        fmt::format("CREATE PUBLICATION {} FOR TABLE {} WITH (publish_via_partition_root = true)", publication,
                    fmt::join(all, ", "));
    if (auto st = conn.execute(create); !st) {
      return fail(st.error().kind == ErrorKind::kUnavailable ? ErrorKind::kUnavailable : ErrorKind::kConfig,
                  fmt::format("{}: creating publication {} for {} failed ({}); create it as the tables' owner: {}",
                              what_, publication_, fmt::join(all, ", "), st.error().message, create));
    }
    return ok();
  }
  // Changes of a partitioned table reach the stream under its own name only with publish_via_partition_root (a
  // default publication of an older version lacks it; one named in skippr.yml is the user's to change).
  auto via_root = conn.query("SELECT pubviaroot FROM pg_publication WHERE pubname = $1", {publication_});
  if (!via_root) return std::unexpected(via_root.error());
  if (via_root->rows.at(0).at(0) != "t") {
    const std::string set = fmt::format("ALTER PUBLICATION {} SET (publish_via_partition_root = true)", publication);
    if (!publication_given_) {
      SKIPPR_TRY(conn.execute(set));
    } else {
      for (const auto& table : tables_) {
        auto kind = conn.query("SELECT relkind::text FROM pg_class WHERE oid = to_regclass($1)", {table.qualified});
        if (!kind) return std::unexpected(kind.error());
        if (!kind->rows.empty() && kind->rows.at(0).at(0) == "p") {
          return fail(ErrorKind::kConfig,
                      fmt::format("{}: table {} is partitioned, and publication {} sends its changes under the "
                                  "partitions' names, which this source would not read; {}",
                                  what_, table.qualified, publication_, set));
        }
      }
    }
  }
  auto has = conn.query("SELECT schemaname, tablename FROM pg_publication_tables WHERE pubname = $1", {publication_});
  if (!has) return std::unexpected(has.error());
  for (const auto& table : tables_) {
    const bool published = std::ranges::any_of(has->rows, [&](const auto& row) {
      return row.at(0).value_or("") == table.schema && row.at(1).value_or("") == table.name;
    });
    if (published) continue;
    const std::string add = fmt::format("ALTER PUBLICATION {} ADD TABLE {}", publication, table.qualified);
    if (!publication_given_) {
      if (auto st = conn.execute(add); st) {
        spdlog::info("{}: table {} added to publication {}", what_, table.qualified, publication_);
        continue;
      }
    }
    return fail(ErrorKind::kConfig, fmt::format("{}: publication {} does not include table {}; {}", what_, publication_,
                                                table.qualified, add));
  }
  return ok();
}

Result<std::optional<uint64_t>> CdcSource::slot_confirmed_flush() {
  auto rows = sql_->query(
      "SELECT confirmed_flush_lsn::text, plugin, database = current_database() FROM pg_replication_slots WHERE "
      "slot_name = $1",
      {slot_});
  if (!rows) return std::unexpected(rows.error());
  if (rows->rows.empty()) return std::optional<uint64_t>();
  const auto& row = rows->rows[0];
  if (row[1] != "pgoutput" || row[2] != "t") {
    return fail(ErrorKind::kConfig, fmt::format("{}: replication slot {} exists but is not a pgoutput slot of this "
                                                "database; choose another name with the `slot` parameter",
                                                what_, slot_));
  }
  return std::optional<uint64_t>(parse_lsn(row[0].value_or("")).value_or(0));
}

// Older versions named the default slot and publication skippr_<pipeline> alone, which two pipelines could share
// ("tp-a" and "tp_a"). A pipeline whose position names its old default slot goes on reading it (the position's slot
// wins, so no change is lost or read twice); its old publication stays too, since the slot's stream checks the
// publication as of each change, and a new one would not exist for the older changes.
void CdcSource::adopt_legacy_names(const CdcPosition& resume) {
  const std::string legacy = cdc_legacy_default_name(pipeline_);
  if (slot_given_ || resume.slot == slot_ || resume.slot != legacy) return;
  spdlog::info(
      "{}: keeps reading replication slot {} (the default name of older versions, named by the pipeline's "
      "position); a RESET moves the pipeline to slot {}",
      what_, legacy, slot_);
  slot_ = legacy;
  if (!publication_given_) publication_ = legacy;
}

// A fresh (or RESET) pipeline gets the new default slot; the old one would hold WAL on the server for ever.
void CdcSource::warn_about_legacy_slot() {
  const std::string legacy = cdc_legacy_default_name(pipeline_);
  if (slot_given_ || legacy == slot_) return;
  auto rows = sql_->query("SELECT 1 FROM pg_replication_slots WHERE slot_name = $1", {legacy});
  if (!rows || rows->rows.empty()) return;
  spdlog::warn(
      "{}: replication slot {} (the name older versions gave pipeline '{}') still exists and keeps WAL on "
      "the server; this pipeline now uses slot {}. If no other pipeline reads {}, drop it: SELECT "
      "pg_drop_replication_slot('{}')",
      what_, legacy, pipeline_, slot_, legacy, legacy);
}

namespace {

constexpr std::string_view kOwnerMarker = "skippr:";  // the comment of a publication: which pipeline reads which slot

struct SlotOwner {
  std::string pipeline, slot;
};

std::optional<SlotOwner> parse_owner(const std::optional<std::string>& comment) {
  if (!comment || !comment->starts_with(kOwnerMarker)) return std::nullopt;
  auto j = nlohmann::json::parse(comment->substr(kOwnerMarker.size()), nullptr, false);
  if (!j.is_object() || !j.contains("pipeline") || !j["pipeline"].is_string() || !j.contains("slot") ||
      !j["slot"].is_string()) {
    return std::nullopt;
  }
  return SlotOwner{j["pipeline"].get<std::string>(), j["slot"].get<std::string>()};
}

}  // namespace

// A slot hands each change to one reader only: a second pipeline on the same slot silently misses what the first
// consumed. Slots take no comment, so each pipeline records "pipeline P reads slot S" on its publication and checks
// that no other pipeline's publication in this database claims its slot.
Status CdcSource::check_slot_owner() {
  auto rows = sql_->query(
      "SELECT pubname, obj_description(oid, 'pg_publication') FROM pg_publication WHERE obj_description(oid, "
      "'pg_publication') LIKE 'skippr:%' OR pubname = $1",
      {publication_});
  if (!rows) return std::unexpected(rows.error());
  std::optional<std::string> my_comment;
  for (const auto& row : rows->rows) {
    if (row[0] == publication_) my_comment = row[1];
    auto owner = parse_owner(row[1]);
    if (!owner || owner->slot != slot_ || owner->pipeline == pipeline_) continue;
    const std::string fix = slot_given_
                                ? fmt::format(
                                      "Remove `slot` from source '{}' to give pipeline '{}' a slot of its own (the "
                                      "default, {}), or name another one",
                                      name_, pipeline_, cdc_default_name(pipeline_))
                                : fmt::format("RESET PIPELINE {} to move it to a slot of its own ({})", pipeline_,
                                              cdc_default_name(pipeline_));
    return fail(ErrorKind::kConfig,
                fmt::format("{}: replication slot {} is already read by pipeline '{}' (recorded on publication {}), "
                            "and pipeline '{}' cannot share it: a slot hands each change to one reader only, so "
                            "both would miss changes. {}",
                            what_, slot_, owner->pipeline, row[0].value_or(""), pipeline_, fix));
  }
  const auto mine = parse_owner(my_comment);
  const bool claim = !my_comment || (mine && mine->pipeline == pipeline_ && mine->slot != slot_);
  if (!claim) return ok();
  const std::string marker =
      fmt::format("{}{}", kOwnerMarker, nlohmann::json{{"pipeline", pipeline_}, {"slot", slot_}}.dump());
  if (auto st = sql_->execute(
          fmt::format("COMMENT ON PUBLICATION {} IS {}", pg_quote_identifier(publication_), pg_quote_literal(marker)));
      !st) {
    // Only the publication's owner may comment: the check above then relies on the other pipelines' records.
    spdlog::info("{}: could not record on publication {} that pipeline '{}' reads slot {}: {}", what_, publication_,
                 pipeline_, slot_, st.error().message);
  }
  return ok();
}

// The slot's confirmed flush only moves after this pipeline committed a position past it. A slot ahead of the
// position was read by someone else (another pipeline naming the same slot, or this pipeline's DATA_DIR restored
// from an older copy): the changes in between are gone for this pipeline, and going on would silently skip them.
Status CdcSource::check_slot_not_ahead(const CdcPosition& resume, uint64_t confirmed) const {
  const uint64_t allowed = resume.snapshot ? resume.consistent_lsn : resume.confirmable_lsn();
  if (confirmed <= allowed) return ok();
  return fail(ErrorKind::kConfig,
              fmt::format("{}: replication slot {} has confirmed changes up to {}, past this pipeline's position {}: "
                          "another reader consumed them (a second pipeline with the same `slot`, or an older copy of "
                          "DATA_DIR), so they cannot be read again. Give every pipeline its own slot (leave `slot` "
                          "unset) and RESET PIPELINE {} to read the table again",
                          what_, slot_, format_lsn(confirmed), format_lsn(allowed), pipeline_));
}

}  // namespace skippr::cdc_detail

#include "support/bigquery_emulator.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <ctime>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>
#include <stdexcept>
#include <thread>

#include "support/emulator_common.h"
#include "support/google_oauth.h"
#include "support/process.h"
#include "support/test_keys.h"

namespace skippr::test {
namespace {
// The patterns below are never destroyed: an execution outlives the request that started it, and one still running
// when the test binary exits must not meet a pattern the exit has already destroyed.

// GoogleSQL's words into DuckDB's, outside literals and names.
std::string rewrite_text(std::string text) {
  if (std::none_of(text.begin(), text.end(), [](unsigned char c) { return std::isalpha(c); })) return text;
  static const auto& kRewrites = *new std::vector<std::pair<std::regex, std::string>>{
      {std::regex(R"(\bINT64\b)", std::regex::icase), "BIGINT"},
      {std::regex(R"(\bFLOAT64\b)", std::regex::icase), "DOUBLE"},
      {std::regex(R"(\bSTRING\b)", std::regex::icase), "VARCHAR"},
      {std::regex(R"(\bBOOL\b)", std::regex::icase), "BOOLEAN"},
      {std::regex(R"(\bBYTES\b)", std::regex::icase), "BLOB"},
      {std::regex(R"(\bTIMESTAMP\b)", std::regex::icase), "TIMESTAMPTZ"},
      {std::regex(R"(\bBIGNUMERIC\b)", std::regex::icase), "DECIMAL(38,0)"},
      {std::regex(R"(\bCOMMIT\s+TRANSACTION\b)", std::regex::icase), "COMMIT"},
      {std::regex(R"(\bCURRENT_TIMESTAMP\(\))", std::regex::icase), "current_timestamp"},
      {std::regex(R"(\*\s+EXCEPT\s*\()", std::regex::icase), "* EXCLUDE ("},
  };
  for (const auto& [pattern, replacement] : kRewrites) text = std::regex_replace(text, pattern, replacement);
  return text;
}

// BigQuery's type names for DuckDB's, as tables.get reports them.
std::string bigquery_type(const std::string& duckdb_type) {
  if (duckdb_type == "BIGINT" || duckdb_type == "INTEGER") return "INTEGER";
  if (duckdb_type == "DOUBLE") return "FLOAT";
  if (duckdb_type == "VARCHAR") return "STRING";
  if (duckdb_type == "BOOLEAN") return "BOOLEAN";
  if (duckdb_type == "BLOB") return "BYTES";
  if (duckdb_type == "TIMESTAMP WITH TIME ZONE") return "TIMESTAMP";
  if (duckdb_type.starts_with("DECIMAL")) return "BIGNUMERIC";
  return duckdb_type;  // DATE, JSON
}

std::string duckdb_type(const std::string& bigquery) {
  static const std::map<std::string, std::string> kTypes = {
      {"INTEGER", "BIGINT"},        {"INT64", "BIGINT"},    {"FLOAT", "DOUBLE"}, {"FLOAT64", "DOUBLE"},
      {"STRING", "VARCHAR"},        {"BOOLEAN", "BOOLEAN"}, {"BOOL", "BOOLEAN"}, {"BYTES", "BLOB"},
      {"TIMESTAMP", "TIMESTAMPTZ"}, {"DATE", "DATE"},       {"JSON", "JSON"},    {"BIGNUMERIC", "DECIMAL(38,0)"}};
  auto it = kTypes.find(bigquery);
  return it == kTypes.end() ? "VARCHAR" : it->second;
}

}  // namespace

std::string bigquery_to_duckdb_sql(const std::string& googlesql, const std::string& project) {
  std::string out;
  const auto pieces = sql_pieces(googlesql);
  for (size_t i = 0; i < pieces.size(); ++i) {
    const SqlPiece& p = pieces[i];
    // `project`.`dataset`.`table`: the project part and its dot go.
    if (p.kind == SqlPiece::kBackticked && p.text == project && i + 1 < pieces.size() &&
        pieces[i + 1].kind == SqlPiece::kText && pieces[i + 1].text.starts_with('.')) {
      out += rewrite_text(pieces[++i].text.substr(1));
      continue;
    }
    if (p.kind == SqlPiece::kLiteral || p.kind == SqlPiece::kQuoted) {
      out += duckdb_quoted(p.text, '\'');  // GoogleSQL's "..." is a string too
      // GoogleSQL's LIKE escapes with a backslash and takes no ESCAPE clause; DuckDB's escapes with nothing unless
      // told. A pattern that names its own ESCAPE then has two, which DuckDB refuses as BigQuery would.
      static const auto& kLikeBefore = *new std::regex(R"(\bLIKE\s*$)", std::regex::icase);
      if (i > 0 && pieces[i - 1].kind == SqlPiece::kText && std::regex_search(pieces[i - 1].text, kLikeBefore)) {
        out += " ESCAPE '\\'";
      }
    } else if (p.kind == SqlPiece::kBackticked) {
      // `project.dataset.table` (or `dataset.table`, or one part): a dataset is a schema of the one database.
      std::vector<std::string> parts;
      for (size_t at = 0; at <= p.text.size();) {
        const size_t dot = std::min(p.text.find('.', at), p.text.size());
        parts.push_back(p.text.substr(at, dot - at));
        at = dot + 1;
      }
      if (parts.size() == 3 && parts[0] == project) parts.erase(parts.begin());
      for (size_t i = 0; i < parts.size(); ++i) out += (i ? "." : "") + duckdb_quoted(parts[i], '"');
    } else {
      out += rewrite_text(p.text);
    }
  }
  return out;
}

namespace {

// DuckDB's errors for a write that met another transaction's: the row changed since this snapshot, or is being
// changed by a transaction still open.
bool is_conflict(const std::string& error) { return upper(error).find("CONFLICT") != std::string::npos; }

// The table a DML statement writes (after UPDATE, INSERT INTO, MERGE INTO, DELETE FROM, TRUNCATE TABLE), as
// project.dataset.table; empty for any other statement.
std::string written_table(const std::string& statement) {
  static const std::regex& kHead = *new std::regex(
      R"(\s*(?:UPDATE|INSERT\s+INTO|MERGE\s+INTO|MERGE|DELETE\s+FROM|DELETE|TRUNCATE\s+TABLE)\s+([^\s(]+))",
      std::regex::icase);
  std::smatch match;
  if (!std::regex_search(statement.begin(), statement.end(), match, kHead, std::regex_constants::match_continuous)) {
    return "";
  }
  std::string name = match[1];
  std::erase(name, '`');
  return name;
}

// A mutating DML statement: UPDATE, DELETE, MERGE, TRUNCATE (BigQuery's word; an INSERT only appends).
bool mutates(const std::string& statement) {
  const size_t first = statement.find_first_not_of(" \n\t\r");
  return upper(statement.substr(first, 6)) != "INSERT" && !written_table(statement).empty();
}

// BigQuery's rule for mutating DML, table by table (DuckDB's own conflicts are per row and column, more lenient): one
// transaction at a time mutates a table, and one whose snapshot predates another's committed mutation of it may not
// mutate it; such a transaction is cancelled. A mutating statement outside a transaction waits for the transaction
// mutating its table instead (BigQuery queues it).
class TableMutations {
 public:
  // A transaction's snapshot, taken before its database snapshot (a commit in between counts as after it: a
  // transaction is cancelled when unsure, never let through).
  uint64_t snapshot() {
    std::lock_guard lock(mutex_);
    return clock_;
  }
  // In a transaction: false when it must be cancelled.
  bool try_mutate(const std::string& table, uint64_t owner, uint64_t snapshot) {
    std::lock_guard lock(mutex_);
    if (auto held = held_.find(table); held != held_.end() && held->second != owner) return false;
    if (auto last = committed_.find(table); last != committed_.end() && last->second > snapshot) return false;
    held_[table] = owner;
    return true;
  }
  // Outside a transaction: queued behind the transaction mutating `table`.
  void wait_then_mutate(const std::string& table, uint64_t owner) {
    std::unique_lock lock(mutex_);
    freed_.wait(lock, [&] {
      auto held = held_.find(table);
      return held == held_.end() || held->second == owner;
    });
    held_[table] = owner;
  }
  // After the database's commit (or rollback) of `owner`'s changes.
  void end(uint64_t owner, bool committed) {
    std::lock_guard lock(mutex_);
    ++clock_;
    for (auto it = held_.begin(); it != held_.end();) {
      if (it->second != owner) {
        ++it;
        continue;
      }
      if (committed) committed_[it->first] = clock_;
      it = held_.erase(it);
    }
    freed_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable freed_;
  uint64_t clock_ = 0;
  std::map<std::string, uint64_t> held_;       // table -> the transaction (or statement) mutating it
  std::map<std::string, uint64_t> committed_;  // table -> the clock of the last committed mutation
};

std::string aborted(const std::string& table) {
  return fmt::format("Transaction is aborted due to concurrent update against table {}.", table);
}

// How a script or a load ended: empty `error` when it succeeded.
struct JobEnd {
  std::string error;
  std::string reason = "invalidQuery";
  EmulatorDb::Outcome last;  // the last statement's result

  static JobEnd failed(std::string error, std::string reason = "invalidQuery") {
    JobEnd end;
    end.error = std::move(error);
    end.reason = std::move(reason);
    return end;
  }
};

}  // namespace

struct BigQueryEmulator::Impl {
  struct Job {
    nlohmann::json resource;
    bool done = false;
  };
  struct QueryRun {
    bool done = false;
    JobEnd end;
  };

  TempDir dir;
  std::optional<GoogleOAuthAccount> account;
  httplib::Server server;
  EmulatorDb db;
  std::mutex& mutex = db.mutex();  // the state below and the emulator's own connection (metadata reads)
  std::condition_variable finished;
  std::map<std::string, Job> jobs;  // id -> job resource
  std::set<std::string> running;    // ids reported RUNNING until read once
  std::vector<BigQueryJobSeen> seen;
  std::atomic<bool> answer_running{false};
  std::atomic<int> issued{0};
  BigQueryFaults faults;                        // what is left of them
  std::set<std::string> unseen_after_conflict;  // ids whose next jobs.get answers 404
  std::string slow_text;                        // statements containing it (upper-case) wait slow_ms before they run
  std::atomic<int> slow_ms{0};
  TableMutations mutations;
  std::atomic<uint64_t> next_owner{1};
  Executions executions;  // last: waited for before anything above goes

  // 403 rateLimitExceeded instead of inserting the job, as BigQuery throttles jobs.insert: true when it answered.
  bool rate_limited(httplib::Response& res) {
    if (faults.rate_limited_inserts <= 0) return false;
    --faults.rate_limited_inserts;
    reply(res, 403,
          google_api_error(403, "PERMISSION_DENIED", "rateLimitExceeded",
                           "Exceeded rate limits: too many api requests per user per method for this user_method."));
    return true;
  }

  static void reply(httplib::Response& res, int status, const nlohmann::json& body) {
    res.status = status;
    res.set_content(body.dump(), "application/json");
  }

  bool authorized(const httplib::Request& req, httplib::Response& res) {
    if (account->authorized(req.get_header_value("Authorization"))) return true;
    reply(res, 401, GoogleOAuthAccount::unauthenticated());
    return false;
  }

  bool dataset_exists(const std::string& dataset) {
    auto out = db.run(fmt::format("SELECT 1 FROM duckdb_schemas() WHERE schema_name = '{}'", dataset));
    return out.ok && !out.rows.empty();
  }

  void wait_if_slow(const std::string& statement) {
    const int delay = slow_ms.load();
    if (delay <= 0) return;
    bool slow;
    {
      std::lock_guard lock(mutex);
      slow = upper(statement).find(slow_text) != std::string::npos;
    }
    if (slow) std::this_thread::sleep_for(std::chrono::milliseconds(delay));
  }

  // A statement outside a transaction that meets another's open write waits for it, as BigQuery queues conflicting
  // mutating DML, then runs on what that one committed.
  static EmulatorDb::Outcome run_queued(EmulatorDb::Session& session, const std::string& sql) {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::minutes(5);
    while (true) {
      auto out = session.run(sql);
      if (out.ok || !is_conflict(out.error) || std::chrono::steady_clock::now() > give_up) return out;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  // Runs a GoogleSQL script on a connection of its own, as a job does.
  JobEnd run_script(const std::string& sql) {
    std::vector<std::string> statements;
    try {
      statements = split_statements(sql);
    } catch (const std::exception& e) {
      return JobEnd::failed(std::string("Syntax error: ") + e.what());
    }
    EmulatorDb::Session session(db);
    const uint64_t owner = next_owner++;
    std::optional<uint64_t> snapshot;  // while a transaction is open
    std::string written;               // the last table it wrote
    auto close = [&](const char* how) {
      session.run(how);
      mutations.end(owner, std::string_view(how) == "COMMIT");
      snapshot.reset();
    };
    JobEnd end;
    for (const auto& statement : statements) {
      wait_if_slow(statement);
      const std::string head = upper(statement.substr(statement.find_first_not_of(" \n\t\r"), 5));
      if (head == "COMMI" && snapshot) {
        auto out = session.run("COMMIT");
        if (!out.ok) {
          close("ROLLBACK");
          return JobEnd::failed(is_conflict(out.error) ? aborted(written) : out.error);
        }
        mutations.end(owner, true);
        snapshot.reset();
        continue;
      }
      if (head == "BEGIN") snapshot = mutations.snapshot();
      if (std::string table = written_table(statement); !table.empty()) written = table;
      const std::string mutated = mutates(statement) ? upper(written) : "";
      // BigQuery cancels a transaction that meets a concurrent update: the whole job fails.
      if (snapshot && !mutated.empty() && !mutations.try_mutate(mutated, owner, *snapshot)) {
        close("ROLLBACK");
        return JobEnd::failed(aborted(written));
      }
      if (!snapshot && !mutated.empty()) mutations.wait_then_mutate(mutated, owner);
      const std::string duck = bigquery_to_duckdb_sql(statement, kProject);
      auto out = snapshot ? session.run(duck) : run_queued(session, duck);
      if (!snapshot && !mutated.empty()) mutations.end(owner, out.ok);
      if (!out.ok) {
        if (!snapshot) return JobEnd::failed(out.error);
        close("ROLLBACK");
        return JobEnd::failed(is_conflict(out.error) ? aborted(written) : out.error);
      }
      end.last = std::move(out);
    }
    if (snapshot) close("ROLLBACK");
    return end;
  }

  // Loads NDJSON rows into dataset.table as the load configuration says.
  JobEnd load(const nlohmann::json& load, const std::string& data) {
    const auto& destination = load["destinationTable"];
    const std::string table =
        fmt::format("\"{}\".\"{}\"", destination.value("datasetId", ""), destination.value("tableId", ""));
    std::vector<std::string> definitions, columns, conversions;
    for (const auto& f : load["schema"]["fields"]) {
      const std::string name = f.value("name", ""), type = f.value("type", "STRING");
      definitions.push_back(fmt::format("{} {}", duckdb_quoted(name, '"'), duckdb_type(type)));
      // BYTES travel in base64, TIMESTAMP and JSON as JSON values: read as text, converted here.
      const std::string read_as = type == "JSON"                           ? "JSON"
                                  : type == "BYTES" || type == "TIMESTAMP" ? "VARCHAR"
                                                                           : duckdb_type(type);
      columns.push_back(fmt::format("{}: '{}'", duckdb_quoted(name, '\''), read_as));
      conversions.push_back(type == "BYTES"       ? fmt::format("from_base64({})", duckdb_quoted(name, '"'))
                            : type == "TIMESTAMP" ? fmt::format("CAST({} AS TIMESTAMPTZ)", duckdb_quoted(name, '"'))
                                                  : duckdb_quoted(name, '"'));
    }
    const auto file = dir / fmt::format("load-{}.jsonl", ++issued);
    write_text(file, data);
    EmulatorDb::Session session(db);
    std::string error;
    if (load.value("writeDisposition", "WRITE_APPEND") == "WRITE_TRUNCATE") {
      error = run_queued(session, fmt::format("DROP TABLE IF EXISTS {}", table)).error;
    }
    if (error.empty()) {
      error =
          run_queued(session, fmt::format("CREATE TABLE IF NOT EXISTS {} ({})", table, fmt::join(definitions, ", ")))
              .error;
    }
    if (error.empty() && data.find_first_not_of("\r\n ") != std::string::npos) {
      error =
          run_queued(session, fmt::format("INSERT INTO {} SELECT {} FROM read_json('{}', format = "
                                          "'newline_delimited', columns = {{{}}})",
                                          table, fmt::join(conversions, ", "), file.string(), fmt::join(columns, ", ")))
              .error;
    }
    std::filesystem::remove(file);
    return JobEnd::failed(error);
  }

  // The job ends: DONE, with its error if any (under the lock).
  void finish(const std::string& id, const JobEnd& end) {
    Job& job = jobs[id];
    job.resource["status"] = {{"state", "DONE"}};
    if (!end.error.empty()) {
      job.resource["status"]["errorResult"] = {{"reason", end.reason}, {"message", end.error}};
      job.resource["status"]["errors"] = {{{"reason", end.reason}, {"message", end.error}}};
    }
    job.done = true;
    finished.notify_all();
  }

  // jobs.insert: the job runs on its own thread, on after this answer and after its client; the answer waits a
  // moment for it, as BigQuery's does, and is the job resource, RUNNING or DONE.
  void insert_job(std::unique_lock<std::mutex>& lock, const nlohmann::json& job, std::string data, bool is_load,
                  httplib::Response& res) {
    const std::string id = job["jobReference"].value("jobId", "");
    const std::string location = job["jobReference"].value("location", "US");
    if (jobs.count(id)) {
      if (faults.not_found_after_conflict > 0) {
        --faults.not_found_after_conflict;
        unseen_after_conflict.insert(id);
      }
      seen.push_back({id, is_load ? "load" : "query", true, job.dump()});
      reply(res, 409,
            google_api_error(409, "ALREADY_EXISTS", "duplicate",
                             fmt::format("Already Exists: Job {}:{}.{}", kProject, location, id)));
      return;
    }
    seen.push_back({id, is_load ? "load" : "query", false, job.dump()});
    nlohmann::json resource = job;
    resource["kind"] = "bigquery#job";
    resource["id"] = fmt::format("{}:{}.{}", kProject, location, id);
    resource["status"] = {{"state", "RUNNING"}};
    jobs[id] = {resource, false};
    if (faults.failed_jobs > 0) {
      // A job that fails on BigQuery's side ends with a transient reason and changes nothing.
      --faults.failed_jobs;
      finish(id, JobEnd::failed("An internal error occurred and the request could not be completed.",
                                faults.failed_job_reason));
    } else {
      executions.start([this, id, job, data = std::move(data), is_load] {
        JobEnd end = is_load ? load(job["configuration"]["load"], data)
                             : run_script(job["configuration"]["query"].value("query", ""));
        std::lock_guard done_lock(mutex);
        finish(id, end);
      });
    }
    finished.wait_for(lock, std::chrono::seconds(1), [&] { return jobs[id].done; });
    nlohmann::json answer = jobs[id].resource;
    if (answer_running) {
      running.insert(id);
      answer["status"] = {{"state", "RUNNING"}};
    }
    reply(res, 200, answer);
  }

  // jobs.query: the query runs as a job does; the answer waits up to timeoutMs (BigQuery's default: 10 s) for it.
  void run_query(const httplib::Request& req, httplib::Response& res) {
    std::unique_lock lock(mutex);
    if (!authorized(req, res)) return;
    const auto body = nlohmann::json::parse(req.body, nullptr, false);
    const std::string sql = body.is_object() ? body.value("query", "") : "";
    const int timeout_ms = body.is_object() ? body.value("timeoutMs", 10000) : 10000;
    auto run = std::make_shared<QueryRun>();
    executions.start([this, run, sql] {
      JobEnd end = run_script(sql);
      std::lock_guard done_lock(mutex);
      run->end = std::move(end);
      run->done = true;
      finished.notify_all();
    });
    finished.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return run->done; });
    if (!run->done) {
      reply(res, 200, {{"kind", "bigquery#queryResponse"}, {"jobComplete", false}});
      return;
    }
    if (!run->end.error.empty()) {
      reply(res, 400, google_api_error(400, "INVALID_ARGUMENT", "invalidQuery", run->end.error));
      return;
    }
    const EmulatorDb::Outcome& last = run->end.last;
    nlohmann::json fields = nlohmann::json::array(), rows = nlohmann::json::array();
    for (const auto& name : last.names) fields.push_back({{"name", name}, {"type", "STRING"}});
    for (const auto& row : last.rows) {
      nlohmann::json cells = nlohmann::json::array();
      for (const auto& v : row) cells.push_back({{"v", v}});
      rows.push_back({{"f", cells}});
    }
    reply(res, 200,
          {{"kind", "bigquery#queryResponse"},
           {"schema", {{"fields", fields}}},
           {"rows", rows},
           {"totalRows", std::to_string(last.rows.size())},
           {"jobComplete", true}});
  }

  void routes() {
    server.Post("/token", [this](const httplib::Request& req, httplib::Response& res) {
      const auto answer = account->grant(req.body);
      reply(res, answer.status, answer.body);
    });
    server.Get(R"(/bigquery/v2/projects/([^/]+)/datasets/([^/]+))", [this](const httplib::Request& req,
                                                                           httplib::Response& res) {
      std::lock_guard lock(mutex);
      if (!authorized(req, res)) return;
      const std::string dataset = req.matches[2];
      if (req.matches[1] != kProject || !dataset_exists(dataset)) {
        reply(res, 404,
              google_api_error(404, "NOT_FOUND", "notFound",
                               fmt::format("Not found: Dataset {}:{}", std::string(req.matches[1]), dataset)));
        return;
      }
      reply(res, 200,
            {{"kind", "bigquery#dataset"},
             {"id", fmt::format("{}:{}", kProject, dataset)},
             {"datasetReference", {{"projectId", kProject}, {"datasetId", dataset}}},
             {"location", "US"}});
    });
    server.Get(R"(/bigquery/v2/projects/([^/]+)/datasets/([^/]+)/tables)", [this](const httplib::Request& req,
                                                                                  httplib::Response& res) {
      std::lock_guard lock(mutex);
      if (!authorized(req, res)) return;
      // Pages of two, so a client must follow nextPageToken.
      auto out =
          db.run(fmt::format("SELECT table_name FROM information_schema.tables WHERE table_schema "
                             "= '{}' ORDER BY table_name",
                             std::string(req.matches[2])));
      const size_t first = req.has_param("pageToken") ? std::stoul(req.get_param_value("pageToken")) : 0;
      nlohmann::json tables = nlohmann::json::array();
      for (size_t i = first; i < out.rows.size() && i < first + 2; ++i) {
        tables.push_back(
            {{"tableReference",
              {{"projectId", kProject}, {"datasetId", std::string(req.matches[2])}, {"tableId", out.rows[i][0]}}}});
      }
      nlohmann::json body = {{"kind", "bigquery#tableList"}, {"tables", tables}};
      if (first + 2 < out.rows.size()) body["nextPageToken"] = std::to_string(first + 2);
      reply(res, 200, body);
    });
    server.Get(R"(/bigquery/v2/projects/([^/]+)/datasets/([^/]+)/tables/([^/]+))", [this](const httplib::Request& req,
                                                                                          httplib::Response& res) {
      std::lock_guard lock(mutex);
      if (!authorized(req, res)) return;
      auto out =
          db.run(fmt::format("SELECT column_name, data_type FROM information_schema.columns WHERE "
                             "table_schema = '{}' AND table_name = '{}' ORDER BY ordinal_position",
                             std::string(req.matches[2]), std::string(req.matches[3])));
      if (!out.ok || out.rows.empty()) {
        reply(res, 404,
              google_api_error(404, "NOT_FOUND", "notFound",
                               fmt::format("Not found: Table {}:{}.{}", kProject, std::string(req.matches[2]),
                                           std::string(req.matches[3]))));
        return;
      }
      nlohmann::json fields = nlohmann::json::array();
      for (const auto& row : out.rows) {
        fields.push_back({{"name", row[0]}, {"type", bigquery_type(row[1].get<std::string>())}, {"mode", "NULLABLE"}});
      }
      reply(res, 200, {{"kind", "bigquery#table"}, {"schema", {{"fields", fields}}}});
    });
    server.Post(R"(/bigquery/v2/projects/([^/]+)/queries)",
                [this](const httplib::Request& req, httplib::Response& res) { run_query(req, res); });
    server.Post(R"(/bigquery/v2/projects/([^/]+)/jobs)", [this](const httplib::Request& req, httplib::Response& res) {
      std::unique_lock lock(mutex);
      if (!authorized(req, res)) return;
      const auto job = nlohmann::json::parse(req.body, nullptr, false);
      if (!job.is_object() || !job.contains("configuration") || !job["configuration"].contains("query")) {
        reply(res, 400,
              google_api_error(400, "INVALID_ARGUMENT", "invalid", "Job configuration must contain a query."));
        return;
      }
      if (rate_limited(res)) return;
      insert_job(lock, job, "", false, res);
    });
    server.Post(
        R"(/upload/bigquery/v2/projects/([^/]+)/jobs)", [this](const httplib::Request& req, httplib::Response& res) {
          std::unique_lock lock(mutex);
          if (!authorized(req, res)) return;
          // multipart/related: the job resource (JSON), then the data.
          const std::string type = req.get_header_value("Content-Type");
          const size_t at = type.find("boundary=");
          if (req.get_param_value("uploadType") != "multipart" || at == std::string::npos) {
            reply(res, 400, google_api_error(400, "INVALID_ARGUMENT", "invalid", "Expected a multipart upload."));
            return;
          }
          const std::string boundary = "--" + type.substr(at + 9);
          std::vector<std::string> parts;
          for (size_t start = req.body.find(boundary); start != std::string::npos;) {
            const size_t next = req.body.find(boundary, start + boundary.size());
            if (next == std::string::npos) break;
            std::string part = req.body.substr(start + boundary.size(), next - start - boundary.size());
            const size_t header_end = part.find("\r\n\r\n");
            part = header_end == std::string::npos ? "" : part.substr(header_end + 4);
            if (part.ends_with("\r\n")) part.resize(part.size() - 2);
            parts.push_back(std::move(part));
            start = next;
          }
          const auto job = parts.size() == 2 ? nlohmann::json::parse(parts[0], nullptr, false) : nlohmann::json();
          if (!job.is_object() || !job.contains("configuration") || !job["configuration"].contains("load")) {
            reply(res, 400, google_api_error(400, "INVALID_ARGUMENT", "invalid", "Expected a load job and its data."));
            return;
          }
          if (rate_limited(res)) return;
          insert_job(lock, job, std::move(parts[1]), true, res);
        });
    server.Get(
        R"(/bigquery/v2/projects/([^/]+)/jobs/([^/?]+))", [this](const httplib::Request& req, httplib::Response& res) {
          std::lock_guard lock(mutex);
          if (!authorized(req, res)) return;
          auto it = jobs.find(req.matches[2]);
          if (it == jobs.end() || unseen_after_conflict.erase(req.matches[2])) {
            reply(res, 404,
                  google_api_error(404, "NOT_FOUND", "notFound",
                                   fmt::format("Not found: Job {}:US.{}", kProject, std::string(req.matches[2]))));
            return;
          }
          nlohmann::json resource = it->second.resource;
          if (running.erase(it->first)) resource["status"] = {{"state", "RUNNING"}};
          reply(res, 200, resource);
        });
  }
};

BigQueryEmulator::BigQueryEmulator() : impl_(std::make_unique<Impl>()) {
  port_ = impl_->server.bind_to_any_port("127.0.0.1");
  impl_->account.emplace(impl_->dir.path(), kProject, "loader@skippr-test.iam.gserviceaccount.com",
                         endpoint() + "/token", "https://www.googleapis.com/auth/bigquery");
  impl_->db.must(fmt::format("CREATE SCHEMA \"{}\"", kDataset));
  impl_->routes();
  thread_ = std::thread([this] { impl_->server.listen_after_bind(); });
  while (!impl_->server.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

BigQueryEmulator::~BigQueryEmulator() {
  impl_->server.stop();
  if (thread_.joinable()) thread_.join();
  impl_->executions.wait_all();
}

const std::filesystem::path& BigQueryEmulator::credentials_file() const { return impl_->account->credentials_file(); }
const std::filesystem::path& BigQueryEmulator::stranger_credentials_file() const {
  return impl_->account->stranger_credentials_file();
}
void BigQueryEmulator::answer_running(bool on) { impl_->answer_running = on; }

void BigQueryEmulator::slow_statements(const std::string& containing, std::chrono::milliseconds delay) {
  {
    std::lock_guard lock(impl_->mutex);
    impl_->slow_text = upper(containing);
  }
  impl_->slow_ms = static_cast<int>(delay.count());
}

std::vector<std::string> BigQueryEmulator::running_jobs() const {
  std::lock_guard lock(impl_->mutex);
  std::vector<std::string> ids;
  for (const auto& [id, job] : impl_->jobs) {
    if (!job.done) ids.push_back(id);
  }
  return ids;
}
void BigQueryEmulator::inject(const BigQueryFaults& faults) {
  std::lock_guard lock(impl_->mutex);
  impl_->faults = faults;
}
BigQueryFaults BigQueryEmulator::faults_left() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->faults;
}

std::vector<std::vector<std::string>> BigQueryEmulator::query(const std::string& duckdb_sql) {
  return impl_->db.text_rows(duckdb_sql);
}

std::vector<BigQueryJobSeen> BigQueryEmulator::jobs() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->seen;
}

BigQueryEmulator& SharedBigQuery() {
  static BigQueryEmulator emulator;
  return emulator;
}

std::string bigquery_sink(const std::string& endpoint, const std::string& table, const std::string& extra) {
  return fmt::format(
      "BigQuery: {{ project: {}, dataset: {}, table: \"{}\", credentials_file: \"{}\", endpoint: \"{}\"{} }}",
      BigQueryEmulator::kProject, BigQueryEmulator::kDataset, table, SharedBigQuery().credentials_file().string(),
      endpoint, extra);
}

}  // namespace skippr::test

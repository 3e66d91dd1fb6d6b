#include "sinks/duckdb/motherduck_sink.h"

#include <fmt/format.h>

#include "clients/duckdb/duckdb_client.h"
#include "core/redact.h"
#include "sinks/duckdb/duckdb_sink.h"

namespace skippr {
namespace {

// DuckDB's options that keep the extension local: where to look, and no download.
std::vector<std::pair<std::string, std::string>> extension_settings(const std::string& extension_directory) {
  std::vector<std::pair<std::string, std::string>> settings = {{"autoinstall_known_extensions", "false"}};
  if (!extension_directory.empty()) settings.emplace_back("extension_directory", extension_directory);
  return settings;
}

// Loads the extension into an in-memory database: kConfig, naming where DuckDB looked, when it is not there.
Status check_extension(const std::string& sink, const std::string& extension_directory) {
  auto db = DuckDbDatabase::open(":memory:", extension_settings(extension_directory));
  if (!db) return fail(ErrorKind::kInternal, fmt::format("sink '{}': DuckDB: {}", sink, db.error().message));
  auto conn = DuckDbConnection::connect(*db);
  if (!conn) return fail(ErrorKind::kInternal, fmt::format("sink '{}': DuckDB: {}", sink, conn.error().message));
  auto loaded = conn->execute("LOAD motherduck");
  if (loaded) return ok();
  // DuckDB's first line names the path it looked at; the rest advises INSTALL, which cannot work here.
  std::string looked = loaded.error().message.substr(0, loaded.error().message.find('\n'));
  if (const auto colon = looked.find("Error: "); colon != std::string::npos) looked = looked.substr(colon + 7);
  if (!looked.empty() && looked.back() == '.') looked.pop_back();
  auto version = conn->query("SELECT version()");
  const std::string duckdb_version =
      version && !version->rows.empty() && !version->rows[0].empty() ? version->rows[0][0].value_or("") : "";
  return fail(ErrorKind::kConfig,
              fmt::format("sink '{}': MotherDuck needs DuckDB's motherduck extension, and it is not installed here "
                          "({}). skipprd never downloads extensions: on a machine with network, run INSTALL "
                          "motherduck in DuckDB {} and copy motherduck.duckdb_extension to that path, or set "
                          "extension_directory to a folder that has it",
                          sink, looked, duckdb_version));
}

}  // namespace

ConnectorSpec motherduck_sink_spec() {
  ConnectorSpec spec;
  spec.type_name = "MotherDuck";
  spec.is_source = false;
  spec.summary = "a MotherDuck database (the DuckDB sink on md:, through DuckDB's motherduck extension)";
  spec.guarantee = Guarantee::kExactlyOnce;
  spec.lands_streams = true;  // the DuckDB sink's landing: all of a batch's tables in one transaction
  spec.params = {
      {"database", ParamType::kString, true, nullptr, "the MotherDuck database (md:<database>)"},
      {"token", ParamType::kString, true, nullptr, "the MotherDuck access token (a secret: give it as ${VAR})"},
      {"table", ParamType::kString, false, nullptr,
       "the target table; created from the first batch's schema. With a source of several streams, {stream} in it is "
       "each stream's name (the default then: {stream})"},
      {"extension_directory", ParamType::kPath, false, nullptr,
       "where DuckDB finds motherduck.duckdb_extension (<dir>/<duckdb version>/<platform>/); default "
       "~/.duckdb/extensions"},
  };
  spec.make_sink = [](const ConnectorContext& ctx) -> Result<std::unique_ptr<Sink>> {
    SKIPPR_TRY(check_duckdb_landing(ctx));
    const std::string database = ctx.params.value("database", std::string());
    const std::string token = ctx.params.value("token", std::string());
    const std::string extension_directory = ctx.params.value("extension_directory", std::string());
    if (database.empty() || token.empty()) {
      return fail(ErrorKind::kConfig, fmt::format("sink '{}': MotherDuck needs database and token", ctx.name));
    }
    if (database.find_first_of("?:/") != std::string::npos) {
      return fail(ErrorKind::kConfig,
                  fmt::format("sink '{}': database '{}' must be a MotherDuck database name (without md: or options)",
                              ctx.name, database));
    }
    // Checked before the extension, so a table mistake is reported on a machine without it too.
    auto tables = StreamTables::make(fmt::format("sink '{}'", ctx.name), "table",
                                     StreamTables::given(ctx.params, "table"), ctx.source_streams);
    if (!tables) return std::unexpected(tables.error());
    if (auto st = check_extension(ctx.name, extension_directory); !st) {
      return fail(st.error().kind, redact(st.error().message, {token}));
    }
    DuckDbTarget target{"md:" + database, extension_settings(extension_directory), {token}, false};
    target.settings.emplace_back("motherduck_token", token);
    return make_duckdb_sink(std::move(target), std::move(*tables), ctx);
  };
  return spec;
}

}  // namespace skippr

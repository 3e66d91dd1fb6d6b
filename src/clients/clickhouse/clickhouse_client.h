// ClickHouse over its HTTP interface (port 8123): one query per request through the shared HTTP client, with the
// server's "Code: N" errors typed by what a retry can change. Basic auth, so the password never rides in a URL that
// a message could quote.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.h"

namespace skippr {

struct ClickHouseConfig {
  std::string url;  // http(s)://host:port, the server's HTTP interface
  std::string user = "default";
  std::string password;  // a secret: sent in the Authorization header only
  std::string where;     // names the connector in messages ("sink 'ch'")
  double timeout_seconds = 300;
};

using ClickHouseSettings = std::vector<std::pair<std::string, std::string>>;

class ClickHouseClient {
 public:
  explicit ClickHouseClient(ClickHouseConfig config) : config_(std::move(config)) {}

  // Runs `sql` (sent as the request body) and returns the answer's text (a SELECT's rows in the format it names).
  Result<std::string> query(std::string_view sql, const ClickHouseSettings& settings = {}) const;

  // Runs `insert_sql` ("INSERT INTO t (a, b) FORMAT RowBinary", in the URL) with `data` as the body. The server
  // answers only once the insert is done (wait_end_of_query), so 200 means it is stored; any other failure after
  // sending is an unknown outcome: the caller checks before it sends again.
  Status insert(std::string_view insert_sql, std::string_view data, const ClickHouseSettings& settings = {}) const;

  const std::string& where() const { return config_.where; }

 private:
  Result<std::string> send(std::string_view url_query, std::string_view body, bool is_insert) const;
  ClickHouseConfig config_;
};

// ClickHouse's own quoting: 'text' with \ and ' escaped, and `name` for identifiers.
std::string ch_quote_literal(std::string_view text);
std::string ch_quote_identifier(std::string_view name);

}  // namespace skippr

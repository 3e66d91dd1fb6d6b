// Test support: an emulator of the Google Analytics Data API (GA4, v1beta) as the GoogleAnalytics source calls it, in
// the test process on a free loopback port. What it implements, as the API reference defines it:
// - the service account's OAuth token endpoint (tests/support/google_oauth: JWT RS256 checked, scope
//   analytics.readonly) and Bearer tokens on every call (401 UNAUTHENTICATED otherwise);
// - POST /v1beta/properties/{id}:runReport: dateRanges (one; YYYY-MM-DD, today, yesterday, NdaysAgo), dimensions
//   and metrics by name (an unknown one is 400 INVALID_ARGUMENT naming it), orderBys by dimension, limit / offset
//   (int64 as JSON strings or numbers; limit at most 250000), keepEmptyRows, returnPropertyQuota; the answer's
//   dimensionHeaders, metricHeaders with their types, rows of string values (date as YYYYMMDD), rowCount (both left
//   out when there is no row), metadata, propertyQuota;
// - a property the account cannot read: 403 PERMISSION_DENIED; quota: each report costs tokens of the property's
//   day, and once they are spent 429 RESOURCE_EXHAUSTED "... per day" until the next day; throttle_next(n) answers
//   n reports with the hourly 429 that goes away.
// The data is deterministic, one row per date, country and device, and behaves as GA4's does: a day's figures grow
// for three days after it (late hits), a country-device pair shows up only from the second day, no day after "today"
// has data, and today's figures change from one call to the next. Aggregation over dimensions left out of a request:
// sums for sessions and revenue, session-weighted means for the rates. Not covered: several date ranges, filters,
// metric aggregations, cohorts, pivots, sampling and thresholding. Lost answers come from tests/support/fault_proxy
// in front of it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace skippr::test {

class Ga4Emulator {
 public:
  Ga4Emulator();
  ~Ga4Emulator();
  Ga4Emulator(const Ga4Emulator&) = delete;
  Ga4Emulator& operator=(const Ga4Emulator&) = delete;

  static constexpr const char* kProperty = "412345678";
  static constexpr int64_t kTokensPerReport = 10;

  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  const std::filesystem::path& credentials_file() const;
  const std::filesystem::path& stranger_credentials_file() const;

  // The emulated today (YYYY-MM-DD); a new day renews the property's daily tokens.
  void set_today(const std::string& day);
  void set_daily_tokens(int64_t tokens);
  void throttle_next(int reports);

  // What GA4 holds now, one row per date, country and device (dates from..to inclusive), in that order.
  struct Row {
    std::string date;  // YYYY-MM-DD
    std::string country;
    std::string device;
    int64_t sessions = 0;
    double engagement_rate = 0;
    double purchase_revenue = 0;
    double average_session_duration = 0;
  };
  std::vector<Row> truth(const std::string& from, const std::string& to) const;

  struct Call {
    std::string property;
    std::string body;  // the request's JSON
    int status = 0;
  };
  std::vector<Call> calls() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
  std::thread thread_;
};

// A GoogleAnalytics source's YAML flow line (property, key, endpoint, the three dimensions and four metrics the
// emulator knows); `extra` starts with ", ".
std::string ga4_source(const Ga4Emulator& ga4, const std::string& endpoint, const std::string& extra = "");

}  // namespace skippr::test

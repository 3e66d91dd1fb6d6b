// The Google Analytics Data API (GA4, v1beta) as the GoogleAnalytics source calls it: properties/{id}:runReport with
// a service account's OAuth token (scope analytics.readonly). A report is a read, so every failure that may go away
// is retried here (with the same request): throttling (429 RESOURCE_EXHAUSTED for the hour or for concurrent
// requests), 5xx, a lost connection or answer. What the API refuses becomes one sentence with what it said.
#pragma once

#include <nlohmann/json.hpp>

#include <atomic>
#include <string>

#include "clients/google/google_credentials.h"
#include "core/result.h"

namespace skippr {

struct AnalyticsDataConfig {
  GoogleServiceAccount account;
  std::string endpoint;     // e.g. https://analyticsdata.googleapis.com (the default when empty)
  std::string property_id;  // digits
  std::string where;        // "GoogleAnalytics source 'ga'"
  double timeout_seconds = 60;
  double retry_seconds = 300;  // how long throttling and outages are waited out before kUnavailable
  const std::atomic<bool>* stop = nullptr;
};

class AnalyticsDataClient {
 public:
  explicit AnalyticsDataClient(AnalyticsDataConfig config);

  // The runReport answer (JSON). kConfig: the API refused the request (an unknown dimension or metric, a property
  // the account cannot read, a key the token endpoint refuses), with the API's message. kUnavailable: the property's
  // tokens for the day are used up (saying when to retry), or throttling or an outage outlasted retry_seconds.
  Result<nlohmann::json> run_report(const nlohmann::json& request);

  const std::string& where() const { return where_; }

 private:
  Status refused(long status, const std::string& body) const;

  AnalyticsDataConfig config_;
  GoogleTokenSource tokens_;
  std::string where_;
};

}  // namespace skippr

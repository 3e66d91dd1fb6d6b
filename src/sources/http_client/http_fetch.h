// One HTTP request on libcurl with the retry policy of API sources: 429 and 5xx (and connection failures) are retried
// with exponential backoff, honouring Retry-After; other 4xx fail at once (a configuration mistake).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "clients/http/http_request.h"
#include "core/result.h"

namespace skippr {

struct FetchPolicy {
  int retries = 5;
  double max_backoff_seconds = 30;
  double timeout_seconds = 60;
};

Result<HttpResponse> http_fetch(const std::string& method, const std::string& url,
                                const std::vector<std::string>& headers, const FetchPolicy& policy);

// The "next" URL of an RFC 8288 Link header (`<https://...>; rel="next"`), empty when there is none.
std::string link_header_next(const std::string& link);

// `reference` (absolute, or relative as RFC 3986 allows: "/v1/items?page=2", "?page=2") resolved against `base`;
// nullopt when it is not a URL.
std::optional<std::string> resolve_url(const std::string& base, const std::string& reference);

}  // namespace skippr

#include "clients/aws/renewing_credentials.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <map>

namespace skippr {
namespace {

constexpr auto kAdvisoryWindow = std::chrono::minutes(15);
// Credentials this close to their expiry are not used: a request signed now may reach AWS after it.
constexpr auto kUnusableMargin = std::chrono::seconds(5);
constexpr auto kRetryAfterFailedRenewal = std::chrono::seconds(1);

}  // namespace

RenewingCredentials::RenewingCredentials(AwsCredentials first, Fetch fetch)
    : source_(first.source),
      fetch_(std::move(fetch)),
      credentials_(std::move(first)),
      renew_at_(renewal_time(Clock::now(), credentials_.expiration)) {}

RenewingCredentials::Clock::time_point RenewingCredentials::renewal_time(Clock::time_point now,
                                                                         Clock::time_point expiration) {
  const auto lifetime = expiration - now;
  return expiration - std::min<Clock::duration>(kAdvisoryWindow, lifetime / 4);
}

Result<AwsCredentials> RenewingCredentials::current() {
  std::unique_lock renewal(renewal_mutex_, std::defer_lock);
  {
    std::lock_guard lock(mutex_);
    const auto now = Clock::now();
    const bool due = now >= renew_at_ && now >= next_attempt_;
    // Not due, or another thread is renewing while these still work: no request waits on the endpoint.
    if (!due || (now + kUnusableMargin < credentials_.expiration && !renewal.try_lock())) return usable(now);
  }
  if (!renewal.owns_lock()) renewal.lock();  // they no longer work: wait for the renewal under way, or make one
  auto now = Clock::now();
  {
    std::lock_guard lock(mutex_);
    if (now < renew_at_ || now < next_attempt_) return usable(now);  // renewed (or tried) while this one waited
  }
  auto fresh = fetch_();
  std::lock_guard lock(mutex_);
  now = Clock::now();
  if (fresh && fresh->expiration > now + kUnusableMargin) {
    credentials_ = std::move(*fresh);
    renew_at_ = renewal_time(now, credentials_.expiration);
    spdlog::debug("AWS credentials from {} renewed", credentials_.source);
  } else {
    next_attempt_ = now + kRetryAfterFailedRenewal;
    spdlog::warn("AWS credentials from {} could not be renewed; {}", credentials_.source,
                 now + kUnusableMargin < credentials_.expiration ? "the current ones still serve, retrying"
                                                                 : "they have expired, retrying");
  }
  return usable(now);
}

Result<AwsCredentials> RenewingCredentials::usable(Clock::time_point now) const {
  if (now + kUnusableMargin >= credentials_.expiration) {
    return fail(
        ErrorKind::kUnavailable,
        fmt::format("the AWS credentials from {} have expired and could not be renewed; retried", credentials_.source));
  }
  return credentials_;
}

void RenewingCredentials::expire() {
  std::lock_guard lock(mutex_);
  renew_at_ = next_attempt_ = Clock::time_point{};
}

namespace {
std::mutex registry_mutex;
std::map<std::string, std::shared_ptr<RenewingCredentials>> by_origin;
}  // namespace

std::shared_ptr<RenewingCredentials> existing_renewing_credentials(const std::string& origin) {
  std::lock_guard lock(registry_mutex);
  auto found = by_origin.find(origin);
  return found == by_origin.end() ? nullptr : found->second;
}

std::shared_ptr<RenewingCredentials> shared_renewing_credentials(const std::string& origin, AwsCredentials first,
                                                                 RenewingCredentials::Fetch fetch) {
  std::lock_guard lock(registry_mutex);
  auto& shared = by_origin[origin];
  if (!shared) shared = std::make_shared<RenewingCredentials>(std::move(first), std::move(fetch));
  return shared;
}

}  // namespace skippr

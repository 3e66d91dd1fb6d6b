// Temporary AWS credentials (web identity via STS, the container endpoint, instance metadata) renewed before they
// expire, one set per place they come from, shared by every client of the process. Modelled on the AWS SDKs'
// refreshable credentials: renewed ahead of the expiry (the advisory window) while the old ones still serve, so no
// request waits on a renewal that fails once; when they have expired and cannot be renewed, the call is retried
// later (kUnavailable), never a configuration error: the endpoint that hands them out is what is down.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "clients/aws/aws_config.h"
#include "core/result.h"

namespace skippr {

class RenewingCredentials {
 public:
  using Fetch = std::function<std::optional<AwsCredentials>()>;
  using Clock = std::chrono::system_clock;

  RenewingCredentials(AwsCredentials first, Fetch fetch);

  // The credentials to sign with now: renewed first when they are inside their renewal window.
  Result<AwsCredentials> current();
  // The service refused them as expired (its clock is ahead, or they were revoked): the next current() renews.
  void expire();
  // Where they come from ("the container credentials endpoint", ...), for messages.
  const std::string& source() const { return source_; }

  // When credentials issued at `now` that expire at `expiration` are renewed: a quarter of their lifetime before,
  // at most 15 minutes before (the SDKs' advisory window; STS credentials live an hour by default).
  static Clock::time_point renewal_time(Clock::time_point now, Clock::time_point expiration);

 private:
  std::mutex mutex_;          // guards the state below; never held across a fetch (a network call)
  std::mutex renewal_mutex_;  // held by the one thread that renews
  const std::string source_;
  // The credentials, or kUnavailable when they are too close to their expiry to sign with; under mutex_.
  Result<AwsCredentials> usable(Clock::time_point now) const;

  Fetch fetch_;
  AwsCredentials credentials_;
  Clock::time_point renew_at_;
  Clock::time_point next_attempt_;  // after a failed renewal, not before this (the endpoint is not hammered)
};

// The process's RenewingCredentials for `origin` if there is one yet: a second client uses it without asking the
// endpoint again.
std::shared_ptr<RenewingCredentials> existing_renewing_credentials(const std::string& origin);

// The process's one RenewingCredentials for `origin` (e.g. the container endpoint's URL): made from `first` and
// `fetch` the first time, the same object afterwards, so every client renews the same credentials once.
std::shared_ptr<RenewingCredentials> shared_renewing_credentials(const std::string& origin, AwsCredentials first,
                                                                 RenewingCredentials::Fetch fetch);

}  // namespace skippr

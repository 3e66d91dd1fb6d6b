#include "sources/google_analytics/google_analytics_source.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>

#include "clients/google/analytics_data_client.h"
#include "clients/google/google_credentials.h"
#include "sources/google_analytics/report_dates.h"
#include "sources/google_analytics/report_rows.h"

namespace skippr {
namespace {

constexpr int kMaxPageSize = 250000;  // runReport's largest limit

struct GaOptions {
  std::string what;  // "GoogleAnalytics source 'ga'"
  std::string property_id;
  std::string credentials_file;
  std::vector<std::string> dimensions;  // `date` first when the config left it out
  std::vector<std::string> metrics;
  std::string start_date;
  std::string end_date;
  int64_t lookback_days = 3;
  int64_t page_size = 10000;
  std::string endpoint;
  double timeout_seconds = 60;
  double retry_seconds = 300;
};

// A sync in progress: the days it reads (fixed when it starts, so a restart reads the same range) and the next page.
struct GaPass {
  int64_t from = 0, to = 0;
  int64_t day = 0;
  uint64_t offset = 0;
};

struct GaPosition {
  std::optional<int64_t> through;  // the last complete day a finished sync read
  std::optional<GaPass> pass;
};

std::string encode(const GaPosition& p) {
  nlohmann::json j = nlohmann::json::object();
  if (p.through) j["through"] = iso_date(*p.through);
  if (p.pass) {
    j["pass"] = {{"from", iso_date(p.pass->from)},
                 {"to", iso_date(p.pass->to)},
                 {"day", iso_date(p.pass->day)},
                 {"offset", p.pass->offset}};
  }
  return j.dump();
}

std::optional<GaPosition> decode(const std::string& token) {
  const auto j = nlohmann::json::parse(token, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  GaPosition p;
  auto date = [&](const nlohmann::json& o, const char* key) -> std::optional<int64_t> {
    return o.contains(key) && o[key].is_string() ? parse_iso_date(o[key].get<std::string>()) : std::nullopt;
  };
  if (j.contains("through")) {
    p.through = date(j, "through");
    if (!p.through) return std::nullopt;
  }
  if (j.contains("pass")) {
    const auto& o = j["pass"];
    if (!o.is_object()) return std::nullopt;
    auto from = date(o, "from"), to = date(o, "to"), day = date(o, "day");
    if (!from || !to || !day || !o.value("offset", nlohmann::json()).is_number_unsigned()) return std::nullopt;
    p.pass = GaPass{*from, *to, *day, o["offset"].get<uint64_t>()};
  }
  return p;
}

class GoogleAnalyticsSource final : public Source {
 public:
  explicit GoogleAnalyticsSource(GaOptions o) : o_(std::move(o)) {}

  bool resumes_from_destination() const override { return true; }  // GA4 answers for past days again

  Status open() override {
    auto account = load_google_service_account(GcsOptions{o_.credentials_file, ""}, o_.what);
    if (!account) return std::unexpected(account.error());
    client_.emplace(AnalyticsDataConfig{*account, o_.endpoint, o_.property_id, o_.what, o_.timeout_seconds,
                                        o_.retry_seconds, nullptr});
    // One row of the last day: the API checks the names, the property's access and the key before anything is read.
    auto end = resolve_report_date(o_.end_date, today_utc());
    auto probe = client_->run_report(request(*end, 0, 1));
    if (!probe) return std::unexpected(probe.error());
    return ok();
  }

  Status seek(const Position& position) override {
    at_ = {};
    if (position.empty()) return ok();
    auto decoded = decode(position.token);
    if (!decoded) {
      return fail(ErrorKind::kCorruption, fmt::format("{}: unreadable resume position '{}'", o_.what, position.token));
    }
    at_ = *decoded;
    return ok();
  }

  Result<Poll> poll(const Budget& budget) override {
    Poll out;
    if (!at_.pass) {
      const int64_t today = today_utc();
      const int64_t to = *resolve_report_date(o_.end_date, today);  // checked by the factory
      int64_t from = at_.through ? *at_.through + 1 - o_.lookback_days : *resolve_report_date(o_.start_date, today);
      // Never before a fixed start_date (a relative one moves on with time, and the look-back must not skip days).
      if (auto start = parse_iso_date(o_.start_date); start && from < *start) from = *start;
      if (from > to) {
        out.drained = true;  // nothing to read yet: the end date is before the first day to read
        out.position_after.token = encode(at_);
        return out;
      }
      at_.pass = GaPass{from, to, from, 0};
      spdlog::info("{}: reading {} to {}", client_->where(), iso_date(from), iso_date(to));
    }
    GaPass& pass = *at_.pass;
    const int64_t limit = std::clamp<int64_t>(static_cast<int64_t>(budget.max_rows), 1, o_.page_size);
    while (true) {
      auto answer = client_->run_report(request(pass.day, pass.offset, limit));
      if (!answer) return std::unexpected(answer.error());
      log_quota(*answer);
      auto page = report_page(*answer, fmt::format("{} {}", client_->where(), iso_date(pass.day)));
      if (!page) return std::unexpected(page.error());
      pass.offset += page->received;
      if (page->received == 0 || pass.offset >= page->row_count) {
        pass.day += 1;
        pass.offset = 0;
      }
      const bool done = pass.day > pass.to;
      if (done) {
        at_.through = pass.to;
        at_.pass.reset();
      }
      out.dead_letters = std::move(page->bad);
      out.records = std::move(page->rows);
      out.drained = done;
      out.position_after.token = encode(at_);
      // A day without rows: the next day, in the same poll.
      if (out.records.rows > 0 || !out.dead_letters.empty() || done) return out;
    }
  }

 private:
  nlohmann::json request(int64_t day, uint64_t offset, int64_t limit) const {
    nlohmann::json dimensions = nlohmann::json::array(), metrics = nlohmann::json::array(),
                   order = nlohmann::json::array();
    for (const auto& d : o_.dimensions) {
      dimensions.push_back({{"name", d}});
      // A stable order, so offsets page through the same sequence of rows.
      order.push_back({{"dimension", {{"dimensionName", d}}}});
    }
    for (const auto& m : o_.metrics) metrics.push_back({{"name", m}});
    return {{"dateRanges", {{{"startDate", iso_date(day)}, {"endDate", iso_date(day)}}}},
            {"dimensions", dimensions},
            {"metrics", metrics},
            {"orderBys", order},
            {"limit", std::to_string(limit)},
            {"offset", std::to_string(offset)},
            {"keepEmptyRows", false},
            {"returnPropertyQuota", true}};
  }

  void log_quota(const nlohmann::json& answer) {
    if (!answer.contains("propertyQuota") || !answer["propertyQuota"].is_object()) return;
    const auto& daily = answer["propertyQuota"].value("tokensPerDay", nlohmann::json::object());
    const int64_t consumed = daily.value("consumed", int64_t{0}), remaining = daily.value("remaining", int64_t{0});
    spdlog::debug("{}: {} API tokens used by this request, {} left today", client_->where(), consumed, remaining);
    if (!warned_quota_ && remaining >= 0 && remaining < 2000) {
      warned_quota_ = true;
      spdlog::warn("{}: only {} API tokens are left for today", client_->where(), remaining);
    }
  }

  GaOptions o_;
  std::optional<AnalyticsDataClient> client_;
  GaPosition at_;
  bool warned_quota_ = false;
};

Result<GaOptions> read_options(const ConnectorContext& ctx) {
  GaOptions o;
  o.what = fmt::format("GoogleAnalytics source '{}'", ctx.name);
  const auto& p = ctx.params;
  o.property_id = p.value("property_id", std::string());
  if (o.property_id.starts_with("properties/")) o.property_id.erase(0, 11);
  if (o.property_id.empty() || !std::ranges::all_of(o.property_id, [](unsigned char c) { return std::isdigit(c); })) {
    return fail(ErrorKind::kConfig, fmt::format("{}: property_id '{}' is not a GA4 property id (its digits, as in "
                                                "Admin > Property settings)",
                                                o.what, o.property_id));
  }
  o.credentials_file = p.value("credentials_file", std::string());
  o.dimensions = p.value("dimensions", std::vector<std::string>{});
  o.metrics = p.value("metrics", std::vector<std::string>{});
  if (o.metrics.empty()) {
    return fail(ErrorKind::kConfig, fmt::format("{}: metrics is empty; name at least one (e.g. sessions)", o.what));
  }
  if (std::ranges::find(o.dimensions, "date") == o.dimensions.end()) o.dimensions.insert(o.dimensions.begin(), "date");
  o.start_date = p.value("start_date", std::string("30daysAgo"));
  o.end_date = p.value("end_date", std::string("yesterday"));
  for (const auto& [key, text] : {std::pair{"start_date", o.start_date}, std::pair{"end_date", o.end_date}}) {
    if (!resolve_report_date(text, 0)) {
      return fail(ErrorKind::kConfig, fmt::format("{}: {} '{}' is not a date; write YYYY-MM-DD, today, yesterday or "
                                                  "NdaysAgo",
                                                  o.what, key, text));
    }
  }
  o.lookback_days = p.value("lookback_days", int64_t{3});
  o.page_size = p.value("page_size", int64_t{10000});
  if (o.lookback_days < 0) {
    return fail(ErrorKind::kConfig, fmt::format("{}: lookback_days must be 0 or more", o.what));
  }
  if (o.page_size < 1 || o.page_size > kMaxPageSize) {
    return fail(ErrorKind::kConfig, fmt::format("{}: page_size must be 1 to {}", o.what, kMaxPageSize));
  }
  o.endpoint = p.value("endpoint", std::string());
  if (!o.endpoint.empty() && !o.endpoint.starts_with("http://") && !o.endpoint.starts_with("https://")) {
    return fail(ErrorKind::kConfig,
                fmt::format("{}: endpoint '{}' must start with http:// or https://", o.what, o.endpoint));
  }
  o.timeout_seconds = p.value("timeout_seconds", 60.0);
  o.retry_seconds = p.value("retry_seconds", 300.0);
  return o;
}

}  // namespace

ConnectorSpec google_analytics_source_spec() {
  ConnectorSpec spec;
  spec.type_name = "GoogleAnalytics";
  spec.is_source = true;
  spec.summary = "GA4 reports by day (Data API runReport); re-reads the last days, which GA4 revises";
  spec.params = {
      {"property_id", ParamType::kString, true, nullptr, "the GA4 property's id (digits)"},
      {"credentials_file", ParamType::kPath, true, nullptr,
       "a service-account JSON key with Viewer on the property (scope analytics.readonly)"},
      {"dimensions", ParamType::kStringList, true, nullptr, "report dimensions; date is always added"},
      {"metrics", ParamType::kStringList, true, nullptr, "report metrics, typed from the API's metric types"},
      {"start_date", ParamType::kString, false, "30daysAgo",
       "the first day of the first sync (YYYY-MM-DD or NdaysAgo)"},
      {"end_date", ParamType::kString, false, "yesterday",
       "the last day each sync reads (yesterday: the last complete day)"},
      {"lookback_days", ParamType::kInt, false, 3, "days before the last one read that each sync reads again"},
      {"page_size", ParamType::kInt, false, 10000, "rows per runReport request (at most 250000)"},
      {"endpoint", ParamType::kString, false, nullptr,
       "the Data API's origin (default https://analyticsdata.googleapis.com)"},
      {"timeout_seconds", ParamType::kDouble, false, 60.0, "per request"},
      {"retry_seconds", ParamType::kDouble, false, 300.0, "how long throttling and outages are waited out"},
  };
  spec.default_landing = Landing::kReplacePartition;
  spec.default_partition_by = {"date"};
  spec.make_source = [](const ConnectorContext& ctx) -> Result<std::unique_ptr<Source>> {
    auto o = read_options(ctx);
    if (!o) return std::unexpected(o.error());
    return std::make_unique<GoogleAnalyticsSource>(std::move(*o));
  };
  return spec;
}

}  // namespace skippr

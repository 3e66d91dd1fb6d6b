#include "sources/http_client/http_client_source.h"

#include <curl/curl.h>
#include <fmt/format.h>
#include <simdjson.h>
#include <spdlog/spdlog.h>

#include <functional>
#include <set>
#include <thread>

#include "formats/json_columns.h"
#include "formats/json_rows.h"
#include "sources/http_client/http_fetch.h"

namespace skippr {
namespace {

enum class Paging { kNone, kCursor, kOffset, kPage, kLinkHeader };

struct Options {
  std::string url, method;
  std::vector<std::string> headers;  // auth included
  std::string records_path;          // JSON pointer; "" = the body is the array
  Paging paging = Paging::kNone;
  std::string cursor_path, cursor_param, offset_param, limit_param, page_param, page_size_param;
  int64_t page_size = 100, start_page = 1;
  std::string incremental_param, incremental_cursor_field;
  double min_interval_seconds = 0;
  FetchPolicy fetch;
  Landing landing = Landing::kAppend;
};

std::string url_escape(const std::string& text) {
  char* escaped = curl_easy_escape(nullptr, text.c_str(), static_cast<int>(text.size()));
  std::string out(escaped);
  curl_free(escaped);
  return out;
}

// Numbers compare as numbers, anything else as text (ISO 8601 timestamps sort as text).
bool cursor_less(const nlohmann::json& a, const nlohmann::json& b) {
  if (a.is_number() && b.is_number()) return a.get<double>() < b.get<double>();
  auto text = [](const nlohmann::json& j) { return j.is_string() ? j.get<std::string>() : j.dump(); };
  return text(a) < text(b);
}

nlohmann::json cursor_value(simdjson::dom::element v) {
  if (v.is_int64()) return v.get_int64().value();
  if (v.is_uint64()) return v.get_uint64().value();
  if (v.is_double()) return v.get_double().value();
  if (v.is_string()) return std::string(v.get_string().value());
  return nullptr;
}

class HttpClientSource final : public Source {
 public:
  HttpClientSource(std::string name, Options options) : name_(std::move(name)), o_(std::move(options)) {}

  Status open() override {
    if (o_.incremental_cursor_field.empty() && o_.landing == Landing::kAppend) {
      spdlog::warn(
          "HttpClient source '{}' has no incremental_cursor_field, so each run reads the whole API again and an "
          "append table receives every record once per run; set incremental_param and incremental_cursor_field, or "
          "land with merge_by_key (a primary_key) so a rerun replaces what it read before",
          name_);
    }
    return ok();
  }

  // Its positions name data that can be read again from there, whoever committed them.
  bool resumes_from_destination() const override { return true; }
  // A position is {"cursor": C} between runs, and {"cursor": C, "run": {...}} inside a run cut short: the run's
  // filter, its page state and the largest cursor it has read, so a killed run resumes at the next page of the same
  // run instead of reading committed pages again, and C advances only once a run has read every page (an API that
  // returns records newest first loses nothing when a run is cut short).
  Status seek(const Position& position) override {
    cursor_ = nullptr;
    restart_run();
    if (position.empty()) return ok();
    auto parsed = nlohmann::json::parse(position.token, nullptr, false);
    if (!parsed.is_object() || !parsed.contains("cursor")) {
      return fail(ErrorKind::kCorruption,
                  fmt::format("HttpClient source '{}': unreadable resume position '{}'", name_, position.token));
    }
    cursor_ = parsed["cursor"];
    run_cursor_ = cursor_;
    run_max_ = cursor_;
    if (const auto run = parsed.find("run"); run != parsed.end() && run->is_object()) {
      run_cursor_ = run->value("filter", nlohmann::json());
      run_max_ = run->value("max", nlohmann::json());
      next_cursor_ = run->value("next_cursor", std::string());
      next_url_ = run->value("next_url", std::string());
      offset_ = run->value("offset", int64_t{0});
      page_ = run->value("page", o_.start_page);
      pages_read_ = run->value("pages", int64_t{0});
    }
    return ok();
  }

  // One page per poll; drained after the last page. The next poll after that starts a new run from the cursor.
  Result<Poll> poll(const Budget&) override {
    Poll result;
    if (run_done_) {
      restart_run();
      result.position_after = position();
      result.drained = true;
      return result;
    }
    const std::string url = page_url();
    throttle();
    auto response = http_fetch(o_.method, url, o_.headers, o_.fetch);
    if (!response) return std::unexpected(response.error());
    SKIPPR_TRY(read_page(url, *response, result.records));
    if (run_done_ && (cursor_.is_null() || (!run_max_.is_null() && cursor_less(cursor_, run_max_)))) {
      cursor_ = run_max_;  // every page of the run is in this batch or before it: the next run filters from here
    }
    result.position_after = position();
    result.drained = run_done_;
    return result;
  }

 private:
  void restart_run() {
    run_done_ = false;
    next_cursor_.clear();
    next_url_.clear();
    offset_ = 0;
    page_ = o_.start_page;
    pages_read_ = 0;
    tokens_seen_.clear();
    last_page_hash_ = 0;
    run_cursor_ = cursor_;  // the filter stays fixed for the whole run; cursor_ moves when the run is done
    run_max_ = cursor_;
  }

  Position position() const {
    nlohmann::json p = {{"cursor", cursor_}};
    if (!run_done_) {
      p["run"] = {{"filter", run_cursor_}, {"max", run_max_}, {"next_cursor", next_cursor_}, {"next_url", next_url_},
                  {"offset", offset_},     {"page", page_},   {"pages", pages_read_}};
    }
    return Position{p.dump()};
  }

  std::string page_url() const {
    if (o_.paging == Paging::kLinkHeader && !next_url_.empty()) return next_url_;
    std::string url = o_.url;
    auto add = [&](const std::string& name, const std::string& value) {
      if (name.empty()) return;
      url += url.find('?') == std::string::npos ? '?' : '&';
      url += url_escape(name) + "=" + url_escape(value);
    };
    if (!o_.incremental_param.empty() && !run_cursor_.is_null()) {
      add(o_.incremental_param, run_cursor_.is_string() ? run_cursor_.get<std::string>() : run_cursor_.dump());
    }
    switch (o_.paging) {
      case Paging::kCursor:
        if (!next_cursor_.empty()) add(o_.cursor_param, next_cursor_);
        add(o_.limit_param, std::to_string(o_.page_size));
        break;
      case Paging::kOffset:
        add(o_.offset_param, std::to_string(offset_));
        add(o_.limit_param, std::to_string(o_.page_size));
        break;
      case Paging::kPage:
        add(o_.page_param, std::to_string(page_));
        add(o_.page_size_param, std::to_string(o_.page_size));
        break;
      default:
        break;
    }
    return url;
  }

  void throttle() {
    if (o_.min_interval_seconds <= 0) return;
    const auto next = last_request_ + std::chrono::duration<double>(o_.min_interval_seconds);
    if (auto now = std::chrono::steady_clock::now(); now < next) std::this_thread::sleep_until(next);
    last_request_ = std::chrono::steady_clock::now();
  }

  Status read_page(const std::string& url, const HttpResponse& response, Batch& records) {
    // A body that is not JSON is often a proxy's error page: retry later. A JSON page without the records where
    // records_path says is a configuration mistake on the run's first page (exit 2), and bad data after that (exit 1).
    auto bad = [&](ErrorKind kind, const std::string& why, const char* todo) {
      return fail(kind, fmt::format("HttpClient source '{}': the page {} {}; nothing of it was committed. {}", name_,
                                    url, why, todo));
    };
    simdjson::dom::element doc;
    if (auto error = parser_.parse(response.body).get(doc)) {
      return bad(ErrorKind::kUnavailable,
                 fmt::format("is not JSON ({}): {}", simdjson::error_message(error), response.body.substr(0, 200)),
                 "Retry later, or check url and headers");
    }
    const ErrorKind shape_error = pages_read_ == 0 ? ErrorKind::kConfig : ErrorKind::kBadInput;
    const char* shape_todo = pages_read_ == 0 ? "Fix records_path (a JSON pointer such as /data)"
                                              : "Earlier pages had it: the API answered something else on this page";
    simdjson::dom::element list = doc;
    if (!o_.records_path.empty() && doc.at_pointer(o_.records_path).get(list)) {
      return bad(shape_error,
                 fmt::format("has nothing at records_path '{}' (it starts: {})", o_.records_path,
                             response.body.substr(0, 200)),
                 shape_todo);
    }
    simdjson::dom::array items;
    if (list.get_array().get(items)) {
      return bad(shape_error, fmt::format("has no array at records_path '{}'", o_.records_path), shape_todo);
    }
    size_t n = 0;
    for (simdjson::dom::element item : items) {
      ++n;
      simdjson::dom::object object;
      if (item.get_object().get(object)) {
        return bad(shape_error, fmt::format("has record {} that is not a JSON object", n), shape_todo);
      }
      if (auto st = append_json_object(object, records); !st) {
        return bad(ErrorKind::kBadInput, fmt::format("record {}: {}", n, st.error().message),
                   "Fix the record in the API, or read it with another source");
      }
      simdjson::dom::element field;
      if (!o_.incremental_cursor_field.empty() && !object.at_key(o_.incremental_cursor_field).get(field)) {
        nlohmann::json value = cursor_value(field);
        if (!value.is_null() && (run_max_.is_null() || cursor_less(run_max_, value))) run_max_ = value;
      }
    }
    ++pages_read_;
    SKIPPR_TRY(check_not_looping(url, response, n));
    return advance(url, doc, response, n);
  }

  // An API whose "next" never ends (the same cursor or link again, or offset/page parameters it ignores, so every
  // page is the same full page) would be read forever: stop with the token that repeats instead.
  Status check_not_looping(const std::string& url, const HttpResponse& response, size_t count) {
    const bool full_page = count >= static_cast<size_t>(o_.page_size);
    if ((o_.paging == Paging::kOffset || o_.paging == Paging::kPage) && full_page) {
      const size_t hash = std::hash<std::string>{}(response.body);
      if (hash == last_page_hash_) {
        return fail(ErrorKind::kBadInput,
                    fmt::format("HttpClient source '{}': the page {} is the same as the page before it, so the API "
                                "ignores the {} parameter and the read would never end; check pagination_type and "
                                "pagination_{}_param",
                                name_, url, o_.paging == Paging::kOffset ? o_.offset_param : o_.page_param,
                                o_.paging == Paging::kOffset ? "offset" : "page"));
      }
      last_page_hash_ = hash;
    }
    return ok();
  }

  Status repeated_token(const std::string& what, const std::string& token) {
    return fail(ErrorKind::kBadInput,
                fmt::format("HttpClient source '{}': the API gave the {} '{}' a second time in one read (page {}), "
                            "so the read would never end; the pages before it are kept. Check {} or the API",
                            name_, what, token.substr(0, 200), pages_read_,
                            what == "next link" ? "pagination_type" : "pagination_cursor_path"));
  }

  Status advance(const std::string& url, simdjson::dom::element doc, const HttpResponse& response, size_t count) {
    const bool short_page = count < static_cast<size_t>(o_.page_size);
    switch (o_.paging) {
      case Paging::kNone:
        run_done_ = true;
        break;
      case Paging::kCursor: {
        simdjson::dom::element next;
        next_cursor_.clear();
        if (!doc.at_pointer(o_.cursor_path).get(next) && !next.is_null()) {
          next_cursor_ = next.is_string() ? std::string(next.get_string().value()) : simdjson::minify(next);
        }
        run_done_ = next_cursor_.empty() || count == 0;
        if (!run_done_ && !tokens_seen_.insert(next_cursor_).second) return repeated_token("next cursor", next_cursor_);
        break;
      }
      case Paging::kOffset:
        offset_ += static_cast<int64_t>(count);
        run_done_ = short_page;
        break;
      case Paging::kPage:
        page_ += 1;
        run_done_ = short_page;
        break;
      case Paging::kLinkHeader: {
        auto it = response.headers.find("link");
        const std::string next = it == response.headers.end() ? "" : link_header_next(it->second);
        next_url_.clear();
        if (!next.empty()) {
          auto resolved = resolve_url(url, next);  // a relative link is relative to the page's own URL
          if (!resolved) {
            return fail(ErrorKind::kBadInput, fmt::format("HttpClient source '{}': the page {} links to next page "
                                                          "'{}', which is not a URL",
                                                          name_, url, next));
          }
          next_url_ = *resolved;
        }
        run_done_ = next_url_.empty();
        if (!run_done_ && !tokens_seen_.insert(next_url_).second) return repeated_token("next link", next_url_);
        break;
      }
    }
    return ok();
  }

  std::string name_;
  Options o_;
  simdjson::dom::parser parser_;
  nlohmann::json cursor_;      // the largest cursor_field of the last finished run: the next run filters from it
  nlohmann::json run_cursor_;  // the cursor this run filters with
  nlohmann::json run_max_;     // the largest cursor_field this run has read so far
  bool run_done_ = false;
  std::string next_cursor_, next_url_;
  int64_t offset_ = 0, page_ = 1, pages_read_ = 0;
  std::set<std::string> tokens_seen_;  // next cursors / links of this run (a repeat is a loop)
  size_t last_page_hash_ = 0;
  std::chrono::steady_clock::time_point last_request_{};
};

Result<Options> read_options(const ConnectorContext& ctx) {
  const auto& p = ctx.params;
  auto config_error = [&](const std::string& what) {
    return fail(ErrorKind::kConfig, fmt::format("HttpClient source '{}': {}", ctx.name, what));
  };
  auto text = [&](const char* key, const char* fallback = "") { return p.value(key, std::string(fallback)); };
  Options o;
  o.landing = ctx.landing;
  o.url = text("url");
  o.method = text("method", "GET");
  for (const auto& [k, v] : p.value("headers", std::map<std::string, std::string>{})) o.headers.push_back(k + ": " + v);
  const std::string auth = text("auth_type", "none");
  if (auth == "bearer") {
    o.headers.push_back("Authorization: Bearer " + text("auth_token"));
  } else if (auth == "basic") {
    o.headers.push_back("Authorization: Basic " + base64_encode(text("auth_username") + ":" + text("auth_password")));
  } else if (auth == "api_key") {
    o.headers.push_back(text("api_key_header", "X-API-Key") + ": " + text("auth_token"));
  } else if (auth != "none") {
    return config_error(fmt::format("auth_type '{}' must be none, bearer, basic or api_key", auth));
  }
  if (auth != "none" && auth != "basic" && text("auth_token").empty()) {
    return config_error("auth_token is empty; set it, e.g. auth_token: ${API_TOKEN}");
  }
  o.records_path = text("records_path");
  if (!o.records_path.empty() && o.records_path.front() != '/') {
    return config_error(fmt::format("records_path '{}' must be a JSON pointer such as /data/items", o.records_path));
  }
  const std::map<std::string, Paging> kinds = {{"none", Paging::kNone},
                                               {"cursor", Paging::kCursor},
                                               {"offset", Paging::kOffset},
                                               {"page", Paging::kPage},
                                               {"link_header", Paging::kLinkHeader}};
  const std::string kind = text("pagination_type", "none");
  if (!kinds.contains(kind)) {
    return config_error(fmt::format("pagination_type '{}' must be none, cursor, offset, page or link_header", kind));
  }
  o.paging = kinds.at(kind);
  o.cursor_path = text("pagination_cursor_path", "/next");
  o.cursor_param = text("pagination_cursor_param", "cursor");
  o.offset_param = text("pagination_offset_param", "offset");
  o.limit_param = text("pagination_limit_param", "limit");
  o.page_param = text("pagination_page_param", "page");
  o.page_size_param = text("pagination_page_size_param", "per_page");
  o.page_size = p.value("pagination_page_size", int64_t{100});
  o.start_page = p.value("pagination_start_page", int64_t{1});
  if (o.page_size <= 0) return config_error("pagination_page_size must be positive");
  o.incremental_param = text("incremental_param");
  o.incremental_cursor_field = text("incremental_cursor_field");
  if (o.incremental_param.empty() != o.incremental_cursor_field.empty()) {
    return config_error("give both incremental_param and incremental_cursor_field, or neither");
  }
  const double rate = p.value("rate_limit_per_second", 0.0);
  o.min_interval_seconds = rate > 0 ? 1.0 / rate : 0;
  o.fetch.retries = static_cast<int>(p.value("retries", int64_t{5}));
  return o;
}

}  // namespace

ConnectorSpec http_client_source_spec() {
  ConnectorSpec spec;
  spec.type_name = "HttpClient";
  spec.is_source = true;
  spec.summary = "reads a paginated JSON REST API, incrementally by a cursor field";
  spec.params = {
      {"url", ParamType::kString, true, nullptr, "the endpoint, e.g. https://api.example.com/v1/orders"},
      {"method", ParamType::kString, false, "GET", "HTTP method"},
      {"headers", ParamType::kStringMap, false, nullptr, "extra request headers"},
      {"auth_type", ParamType::kString, false, "none", "none|bearer|basic|api_key"},
      {"auth_token", ParamType::kString, false, nullptr, "bearer token or API key; use ${VAR}"},
      {"auth_username", ParamType::kString, false, nullptr, "basic auth user; use ${VAR}"},
      {"auth_password", ParamType::kString, false, nullptr, "basic auth password; use ${VAR}"},
      {"api_key_header", ParamType::kString, false, "X-API-Key", "header that carries the API key"},
      {"records_path", ParamType::kString, false, "", "JSON pointer to the records array (empty: the body itself)"},
      {"pagination_type", ParamType::kString, false, "none", "none|cursor|offset|page|link_header"},
      {"pagination_cursor_path", ParamType::kString, false, "/next", "cursor: JSON pointer to the next cursor"},
      {"pagination_cursor_param", ParamType::kString, false, "cursor", "cursor: query parameter that sends it"},
      {"pagination_offset_param", ParamType::kString, false, "offset", "offset: query parameter"},
      {"pagination_limit_param", ParamType::kString, false, "limit", "cursor/offset: page size parameter"},
      {"pagination_page_param", ParamType::kString, false, "page", "page: query parameter"},
      {"pagination_page_size_param", ParamType::kString, false, "per_page", "page: page size parameter"},
      {"pagination_page_size", ParamType::kInt, false, 100, "records a page; a shorter page is the last"},
      {"pagination_start_page", ParamType::kInt, false, 1, "page: number of the first page"},
      {"incremental_param", ParamType::kString, false, nullptr, "query parameter that sends the cursor, e.g. since"},
      {"incremental_cursor_field", ParamType::kString, false, nullptr,
       "record field whose largest value is the cursor"},
      {"rate_limit_per_second", ParamType::kDouble, false, 0.0, "at most this many requests a second (0: no limit)"},
      {"retries", ParamType::kInt, false, 5, "retries of a 429, 5xx or connection failure, with backoff"},
  };
  spec.make_source = [](const ConnectorContext& ctx) -> Result<std::unique_ptr<Source>> {
    auto options = read_options(ctx);
    if (!options) return std::unexpected(options.error());
    return std::make_unique<HttpClientSource>(ctx.name, std::move(*options));
  };
  return spec;
}

}  // namespace skippr

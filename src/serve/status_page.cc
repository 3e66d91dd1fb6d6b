#include "serve/status_page.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

namespace skippr {
namespace {

constexpr double kChartSeconds = 3600;
constexpr int kChartWidth = 240;
constexpr int kChartHeight = 48;

std::string bytes_text(uint64_t bytes) {
  if (bytes >= (1ull << 30)) return fmt::format("{:.1f} GiB", bytes / double(1ull << 30));
  if (bytes >= (1ull << 20)) return fmt::format("{:.1f} MiB", bytes / double(1ull << 20));
  if (bytes >= (1ull << 10)) return fmt::format("{:.1f} KiB", bytes / double(1ull << 10));
  return fmt::format("{} B", bytes);
}

// The lag column: the source's time lag and what it says is waiting, else when this run last landed.
std::string lag_text(const PipelineStatus& p) {
  std::vector<std::string> parts;
  if (p.source_lag_seconds) parts.push_back(fmt::format("{:.1f} s", *p.source_lag_seconds));
  if (p.source_backlog) {
    const BacklogUnit& unit = *p.source_backlog->unit;
    const uint64_t amount = p.source_backlog->amount;
    parts.push_back(
        fmt::format("{} {} waiting", unit.bytes ? bytes_text(amount) : fmt::format("{}", amount), unit.noun));
  }
  if (parts.empty() && p.seconds_since_last_landing) {
    parts.push_back(fmt::format("landed {:.0f} s ago", *p.seconds_since_last_landing));
  }
  if (parts.empty()) return "&ndash;";
  return fmt::format("{}", fmt::join(parts, "<br>"));
}

// A line over the last hour (x: seconds ago, right = now), scaled to its own maximum, with that maximum as title.
std::string chart(const std::vector<HistorySample>& history, const char* kind, double (*value)(const HistorySample&),
                  const char* unit) {
  double top = 0;
  for (const auto& h : history) top = std::max(top, value(h));
  std::string points;
  for (const auto& h : history) {
    const double x = kChartWidth * (1 - std::min(h.seconds_ago, kChartSeconds) / kChartSeconds);
    const double y = kChartHeight - 2 - (top > 0 ? (kChartHeight - 4) * value(h) / top : 0);
    points += fmt::format("{:.1f},{:.1f} ", x, y);
  }
  return fmt::format(
      "<svg class=\"chart\" data-chart=\"{0}\" viewBox=\"0 0 {1} {2}\" width=\"{1}\" height=\"{2}\" role=\"img\" "
      "aria-label=\"{0} over the last hour, peak {3:.0f} {4}\"><title>{0}: peak {3:.0f} {4} in the last hour</title>"
      "<rect width=\"{1}\" height=\"{2}\" class=\"frame\"/><polyline points=\"{5}\"/></svg>",
      kind, kChartWidth, kChartHeight, top, unit, points);
}

constexpr const char* kStyle = R"(
body{font:14px/1.4 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;background:#f6f7f9;color:#1d2230}
header{padding:12px 16px;background:#1d2230;color:#fff;display:flex;justify-content:space-between;align-items:baseline}
header h1{font-size:18px;margin:0}header span{opacity:.7;font-size:12px}
table{border-collapse:collapse;width:100%;background:#fff}th,td{padding:8px 10px;border-bottom:1px solid #e3e6eb;
text-align:left;vertical-align:top}th{font-size:12px;text-transform:uppercase;color:#5b6275}
.state{display:inline-block;padding:1px 8px;border-radius:10px;font-weight:600;font-size:12px}
.state-running{background:#dff5e3;color:#17692b}.state-retrying{background:#fff1d6;color:#8a5a00}
.state-failed{background:#fde2e1;color:#a11a16}.state-disabled,.state-stopped,.state-starting{background:#e7e9ee;color:#454c5e}
.error{color:#a11a16;font-family:ui-monospace,monospace;font-size:12px;max-width:420px;word-break:break-word}
svg.chart polyline{fill:none;stroke:#2f6fdb;stroke-width:1.5}svg.chart[data-chart=backlog] polyline{stroke:#d9822b}
svg.chart .frame{fill:#fafbfc;stroke:#e3e6eb}.num{font-variant-numeric:tabular-nums}
button{font:inherit;font-size:12px;margin:2px;padding:2px 8px;border:1px solid #c5cad4;border-radius:4px;background:#fff}
@media (max-width:760px){thead{display:none}table,tbody,tr,td{display:block;width:auto}
tr{margin:10px;border:1px solid #e3e6eb;border-radius:6px;background:#fff}td{border:0;padding:4px 10px}
td[data-label]::before{content:attr(data-label) ": ";font-weight:600;color:#5b6275}svg.chart{width:100%;height:auto}}
)";

constexpr const char* kScript = R"(
document.querySelectorAll('button[data-action]').forEach(b =>
  b.addEventListener('click', () => act(b.dataset.pipeline, b.dataset.action)));
function act(name, action) {
  if (action === 'reset' && !confirm('RESET ' + name + ': its WAL and source position are deleted, batches not ' +
      'landed yet included, and the source is read again from the start. Go on?')) return;
  let token = localStorage.getItem('skipprd-token');
  if (!token) { token = prompt('Token (SKIPPR_SERVE_TOKEN) for ' + action + ' ' + name); if (!token) return;
    localStorage.setItem('skipprd-token', token); }
  fetch('/api/pipelines/' + encodeURIComponent(name) + '/' + action, {method: 'POST',
      headers: {'Authorization': 'Bearer ' + token}})
    .then(r => r.json().then(body => { if (r.status === 401) localStorage.removeItem('skipprd-token');
      alert(body.message || body.error); location.reload(); }));
}
)";

}  // namespace

std::string html_escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

namespace {

// Under the all-runs total: this run's rows, and what did not land in the target (rows in the rejects table, records
// in the dead-letter file), every run's, so a run that "landed 0" is not mistaken for one that read nothing.
std::string counts_text(const PipelineStatus& p) {
  std::string out = fmt::format("<br><small class=\"this-run\">this run {}</small>", p.totals.rows_landed);
  if (p.all_runs.rows_rejected > 0) {
    out += fmt::format("<br><small class=\"rejected\">{} rows rejected</small>", p.all_runs.rows_rejected);
  }
  if (p.all_runs.dead_letters > 0) {
    out += fmt::format("<br><small class=\"dead-letters\">{} dead letters</small>", p.all_runs.dead_letters);
  }
  // A source of several streams: each one's rows, rejects and dead letters, folded away (a stream whose records were
  // all dead letters is listed too).
  std::set<std::string> streams;
  for (const auto& [name, member] : DeliveryCounts::stream_fields()) {
    for (const auto& [stream, count] : p.all_runs.*member) streams.insert(stream);
  }
  if (!streams.empty()) {
    out += fmt::format("<details class=\"streams\"><summary>{} streams</summary>", streams.size());
    const auto count_of = [](const std::map<std::string, uint64_t>& counts, const std::string& stream) {
      auto found = counts.find(stream);
      return found == counts.end() ? uint64_t{0} : found->second;
    };
    for (const auto& stream : streams) {
      out += fmt::format("<small>{} {}", html_escape(stream), count_of(p.all_runs.stream_rows_landed, stream));
      if (const auto rejected = count_of(p.all_runs.stream_rows_rejected, stream)) {
        out += fmt::format(", {} rejected", rejected);
      }
      if (const auto dead = count_of(p.all_runs.stream_dead_letters, stream)) {
        out += fmt::format(", {} dead letters", dead);
      }
      out += "</small><br>";
    }
    out += "</details>";
  }
  return out;
}

}  // namespace

std::string status_page_html(const std::vector<PipelineStatus>& pipelines, bool actions_enabled) {
  std::string rows;
  for (const auto& p : pipelines) {
    const double recent = p.history.empty() ? 0 : p.history.back().rows_per_second;
    const std::string name = html_escape(p.name);
    std::string actions;
    if (actions_enabled) {
      for (const char* action : {"enable", "disable", "reset"}) {
        actions += fmt::format("<button data-pipeline=\"{0}\" data-action=\"{1}\">{1}</button>", name, action);
      }
    }
    rows += fmt::format(
        "<tr class=\"pipeline\" data-pipeline=\"{0}\" data-state=\"{1}\">"
        "<td data-label=\"pipeline\"><b>{0}</b><br><small>{2} &rarr; {3}</small></td>"
        "<td data-label=\"state\"><span class=\"state state-{1}\">{1}</span>{4}</td>"
        "<td data-label=\"rows landed\" class=\"num\">{5}<br><small>{6:.0f} rows/s</small>{14}</td>"
        "<td data-label=\"throughput\">{7}</td>"
        "<td data-label=\"backlog\">{8}<br><small class=\"num\">{9} batches waiting</small></td>"
        "<td data-label=\"WAL\" class=\"num\">{10}</td>"
        "<td data-label=\"lag\" class=\"num\">{11}</td>"
        "<td data-label=\"last error\" class=\"error\">{12}</td>"
        "<td>{13}</td></tr>\n",
        name, to_string(p.state), html_escape(p.source), html_escape(p.sink),
        p.restarts > 0 ? fmt::format("<br><small>{} restarts</small>", p.restarts) : "", p.all_runs.rows_landed, recent,
        chart(
            p.history, "throughput", [](const HistorySample& h) { return h.rows_per_second; }, "rows/s"),
        chart(
            p.history, "backlog", [](const HistorySample& h) { return static_cast<double>(h.batches_waiting); },
            "batches"),
        p.totals.batches_waiting, bytes_text(p.totals.wal_bytes), lag_text(p), html_escape(p.last_error), actions,
        counts_text(p));
  }
  return fmt::format(
      "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
      "<meta http-equiv=\"refresh\" content=\"5\"><title>skipprd</title><style>{}</style></head><body>"
      "<header><h1>skipprd</h1><span>{} pipelines &middot; charts: the last hour &middot; reloads every 5 s</span>"
      "</header><table id=\"pipelines\"><thead><tr><th>pipeline</th><th>state</th><th>rows landed</th>"
      "<th>throughput</th><th>backlog</th><th>WAL</th><th>lag</th><th>last error</th><th></th></tr></thead><tbody>\n"
      "{}</tbody></table><script>{}</script></body></html>\n",
      kStyle, pipelines.size(), rows, kScript);
}

std::string status_json(const std::vector<PipelineStatus>& pipelines) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& p : pipelines) {
    nlohmann::json history = nlohmann::json::array();
    for (const auto& h : p.history) {
      history.push_back({{"seconds_ago", h.seconds_ago},
                         {"rows_per_second", h.rows_per_second},
                         {"batches_waiting", h.batches_waiting}});
    }
    nlohmann::json all_runs = nlohmann::json::object();
    for (const auto& [name, member] : DeliveryCounts::fields()) all_runs[name] = p.all_runs.*member;
    for (const auto& [name, member] : DeliveryCounts::stream_fields()) {
      if (!(p.all_runs.*member).empty()) all_runs[fmt::format("stream_{}", name)] = p.all_runs.*member;
    }
    out.push_back({{"pipeline", p.name},
                   {"source", p.source},
                   {"sink", p.sink},
                   {"state", to_string(p.state)},
                   {"restarts", p.restarts},
                   {"last_error", p.last_error},
                   {"rows_read", p.totals.rows_read},
                   {"rows_landed", p.totals.rows_landed},
                   {"rows_rejected", p.totals.rows_rejected},
                   {"dead_letters", p.totals.dead_letters},
                   {"batches_landed", p.totals.batches_landed},
                   {"all_runs", all_runs},
                   {"batches_waiting", p.totals.batches_waiting},
                   {"wal_bytes", p.totals.wal_bytes},
                   {"source_lag_seconds", p.source_lag_seconds ? nlohmann::json(*p.source_lag_seconds) : nullptr},
                   {"source_backlog", p.source_backlog ? nlohmann::json{{"unit", p.source_backlog->unit->name},
                                                                        {"amount", p.source_backlog->amount}}
                                                       : nlohmann::json(nullptr)},
                   {"history", history}});
  }
  // An error message from a destination may hold bytes that are not UTF-8: replaced, never thrown on.
  return out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace skippr

#include "sources/sample/sample_source.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "core/time_util.h"

namespace skippr {
namespace {

constexpr std::array<std::string_view, 4> kEventTypes = {"trip_start", "pause", "resume", "trip_end"};
constexpr std::array<std::string_view, 16> kStations = {
    "Hyde Park Corner", "Waterloo Station", "King's Cross",       "Borough Market", "Canary Wharf", "Camden Lock",
    "Soho Square",      "Tower Bridge",     "Brick Lane",         "Victoria Park",  "Paddington",   "Clapham Common",
    "Greenwich Pier",   "Angel Islington",  "Shoreditch High St", "South Bank"};
constexpr size_t kEstimatedRowBytes = 190;  // measured average of a serialized row; only sizes the polls

// splitmix64: a cheap, well-mixed hash, so row n's values depend on (seed, n) alone.
uint64_t mix(uint64_t seed, uint64_t row, uint64_t salt) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + row * 0xBF58476D1CE4E5B9ull + salt * 0x94D049BB133111EBull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

class SampleSource final : public Source {
 public:
  SampleSource(uint64_t rows, uint64_t seed, int64_t start_at_us)
      : rows_(rows), seed_(seed), start_at_us_(start_at_us) {
    for (int major = 1; major <= 3; ++major) {
      for (int minor = 0; minor < 10; ++minor)
        firmware_.push_back(fmt::format("v{}.{}.{}", major, minor, minor * 7 % 10));
    }
  }

  // Its positions name data that can be read again from there, whoever committed them.
  bool resumes_from_destination() const override { return true; }
  Status seek(const Position& position) override {
    next_row_ = 1;
    if (position.empty()) return ok();
    auto parsed = nlohmann::json::parse(position.token, nullptr, false);
    if (!parsed.is_object() || !parsed.contains("next_row") || !parsed["next_row"].is_number_unsigned()) {
      return fail(ErrorKind::kCorruption,
                  fmt::format("Sample source: unreadable resume position '{}'", position.token));
    }
    next_row_ = parsed["next_row"].get<uint64_t>();
    return ok();
  }

  Result<Poll> poll(const Budget& budget) override {
    Poll result;
    const uint64_t remaining = next_row_ > rows_ ? 0 : rows_ - next_row_ + 1;
    const uint64_t count =
        std::min<uint64_t>({remaining, budget.max_rows, std::max<uint64_t>(1, budget.max_bytes / kEstimatedRowBytes)});
    result.records = generate(next_row_, count);
    next_row_ += count;
    result.position_after = position();
    result.drained = next_row_ > rows_;
    return result;
  }

 private:
  Position position() const { return Position{fmt::format(R"({{"next_row":{}}})", next_row_)}; }

  Batch generate(uint64_t first, uint64_t count) const {
    Batch b;
    b.add_column({"trip_id", Type::kInt64});
    b.add_column({"rider_id", Type::kInt64});
    b.add_column({"bike_id", Type::kInt64});
    b.add_column({"event_type", Type::kString});
    b.add_column({"event_time", Type::kTimestamp});
    b.add_column({"station", Type::kString});
    b.add_column({"duration_s", Type::kDouble});
    b.add_column({"firmware", Type::kString});
    b.add_column({"metadata", Type::kJson});
    for (auto& c : b.columns) c.reserve(count, count * 24);
    auto& cols = b.columns;
    Column &trip = cols[0], &rider = cols[1], &bike = cols[2], &event = cols[3], &time = cols[4], &station = cols[5],
           &duration = cols[6], &firmware = cols[7], &metadata = cols[8];
    fmt::memory_buffer json;
    for (uint64_t n = first; n < first + count; ++n) {
      const uint64_t h = mix(seed_, n, 1);
      const uint64_t trip_no = (n - 1) / 4;  // four events per trip: start, pause, resume, end
      trip.append_int(static_cast<int64_t>(n));
      rider.append_int(static_cast<int64_t>(1 + mix(seed_, trip_no, 2) % 50000));
      bike.append_int(static_cast<int64_t>(1 + mix(seed_, trip_no, 3) % 5000));
      event.append_string(kEventTypes[(n - 1) % 4]);
      time.append_int(start_at_us_ + static_cast<int64_t>(n - 1) * 1500000 + static_cast<int64_t>(h % 1000000));
      station.append_string(kStations[(h >> 20) % kStations.size()]);
      duration.append_double(static_cast<double>((h >> 8) % 360000) / 100.0);
      firmware.append_string(firmware_[(h >> 40) % firmware_.size()]);
      json.clear();
      fmt::format_to(std::back_inserter(json), R"({{"battery_pct":{},"temp_c":{}.{},"dock":{}}})", (h >> 12) % 101,
                     static_cast<int>((h >> 24) % 35), (h >> 32) % 10, (h >> 44) % 40);
      metadata.append_string(std::string_view(json.data(), json.size()));
    }
    b.rows = count;
    return b;
  }

  uint64_t rows_;
  uint64_t seed_;
  int64_t start_at_us_;
  uint64_t next_row_ = 1;
  std::vector<std::string> firmware_;
};

}  // namespace

ConnectorSpec sample_source_spec() {
  ConnectorSpec spec;
  spec.type_name = "Sample";
  spec.is_source = true;
  spec.summary = "a deterministic bike-hire event generator";
  spec.params = {
      {"rows", ParamType::kInt, false, 100000, "how many rows to generate (trip_id 1..rows)"},
      {"seed", ParamType::kInt, false, 1, "the generator's seed: same seed, same rows"},
      {"start_at", ParamType::kString, false, "2024-01-01T00:00:00Z", "event_time of the first row (ISO 8601, UTC)"},
  };
  spec.make_source = [](const ConnectorContext& ctx) -> Result<std::unique_ptr<Source>> {
    const auto& p = ctx.params;
    const int64_t rows = p.value("rows", int64_t{100000});
    if (rows < 0) return fail(ErrorKind::kConfig, fmt::format("Sample source '{}': rows must be >= 0", ctx.name));
    const std::string start_text = p.value("start_at", std::string("2024-01-01T00:00:00Z"));
    auto start = parse_iso8601_micros(start_text);
    if (!start) {
      return fail(ErrorKind::kConfig, fmt::format("Sample source '{}': start_at '{}' is not an ISO 8601 time such as "
                                                  "2024-01-01T00:00:00Z",
                                                  ctx.name, start_text));
    }
    return std::make_unique<SampleSource>(static_cast<uint64_t>(rows), static_cast<uint64_t>(p.value("seed", 1)),
                                          *start);
  };
  return spec;
}

}  // namespace skippr

#include "support/jsonl_data.h"

#include <fmt/format.h>
#include <zlib.h>

#include <fstream>
#include <stdexcept>

namespace skippr::test {

namespace {

uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// One good line; nested values are written minified, the form skipprd keeps them in.
std::string good_line(uint64_t id, bool evolved) {
  const uint64_t h = mix(id);
  std::string line =
      fmt::format(R"({{"id":{},"name":"user \"{}\" caf\u00e9 {}","amount":{}.{:02},"active":{},"tags":["t{}","t{}"],)"
                  R"("meta":{{"k":{},"s":"v{}","deep":{{"n":[1,2,{}]}}}}}})",
                  id, h % 1000, id % 13, h % 100000, (h >> 20) % 100, (h >> 7) % 2 ? "true" : "false", h % 5,
                  (h >> 3) % 7, h % 17, (h >> 11) % 3, (h >> 5) % 9);
  if (evolved) {
    line.pop_back();
    line += fmt::format(R"(,"country":"c{}","score":{}}})", (h >> 13) % 40, static_cast<int64_t>(h % 2001) - 1000);
  }
  return line;
}

std::string bad_line(uint64_t n) {
  switch (n % 4) {
    case 0:
      return fmt::format(R"({{"id":{},"name":"cut short)", n);
    case 1:
      return "this is not json";
    case 2:
      return R"([1,2,3])";
    default:
      return fmt::format(R"({{"id":"text where a number was","name":"x{}"}})", n);
  }
}

class Output {
 public:
  Output(const std::filesystem::path& path, bool gzip) : gzip_(gzip) {
    if (gzip_) {
      gz_ = gzopen(path.c_str(), "wb1");
      if (!gz_) throw std::runtime_error("cannot write " + path.string());
    } else {
      plain_.open(path, std::ios::binary);
    }
  }
  ~Output() {
    if (gz_) gzclose(gz_);
  }
  void write(const std::string& s) {
    if (gzip_) {
      if (gzwrite(gz_, s.data(), static_cast<unsigned>(s.size())) != static_cast<int>(s.size())) {
        throw std::runtime_error("gzwrite failed");
      }
    } else {
      plain_ << s;
    }
  }

 private:
  bool gzip_;
  gzFile gz_ = nullptr;
  std::ofstream plain_;
};

}  // namespace

JsonlData write_jsonl_data(const std::filesystem::path& dir, const JsonlDataSpec& spec) {
  JsonlData data;
  data.expected = dir / "expected.jsonl";
  std::ofstream expected(data.expected, std::ios::binary);
  uint64_t id = 0;
  const int big_index = spec.files / 3;
  for (int f = 0; f < spec.files; ++f) {
    const auto folder = dir / "in" / fmt::format("group-{:02}", f / 50);
    std::filesystem::create_directories(folder);
    const auto path = folder / fmt::format("part-{:04}.jsonl{}", f, spec.gzip ? ".gz" : "");
    Output out(path, spec.gzip);
    const uint64_t h = mix(spec.seed * 1000 + f);
    // Uneven: mostly small, some empty, a few larger; one big one.
    uint64_t lines = h % 10 == 0 ? 0 : h % 7 == 0 ? 3000 + h % 2000 : 20 + h % 600;
    if (spec.max_lines > 0) lines = std::min(lines, spec.max_lines);
    if (f == big_index) lines = spec.big_file_bytes / 150;  // a line is about 150 bytes
    const bool evolved = f >= spec.evolved_from;
    std::string chunk;
    for (uint64_t n = 1; n <= lines; ++n) {
      std::string line;
      if (spec.bad_every > 0 && f % 5 == 1 && n % spec.bad_every == 3) {
        line = bad_line(n);
        data.bad.insert({path.string(), n});
      } else {
        line = good_line(++id, evolved);
        expected << line << '\n';
        ++data.good_lines;
      }
      chunk += line;
      // The last line of some files has no newline at all.
      if (n < lines || h % 3 != 0) chunk += '\n';
      if (chunk.size() > (1 << 20)) {
        data.bytes += chunk.size();
        out.write(chunk);
        chunk.clear();
      }
    }
    data.bytes += chunk.size();
    out.write(chunk);
  }
  return data;
}

std::string expected_relation(const std::filesystem::path& expected) {
  return fmt::format(
      "read_json('{}', format = 'newline_delimited', columns = {{id: 'BIGINT', name: 'VARCHAR', amount: 'DOUBLE', "
      "active: 'BOOLEAN', tags: 'JSON', meta: 'JSON', country: 'VARCHAR', score: 'BIGINT'}})",
      expected.string());
}

std::string digest_sql(const std::string& relation) {
  return fmt::format(
      "SELECT count(*)::VARCHAR || '|' || count(DISTINCT id)::VARCHAR || '|' || "
      "coalesce(sum(hash(id, name, amount, active, tags::VARCHAR, meta::VARCHAR, country, score)::HUGEINT), 0)"
      "::VARCHAR FROM {}",
      relation);
}

}  // namespace skippr::test

#include "sources/postgres/pgoutput.h"

#include <fmt/format.h>

namespace skippr {
namespace {

// Reads big-endian integers and NUL-terminated strings; the first short read marks the whole message bad.
class Reader {
 public:
  explicit Reader(std::string_view bytes) : bytes_(bytes) {}
  bool ok() const { return ok_; }
  bool at_end() const { return pos_ == bytes_.size(); }

  uint64_t u(size_t width) {
    if (!ok_ || bytes_.size() - pos_ < width) return fail_read();
    uint64_t v = 0;
    for (size_t i = 0; i < width; ++i) v = (v << 8) | static_cast<uint8_t>(bytes_[pos_++]);
    return v;
  }
  char byte() { return static_cast<char>(u(1)); }
  std::string cstring() {
    const size_t end = ok_ ? bytes_.find('\0', pos_) : std::string_view::npos;
    if (end == std::string_view::npos) return std::string(fail_read(), '\0');
    std::string s(bytes_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return s;
  }
  std::string bytes(size_t n) {
    if (!ok_ || bytes_.size() - pos_ < n) return std::string(fail_read(), '\0');
    std::string s(bytes_.substr(pos_, n));
    pos_ += n;
    return s;
  }
  PgoTuple tuple() {
    PgoTuple row(u(2));
    for (auto& value : row) {
      const char kind = byte();
      if (kind == 't') {
        value.kind = PgoValue::Kind::kText;
        value.text = bytes(u(4));
      } else if (kind == 'u') {
        value.kind = PgoValue::Kind::kUnchangedToast;
      } else if (kind != 'n') {
        fail_read();  // 'b' (binary) exists only in protocol 2+, which this source does not request
      }
      if (!ok_) return {};
    }
    return row;
  }

 private:
  uint64_t fail_read() {
    ok_ = false;
    pos_ = bytes_.size();
    return 0;
  }
  std::string_view bytes_;
  size_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace

Result<PgoMessage> decode_pgoutput(std::string_view bytes) {
  if (bytes.empty()) return fail(ErrorKind::kCorruption, "empty pgoutput message");
  const char tag = bytes[0];
  Reader r(bytes.substr(1));
  PgoMessage message;
  switch (tag) {
    case 'B': {
      PgoBegin m;
      m.final_lsn = r.u(8);
      m.commit_time = static_cast<int64_t>(r.u(8));
      m.xid = static_cast<uint32_t>(r.u(4));
      message = m;
      break;
    }
    case 'C': {
      PgoCommit m;
      r.u(1);  // flags, unused
      m.commit_lsn = r.u(8);
      m.end_lsn = r.u(8);
      m.commit_time = static_cast<int64_t>(r.u(8));
      message = m;
      break;
    }
    case 'R': {
      PgoRelation m;
      m.relid = static_cast<uint32_t>(r.u(4));
      m.schema = r.cstring();
      m.name = r.cstring();
      m.replica_identity = r.byte();
      m.columns.resize(r.u(2));
      for (auto& c : m.columns) {
        c.key = (r.u(1) & 1) != 0;
        c.name = r.cstring();
        c.type_oid = static_cast<uint32_t>(r.u(4));
        c.type_mod = static_cast<int32_t>(r.u(4));
      }
      message = std::move(m);
      break;
    }
    case 'I': {
      PgoInsert m;
      m.relid = static_cast<uint32_t>(r.u(4));
      if (r.byte() != 'N') return fail(ErrorKind::kCorruption, "pgoutput Insert without a new tuple");
      m.row = r.tuple();
      message = std::move(m);
      break;
    }
    case 'U': {
      PgoUpdate m;
      m.relid = static_cast<uint32_t>(r.u(4));
      char kind = r.byte();
      if (kind == 'K' || kind == 'O') {
        m.old_kind = kind;
        m.old_row = r.tuple();
        kind = r.byte();
      }
      if (kind != 'N') return fail(ErrorKind::kCorruption, "pgoutput Update without a new tuple");
      m.row = r.tuple();
      message = std::move(m);
      break;
    }
    case 'D': {
      PgoDelete m;
      m.relid = static_cast<uint32_t>(r.u(4));
      m.old_kind = r.byte();
      if (m.old_kind != 'K' && m.old_kind != 'O') {
        return fail(ErrorKind::kCorruption, "pgoutput Delete without an old key or row");
      }
      m.old_row = r.tuple();
      message = std::move(m);
      break;
    }
    case 'T': {
      PgoTruncate m;
      m.relids.resize(r.u(4));
      r.u(1);  // options (CASCADE / RESTART IDENTITY)
      for (auto& relid : m.relids) relid = static_cast<uint32_t>(r.u(4));
      message = std::move(m);
      break;
    }
    case 'O':
    case 'Y':
    case 'M':
      return PgoOther{tag};
    default:
      return fail(ErrorKind::kCorruption, fmt::format("unknown pgoutput message '{}'", tag));
  }
  if (!r.ok() || !r.at_end()) {
    return fail(ErrorKind::kCorruption, fmt::format("malformed pgoutput message '{}' ({} bytes)", tag, bytes.size()));
  }
  return message;
}

}  // namespace skippr

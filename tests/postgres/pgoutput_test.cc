// The pure parts of the CDC source: the pgoutput decoder on hand-built messages, replication frames, LSN text, the
// position token, the order token, and the output-text converter that must give the snapshot's values.
#include <gtest/gtest.h>

#include <cstring>

#include "core/change_fields.h"
#include "sources/postgres/cdc_position.h"
#include "sources/postgres/pg_table_reader.h"
#include "sources/postgres/pgoutput.h"
#include "sources/postgres/replication_stream.h"

namespace skippr {
namespace {

// Builds protocol messages: big-endian integers and NUL-terminated strings.
struct Bytes {
  std::string s;
  Bytes& c(char v) {
    s.push_back(v);
    return *this;
  }
  Bytes& u(uint64_t v, int width) {
    for (int i = width - 1; i >= 0; --i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
    return *this;
  }
  Bytes& str(const std::string& v) {
    s += v;
    s.push_back('\0');
    return *this;
  }
  Bytes& text(const std::string& v) {
    c('t').u(v.size(), 4);
    s += v;
    return *this;
  }
};

TEST(Pgoutput, DecodesBeginAndCommit) {
  auto begin = decode_pgoutput(Bytes().c('B').u(0x16B374D848, 8).u(777, 8).u(4242, 4).s);
  ASSERT_TRUE(begin) << begin.error().message;
  const auto& b = std::get<PgoBegin>(*begin);
  EXPECT_EQ(b.final_lsn, 0x16B374D848u);
  EXPECT_EQ(b.xid, 4242u);

  auto commit = decode_pgoutput(Bytes().c('C').u(0, 1).u(0x100, 8).u(0x180, 8).u(5, 8).s);
  ASSERT_TRUE(commit) << commit.error().message;
  EXPECT_EQ(std::get<PgoCommit>(*commit).commit_lsn, 0x100u);
  EXPECT_EQ(std::get<PgoCommit>(*commit).end_lsn, 0x180u);
}

TEST(Pgoutput, DecodesRelationAndTuplesWithNullsAndUnchangedToast) {
  auto rel = decode_pgoutput(Bytes()
                                 .c('R')
                                 .u(16384, 4)
                                 .str("shop")
                                 .str("items")
                                 .c('d')
                                 .u(2, 2)
                                 .u(1, 1)
                                 .str("id")
                                 .u(23, 4)
                                 .u(0xffffffff, 4)
                                 .u(0, 1)
                                 .str("name")
                                 .u(25, 4)
                                 .u(0xffffffff, 4)
                                 .s);
  ASSERT_TRUE(rel) << rel.error().message;
  const auto& r = std::get<PgoRelation>(*rel);
  EXPECT_EQ(r.schema, "shop");
  EXPECT_EQ(r.name, "items");
  ASSERT_EQ(r.columns.size(), 2u);
  EXPECT_TRUE(r.columns[0].key);
  EXPECT_FALSE(r.columns[1].key);
  EXPECT_EQ(r.columns[1].type_oid, 25u);
  EXPECT_EQ(r.columns[1].type_mod, -1);

  auto ins = decode_pgoutput(Bytes().c('I').u(16384, 4).c('N').u(2, 2).text("7").c('n').s);
  ASSERT_TRUE(ins) << ins.error().message;
  const auto& i = std::get<PgoInsert>(*ins);
  ASSERT_EQ(i.row.size(), 2u);
  EXPECT_EQ(i.row[0].text, "7");
  EXPECT_EQ(i.row[1].kind, PgoValue::Kind::kNull);

  // A key-changing update: the old key ('K') then the new row, whose large value is unchanged ('u').
  auto upd =
      decode_pgoutput(Bytes().c('U').u(16384, 4).c('K').u(2, 2).text("7").c('n').c('N').u(2, 2).text("8").c('u').s);
  ASSERT_TRUE(upd) << upd.error().message;
  const auto& u = std::get<PgoUpdate>(*upd);
  EXPECT_EQ(u.old_kind, 'K');
  EXPECT_EQ(u.old_row[0].text, "7");
  EXPECT_EQ(u.row[0].text, "8");
  EXPECT_EQ(u.row[1].kind, PgoValue::Kind::kUnchangedToast);

  auto plain = decode_pgoutput(Bytes().c('U').u(1, 4).c('N').u(1, 2).text("x").s);
  ASSERT_TRUE(plain);
  EXPECT_EQ(std::get<PgoUpdate>(*plain).old_kind, 0);

  auto del = decode_pgoutput(Bytes().c('D').u(16384, 4).c('O').u(1, 2).text("9").s);
  ASSERT_TRUE(del) << del.error().message;
  EXPECT_EQ(std::get<PgoDelete>(*del).old_kind, 'O');
  EXPECT_EQ(std::get<PgoDelete>(*del).old_row[0].text, "9");

  auto trunc = decode_pgoutput(Bytes().c('T').u(2, 4).u(0, 1).u(10, 4).u(11, 4).s);
  ASSERT_TRUE(trunc);
  EXPECT_EQ(std::get<PgoTruncate>(*trunc).relids, (std::vector<uint32_t>{10, 11}));
  EXPECT_TRUE(std::holds_alternative<PgoOther>(*decode_pgoutput(Bytes().c('O').u(1, 8).str("origin").s)));
}

TEST(Pgoutput, RefusesTruncatedAndUnknownMessages) {
  EXPECT_FALSE(decode_pgoutput(""));
  EXPECT_FALSE(decode_pgoutput(Bytes().c('B').u(1, 8).s));                                         // short
  EXPECT_FALSE(decode_pgoutput(Bytes().c('I').u(1, 4).c('N').u(1, 2).c('t').u(10, 4).s + "abc"));  // value cut
  EXPECT_FALSE(decode_pgoutput(Bytes().c('I').u(1, 4).c('N').u(1, 2).c('b').s));           // binary: protocol 2 only
  EXPECT_FALSE(decode_pgoutput(Bytes().c('C').u(0, 1).u(1, 8).u(2, 8).u(3, 8).c('x').s));  // trailing byte
  EXPECT_FALSE(decode_pgoutput("Z"));
}

TEST(ReplicationFrames, DecodeXLogDataAndKeepaliveAndEncodeStatusUpdate) {
  auto w = decode_replication_frame(Bytes().c('w').u(0x10, 8).u(0x20, 8).u(0, 8).s + "Bpayload");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->kind, ReplicationFrame::Kind::kXLogData);
  EXPECT_EQ(w->wal_start, 0x10u);
  EXPECT_EQ(w->payload, "Bpayload");
  auto k = decode_replication_frame(Bytes().c('k').u(0x30, 8).u(0, 8).c(1).s);
  ASSERT_TRUE(k);
  EXPECT_EQ(k->kind, ReplicationFrame::Kind::kKeepalive);
  EXPECT_EQ(k->wal_end, 0x30u);
  EXPECT_TRUE(k->reply_requested);
  EXPECT_FALSE(decode_replication_frame("k123"));

  const std::string r = encode_status_update(0x1122334455667788, 946684800LL * 1000000 + 5, true);
  ASSERT_EQ(r.size(), 34u);
  EXPECT_EQ(r[0], 'r');
  EXPECT_EQ(r.substr(9, 8), Bytes().u(0x1122334455667788, 8).s);  // flush
  EXPECT_EQ(r.substr(25, 8), Bytes().u(5, 8).s);                  // micros since 2000-01-01
  EXPECT_EQ(r[33], 1);
}

TEST(Lsn, TextRoundTrips) {
  EXPECT_EQ(parse_lsn("16/B374D848"), 0x16B374D848u);
  EXPECT_EQ(parse_lsn("0/0"), 0u);
  EXPECT_EQ(format_lsn(0x16B374D848), "16/B374D848");
  EXPECT_FALSE(parse_lsn("16B374D848"));
  EXPECT_FALSE(parse_lsn("1/zz"));
  EXPECT_FALSE(parse_lsn("/1"));
}

TEST(CdcPositionToken, RoundTripsAndCoversExactlyTheDeliveredEvents) {
  CdcPosition p = CdcPosition::stream_from("s", 0x500);
  // The start of the stream covers nothing at the consistent point itself.
  EXPECT_FALSE(p.covers(0x500, 0));
  EXPECT_TRUE(p.covers(0x4ff, 7));
  EXPECT_EQ(p.confirmable_lsn(), 0x500u);
  p.index = 3;  // mid-transaction: events 0..2 delivered
  auto back = CdcPosition::parse(p.to_position());
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_TRUE(back->covers(0x500, 2));
  EXPECT_FALSE(back->covers(0x500, 3));
  EXPECT_FALSE(back->covers(0x600, 0));
  EXPECT_EQ(back->confirmable_lsn(), 0x500u);  // never past a transaction not fully delivered
  p.tx_done = true;
  p.end_lsn = 0x580;
  back = CdcPosition::parse(p.to_position());
  ASSERT_TRUE(back);
  EXPECT_TRUE(back->covers(0x500, 99));
  EXPECT_EQ(back->confirmable_lsn(), 0x580u);

  CdcPosition s;
  s.slot = "s";
  s.snapshot = true;
  s.consistent_lsn = 0x42;
  s.after = {"17", "b"};
  back = CdcPosition::parse(s.to_position());
  ASSERT_TRUE(back);
  EXPECT_TRUE(back->snapshot);
  EXPECT_EQ(back->after, s.after);
  EXPECT_EQ(back->confirmable_lsn(), 0u);
  EXPECT_FALSE(CdcPosition::parse(Position{R"({"after":[]})"}));
}

TEST(CdcOrderToken, IsLsnShiftedPlusSequenceInDecimal) {
  EXPECT_EQ(change_order_token(0, 0), "0");
  EXPECT_EQ(change_order_token(1, 2), "4294967298");
  // Beyond 64 bits: LSN 0xFFFFFFFFFFFFFFFF << 32 + 1.
  EXPECT_EQ(change_order_token(~0ULL, 1), "79228162514264337589248983041");
}

std::string cell(const Column& c) {
  if (!c.is_valid(0)) return "NULL";
  switch (c.type) {
    case Type::kString:
    case Type::kJson:
    case Type::kBinary:
      return std::string(c.string_at(0));
    case Type::kDouble: {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.17g", c.double_at(0));
      return buf;
    }
    default:
      return std::to_string(c.int_at(0));
  }
}

std::string convert(const std::string& pg_type, const std::optional<std::string>& text) {
  PgSourceColumn source{"c", pg_type, pg_source_type(pg_type)};
  Column column(source.type);
  auto st = pg_append_output_text(column, source, text);
  return st ? cell(column) : "error: " + st.error().message;
}

TEST(PgOutputText, ConvertsToTheSnapshotPathsValues) {
  EXPECT_EQ(convert("timestamp with time zone", "2024-03-01 00:00:00.5+00"), "1709251200500000");
  EXPECT_EQ(convert("timestamp without time zone", "1970-01-01 00:00:01"), "1000000");
  EXPECT_EQ(convert("timestamp(3) with time zone", "1969-12-31 23:59:59.999+00"), "-1000");
  EXPECT_EQ(convert("date", "2024-02-29"), "19782");
  EXPECT_EQ(convert("date", "1969-12-31"), "-1");
  // real widens from float like ::float8 does; double keeps every digit (extra_float_digits = 3).
  EXPECT_EQ(convert("real", "0.1"), "0.10000000149011612");
  EXPECT_EQ(convert("double precision", "0.3333333333333333"), "0.33333333333333331");
  EXPECT_EQ(convert("bigint", "-42"), "-42");
  EXPECT_EQ(convert("boolean", "t"), "1");
  EXPECT_EQ(convert("bytea", "\\x00ff"), std::string("\0\xff", 2));
  EXPECT_EQ(convert("numeric(12,2)", "-1.50"), "-1.50");
  EXPECT_EQ(convert("jsonb", R"({"a": 1})"), R"({"a": 1})");
  EXPECT_EQ(convert("text", std::nullopt), "NULL");
  EXPECT_EQ(convert("character(5)", "ab   "), "ab");
  EXPECT_EQ(convert("character varying(5)", "ab "), "ab ");
  EXPECT_EQ(convert("timestamp with time zone", "infinity").substr(0, 6), "error:");
}

}  // namespace
}  // namespace skippr

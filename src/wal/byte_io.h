// Little-endian encoding of integers and length-prefixed strings, for the WAL's on-disk structures. The reader is
// bounds-checked: a short or malformed buffer makes it fail, never read past the end.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace skippr::wal {

class ByteWriter {
 public:
  explicit ByteWriter(std::string& out) : out_(out) {}
  void u8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void u32(uint32_t v) { put(v, 4); }
  void u64(uint64_t v) { put(v, 8); }
  void bytes(std::string_view v) { out_.append(v); }
  void str(std::string_view v) {  // u32 length + bytes
    u32(static_cast<uint32_t>(v.size()));
    bytes(v);
  }

 private:
  void put(uint64_t v, int width) {
    for (int i = 0; i < width; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
  }
  std::string& out_;
};

class ByteReader {
 public:
  explicit ByteReader(std::string_view in) : in_(in) {}
  std::optional<uint8_t> u8() {
    auto v = get(1);
    return v ? std::optional<uint8_t>(static_cast<uint8_t>(*v)) : std::nullopt;
  }
  std::optional<uint32_t> u32() {
    auto v = get(4);
    return v ? std::optional<uint32_t>(static_cast<uint32_t>(*v)) : std::nullopt;
  }
  std::optional<uint64_t> u64() { return get(8); }
  std::optional<std::string_view> bytes(size_t n) {
    if (remaining() < n) return std::nullopt;
    std::string_view v = in_.substr(pos_, n);
    pos_ += n;
    return v;
  }
  std::optional<std::string_view> str() {
    auto n = u32();
    return n ? bytes(*n) : std::nullopt;
  }
  size_t remaining() const { return in_.size() - pos_; }
  size_t position() const { return pos_; }
  std::string_view rest() const { return in_.substr(pos_); }

 private:
  std::optional<uint64_t> get(int width) {
    if (remaining() < static_cast<size_t>(width)) return std::nullopt;
    uint64_t v = 0;
    for (int i = 0; i < width; ++i) v |= uint64_t(static_cast<uint8_t>(in_[pos_ + i])) << (8 * i);
    pos_ += width;
    return v;
  }
  std::string_view in_;
  size_t pos_ = 0;
};

}  // namespace skippr::wal

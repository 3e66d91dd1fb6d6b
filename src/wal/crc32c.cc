#include "wal/crc32c.h"

#include <nmmintrin.h>

#include <array>
#include <cstring>

namespace skippr::crc32c {

namespace {

constexpr uint32_t kPolynomial = 0x82F63B78;  // Castagnoli, bit-reversed

constexpr std::array<uint32_t, 256> make_table() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t crc = i;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (kPolynomial & (0u - (crc & 1u)));
    table[i] = crc;
  }
  return table;
}

constexpr std::array<uint32_t, 256> kTable = make_table();

}  // namespace

uint32_t extend_portable(uint32_t crc, const void* data, size_t size) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint32_t c = ~crc;
  for (size_t i = 0; i < size; ++i) c = kTable[(c ^ p[i]) & 0xFF] ^ (c >> 8);
  return ~c;
}

__attribute__((target("sse4.2"))) uint32_t extend_sse42(uint32_t crc, const void* data, size_t size) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint64_t c = ~crc;
  while (size >= 8) {
    uint64_t word;
    std::memcpy(&word, p, sizeof word);  // unaligned-safe; the instruction consumes little-endian words
    c = _mm_crc32_u64(c, word);
    p += 8;
    size -= 8;
  }
  auto c32 = static_cast<uint32_t>(c);
  while (size-- > 0) c32 = _mm_crc32_u8(c32, *p++);
  return ~c32;
}

bool has_sse42() {
  static const bool supported = __builtin_cpu_supports("sse4.2");
  return supported;
}

uint32_t extend(uint32_t crc, const void* data, size_t size) {
  return has_sse42() ? extend_sse42(crc, data, size) : extend_portable(crc, data, size);
}

}  // namespace skippr::crc32c

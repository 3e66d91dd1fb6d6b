#include "core/crc32c.h"

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

// combine() works in GF(2)[x] modulo the CRC polynomial, in the reflected bit order of the checksum: bit 31 holds
// x^0, bit 0 holds x^31. Appending len_b zero bytes to a multiplies its (unconditioned) register by x^(8 len_b), and
// the pre/post inversion of both checksums cancels out in the XOR, so
//   value(a + b) = value(a) * x^(8 len_b) mod P  xor  value(b).

// a(x) * b(x) mod P(x).
constexpr uint32_t multiply_mod_p(uint32_t a, uint32_t b) {
  uint32_t product = 0;
  for (uint32_t bit = 1u << 31; bit != 0; bit >>= 1) {
    if ((a & bit) != 0) product ^= b;
    b = (b & 1u) != 0 ? (b >> 1) ^ kPolynomial : b >> 1;  // b *= x
  }
  return product;
}

// kPowers[k] = x^(2^k) mod P, so any x^n is a product of the entries for the bits of n. 64 + 3 entries cover every
// 64-bit byte count in bits, without assuming anything about the period of x modulo P.
constexpr std::array<uint32_t, 67> make_powers() {
  std::array<uint32_t, 67> powers{};
  powers[0] = 1u << 30;  // x^1
  for (size_t k = 1; k < powers.size(); ++k) powers[k] = multiply_mod_p(powers[k - 1], powers[k - 1]);
  return powers;
}

constexpr std::array<uint32_t, 67> kPowers = make_powers();

// x^(n * 2^k) mod P.
uint32_t x_pow_mod_p(uint64_t n, unsigned k) {
  uint32_t power = 1u << 31;  // x^0
  for (; n != 0; n >>= 1, ++k) {
    if ((n & 1u) != 0) power = multiply_mod_p(kPowers[k], power);
  }
  return power;
}

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

uint32_t combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b) {
  return multiply_mod_p(x_pow_mod_p(len_b, 3), crc_a) ^ crc_b;  // x^(8 len_b): len_b * 2^3
}

uint32_t extend(uint32_t crc, const void* data, size_t size) {
  return has_sse42() ? extend_sse42(crc, data, size) : extend_portable(crc, data, size);
}

}  // namespace skippr::crc32c

// CRC-32C (Castagnoli), the checksum of every WAL record and every cluster frame. Uses the SSE4.2 crc32 instruction
// when the CPU has it (checked once at run time) and a byte table otherwise; both give identical results.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace skippr::crc32c {

// Continues a checksum over more data: extend(extend(0, a), b) == value(a + b).
uint32_t extend(uint32_t crc, const void* data, size_t size);
inline uint32_t value(std::string_view data) { return extend(0, data.data(), data.size()); }

// The checksum of a + b from crc_a = value(a), crc_b = value(b) and b's length alone, in O(log len_b) without
// touching b's bytes: lets a large part be checksummed off the commit path and joined to its small header later.
uint32_t combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);

// Both implementations, exposed so the tests can check them against each other.
uint32_t extend_portable(uint32_t crc, const void* data, size_t size);
uint32_t extend_sse42(uint32_t crc, const void* data, size_t size);  // only call when has_sse42()
bool has_sse42();

}  // namespace skippr::crc32c

// Test support: folders of JSON-lines files, one per stream, for the File source's in/{stream}/*.jsonl.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace skippr::test {

// Five streams of different shapes: "public.items" lands as <prefix>public_items, the even ones have an "amount"
// field, and "events" gains a "country" field in its second half of files.
const std::vector<std::string>& stream_names();

// `files` files of `lines` lines in <root>/in/<stream>/ for each stream; returns the rows written per stream. Every
// row has an "id" unique within its stream.
std::map<std::string, uint64_t> write_stream_files(const std::filesystem::path& root, int files, int lines);

// The table a stream lands in from the table pattern <prefix>{stream}: every character of its name other than a
// letter, a digit or _ made _.
std::string stream_table(const std::string& prefix, const std::string& stream);

}  // namespace skippr::test

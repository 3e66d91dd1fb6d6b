#include "sources/file/file_position.h"

#include <nlohmann/json.hpp>

namespace skippr {

Position encode_file_position(const FilePosition& p) {
  nlohmann::json j;
  j["done"] = p.done;
  auto types_json = [](const std::map<std::string, Type, std::less<>>& types) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [name, type] : types) out[name] = to_string(type);
    return out;
  };
  j["types"] = nlohmann::json::object();
  for (const auto& [stream, types] : p.types) {
    if (stream.empty()) {
      j["types"] = types_json(types);
    } else {
      j["stream_types"][stream] = types_json(types);
    }
  }
  if (!p.done_versions.empty()) j["versions"] = p.done_versions;
  if (p.current) {
    j["file"] = p.current->name;
    j["offset"] = p.current->offset;
    j["line"] = p.current->line;
    j["size"] = p.current->identity.size;
    j["mtime_ns"] = p.current->identity.mtime_ns;
    if (!p.current->identity.version.empty()) j["version"] = p.current->identity.version;
  }
  return Position{j.dump()};
}

std::optional<FilePosition> decode_file_position(const Position& position) {
  auto j = nlohmann::json::parse(position.token, nullptr, false);
  if (!j.is_object() || !j.contains("done") || !j["done"].is_array()) return std::nullopt;
  FilePosition p;
  for (const auto& name : j["done"]) {
    if (!name.is_string()) return std::nullopt;
    p.done.insert(name.get<std::string>());
  }
  auto read_types = [](const nlohmann::json& from, std::map<std::string, Type, std::less<>>& into) {
    for (const auto& [name, type] : from.items()) {
      auto t = type.is_string() ? type_from_string(type.get<std::string>()) : std::nullopt;
      if (!t) return false;
      into.emplace(name, *t);
    }
    return true;
  };
  if (j.contains("types") && j["types"].is_object() && !j["types"].empty()) {
    if (!read_types(j["types"], p.types[""])) return std::nullopt;
  }
  if (j.contains("stream_types")) {
    if (!j["stream_types"].is_object()) return std::nullopt;
    for (const auto& [stream, types] : j["stream_types"].items()) {
      if (!types.is_object() || !read_types(types, p.types[stream])) return std::nullopt;
    }
  }
  if (j.contains("versions")) {
    if (!j["versions"].is_object()) return std::nullopt;
    for (const auto& [name, version] : j["versions"].items()) {
      if (!version.is_string()) return std::nullopt;
      p.done_versions.emplace(name, version.get<std::string>());
    }
  }
  if (j.contains("file")) {
    if (!j["file"].is_string() || !j["offset"].is_number_unsigned() || !j["line"].is_number_unsigned() ||
        !j["size"].is_number_unsigned() || !j["mtime_ns"].is_number_integer()) {
      return std::nullopt;
    }
    p.current = CurrentFile{j["file"].get<std::string>(),
                            j["offset"].get<uint64_t>(),
                            j["line"].get<uint64_t>(),
                            {j["size"].get<uint64_t>(), j["mtime_ns"].get<int64_t>(), j.value("version", "")}};
  }
  return p;
}

}  // namespace skippr

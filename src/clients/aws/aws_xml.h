// The few values skipprd reads out of AWS's XML answers (S3 errors and upload ids, STS credentials), through
// libxml2: no XML parsing of our own.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace skippr {

// The text of the first element named `name` anywhere in `body` (depth first), empty when there is none or the body
// is not XML.
std::string aws_xml_text(std::string_view body, const char* name);
// Every element named `name` (e.g. each <Contents> of a ListObjectsV2 answer) as its child elements' texts, and
// their children's (a child's own name wins over a grandchild's).
std::vector<std::map<std::string, std::string>> aws_xml_records(std::string_view body, const char* name);

}  // namespace skippr

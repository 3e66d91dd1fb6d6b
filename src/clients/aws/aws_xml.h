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
// true when `body` is a whole XML document: a listing cut short must not pass for one with nothing more in it.
bool aws_xml_is_document(std::string_view body);
// Every element named `name` (e.g. each <Contents> of a ListObjectsV2 answer) as its child elements' texts, and
// their children's (a child's own name wins over a grandchild's).
std::vector<std::map<std::string, std::string>> aws_xml_records(std::string_view body, const char* name);

}  // namespace skippr

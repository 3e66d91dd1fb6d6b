#include "clients/aws/aws_xml.h"

#include <libxml/parser.h>
#include <libxml/tree.h>

#include <memory>

namespace skippr {
namespace {

const xmlNode* find_element(const xmlNode* node, const char* name) {
  for (; node; node = node->next) {
    if (node->type != XML_ELEMENT_NODE) continue;
    if (xmlStrEqual(node->name, BAD_CAST name)) return node;
    if (const xmlNode* found = find_element(node->children, name)) return found;
  }
  return nullptr;
}

}  // namespace

std::string aws_xml_text(std::string_view body, const char* name) {
  if (body.empty()) return "";
  std::unique_ptr<xmlDoc, decltype(&xmlFreeDoc)> doc(
      xmlReadMemory(body.data(), static_cast<int>(body.size()), nullptr, nullptr,
                    XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING),
      xmlFreeDoc);
  if (!doc) return "";
  const xmlNode* found = find_element(xmlDocGetRootElement(doc.get()), name);
  if (!found) return "";
  std::unique_ptr<xmlChar, decltype(xmlFree)> text(xmlNodeGetContent(found), xmlFree);
  return text ? reinterpret_cast<const char*>(text.get()) : "";
}

}  // namespace skippr

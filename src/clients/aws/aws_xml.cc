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

using XmlDoc = std::unique_ptr<xmlDoc, decltype(&xmlFreeDoc)>;

XmlDoc parse(std::string_view body) {
  if (body.empty()) return XmlDoc(nullptr, xmlFreeDoc);
  return XmlDoc(xmlReadMemory(body.data(), static_cast<int>(body.size()), nullptr, nullptr,
                              XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING | XML_PARSE_HUGE),
                xmlFreeDoc);
}

std::string text_of(const xmlNode* node) {
  std::unique_ptr<xmlChar, decltype(xmlFree)> text(xmlNodeGetContent(node), xmlFree);
  return text ? reinterpret_cast<const char*>(text.get()) : "";
}

void collect(const xmlNode* node, const char* name, std::vector<std::map<std::string, std::string>>& out) {
  for (; node; node = node->next) {
    if (node->type != XML_ELEMENT_NODE) continue;
    if (!xmlStrEqual(node->name, BAD_CAST name)) {
      collect(node->children, name, out);
      continue;
    }
    auto& record = out.emplace_back();
    for (const xmlNode* child = node->children; child; child = child->next) {
      if (child->type != XML_ELEMENT_NODE) continue;
      record[reinterpret_cast<const char*>(child->name)] = text_of(child);
      // One level down too: Azure's <Blob> keeps Content-Length and Etag inside <Properties>.
      for (const xmlNode* grandchild = child->children; grandchild; grandchild = grandchild->next) {
        if (grandchild->type == XML_ELEMENT_NODE) {
          record.try_emplace(reinterpret_cast<const char*>(grandchild->name), text_of(grandchild));
        }
      }
    }
  }
}

}  // namespace

bool aws_xml_is_document(std::string_view body) { return parse(body) != nullptr; }

std::string aws_xml_text(std::string_view body, const char* name) {
  XmlDoc doc = parse(body);
  if (!doc) return "";
  const xmlNode* found = find_element(xmlDocGetRootElement(doc.get()), name);
  return found ? text_of(found) : "";
}

std::vector<std::map<std::string, std::string>> aws_xml_records(std::string_view body, const char* name) {
  std::vector<std::map<std::string, std::string>> out;
  XmlDoc doc = parse(body);
  if (doc) collect(xmlDocGetRootElement(doc.get()), name, out);
  return out;
}

}  // namespace skippr

// Test helpers for the one-page HTML reports (check --html, bench --html): the page parsed with
// pugixml, what in it would run or load something from elsewhere, and a table's cells.
#pragma once

#include <gtest/gtest.h>

#include <pugixml.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace collcheck::testing {

// `page` parsed as XML; a parse error (text left unescaped, an element not closed) fails the test.
inline void parse_page(const std::string& page, pugi::xml_document& document) {
  const pugi::xml_parse_result parsed = document.load_string(page.c_str());
  ASSERT_TRUE(parsed) << parsed.description() << " at offset " << parsed.offset << ": "
                      << page.substr(static_cast<std::size_t>(parsed.offset) < page.size()
                                         ? static_cast<std::size_t>(parsed.offset)
                                         : page.size(),
                                     80);
}

// The first thing under `node` that runs a script or loads something from outside the page (a
// <script>, <link>, <iframe>, <object>, <embed> or <img>, a src or href attribute, an on...
// handler, or url( or @import in a style), as text; empty when there is none.
inline std::string outside_reference(const pugi::xml_node& node) {
  const std::string_view element = node.name();
  for (std::string_view loader : {"script", "link", "iframe", "object", "embed", "img"}) {
    if (element == loader) return "<" + std::string(element) + ">";
  }
  for (const pugi::xml_attribute& attribute : node.attributes()) {
    const std::string_view name = attribute.name();
    if (name == "src" || name == "href" || name == "xlink:href" || name.starts_with("on"))
      return std::string(element) + " " + std::string(name) + "=\"" + attribute.value() + "\"";
  }
  const std::string_view text = node.value();
  if (text.find("url(") != std::string_view::npos || text.find("@import") != std::string_view::npos)
    return "a style that loads: " + std::string(text);
  for (const pugi::xml_node& child : node.children()) {
    if (std::string found = outside_reference(child); !found.empty()) return found;
  }
  return "";
}

// The text of each cell (<th> or <td>) of `table`, row by row.
inline std::vector<std::vector<std::string>> table_cells(const pugi::xml_node& table) {
  std::vector<std::vector<std::string>> rows;
  for (const pugi::xml_node& row : table.children("tr")) {
    rows.emplace_back();
    for (const pugi::xml_node& cell : row.children()) rows.back().emplace_back(cell.child_value());
  }
  return rows;
}

}  // namespace collcheck::testing

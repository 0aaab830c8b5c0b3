// The page, the style and the tables of the one-page HTML reports; see html_page.h.
#include "harness/html_page.h"

namespace collcheck::html {
namespace {

// Readable without a stylesheet fetched: tables with rules, failures set off in red, long lines
// of replay commands wrapped.
constexpr const char* kStyle = R"(body { font-family: sans-serif; margin: 1.5em 2em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.5em; } h3 { font-size: 1em; }
table { border-collapse: collapse; margin: 0.5em 0; }
th, td { border: 1px solid #ccc; padding: 0.15em 0.6em; text-align: left; }
th { background: #f0f0f0; }
td.number { text-align: right; font-variant-numeric: tabular-nums; }
tr.flagged td { background: #fde4e4; }
pre { background: #f6f6f6; padding: 0.4em 0.6em; white-space: pre-wrap; overflow-wrap: anywhere; }
section.failure { border-left: 4px solid #c62828; padding-left: 1em; margin: 1em 0; }
p.verdict-held { color: #2e7d32; } p.verdict-failed { color: #c62828; font-weight: bold; }
)";

// A cell of digits, points and minus signs, with a digit among them: 1024, 0.25, -1.
bool is_number(const std::string& cell) {
  return cell.find_first_not_of("0123456789.-") == std::string::npos &&
         cell.find_first_of("0123456789") != std::string::npos;
}

}  // namespace

std::string xml_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    switch (ch) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      case '\t':
      case '\n':
      case '\r': out += ch; break;
      default: out += static_cast<unsigned char>(ch) < 0x20 ? "\xEF\xBF\xBD" : std::string(1, ch);
    }
  }
  return out;
}

void open_page(std::ostream& out, const std::string& title) {
  out << "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head>\n"
      << "<meta charset=\"utf-8\"/>\n<title>" << xml_text(title) << "</title>\n<style>\n"
      << kStyle << "</style>\n</head>\n<body>\n<h1>" << xml_text(title) << "</h1>\n";
}

void close_page(std::ostream& out) { out << "</body>\n</html>\n"; }

void write_table(std::ostream& out, const std::vector<std::vector<std::string>>& rows,
                 const std::vector<bool>& flagged) {
  out << "<table>\n";
  for (std::size_t row = 0; row < rows.size(); ++row) {
    const bool marked = row < flagged.size() && flagged[row];
    out << (marked ? "<tr class=\"flagged\">" : "<tr>");
    for (const std::string& cell : rows[row]) {
      if (row == 0) out << "<th>" << xml_text(cell) << "</th>";
      else out << (is_number(cell) ? "<td class=\"number\">" : "<td>") << xml_text(cell) << "</td>";
    }
    out << "</tr>\n";
  }
  out << "</table>\n";
}

}  // namespace collcheck::html

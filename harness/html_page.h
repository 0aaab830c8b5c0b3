// The one-page HTML reports (`check --html`, `bench --html`): text escaped for XML, the page around
// a body with its style inline, and tables. The markup is XHTML-compatible (every element closed,
// every attribute quoted), runs no script and fetches nothing.
#pragma once

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace collcheck::html {

// `text` safe in element text and in a double-quoted attribute: & < > " as entities (a replay
// command's single quotes stay as they are, to be copied from the page's source too), and the
// control characters XML does not allow (below 0x20 but tab, newline, carriage return) as U+FFFD.
std::string xml_text(std::string_view text);

// The page up to its <h1>: doctype, <html>, <head> with `title` and the inline style, <body>.
void open_page(std::ostream&, const std::string& title);
void close_page(std::ostream&);

// A <table> of `rows`: rows[0] the header (<th>), the others cells (<td>, numbers aligned right);
// a row whose `flagged[i]` is true is marked (class "flagged") as the one to look at.
void write_table(std::ostream&, const std::vector<std::vector<std::string>>& rows,
                 const std::vector<bool>& flagged = {});

}  // namespace collcheck::html

// Plain-text tables for the CLI: column widths follow the widest cell, the last column is not
// padded, so lines never end in spaces.
#include "harness/text_table.h"

#include <algorithm>
#include <utility>

namespace collcheck::cli {

void TextTable::add_row(std::vector<std::string> cells) {
  if (widths_.size() < cells.size()) widths_.resize(cells.size(), 0);
  for (std::size_t column = 0; column < cells.size(); ++column) {
    widths_[column] = std::max(widths_[column], cells[column].size());
  }
  rows_.push_back(std::move(cells));
}

void TextTable::print(std::ostream& out, std::size_t indent) const {
  for (const auto& row : rows_) {
    std::string line(indent, ' ');
    for (std::size_t column = 0; column < row.size(); ++column) {
      line += row[column];
      if (column + 1 < row.size()) line.append(widths_[column] - row[column].size() + 2, ' ');
    }
    line.erase(line.find_last_not_of(' ') + 1);
    out << line << '\n';
  }
}

}  // namespace collcheck::cli

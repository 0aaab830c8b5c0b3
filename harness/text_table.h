// Plain-text tables for the CLI: rows of cells printed in left-aligned columns, so that the
// output of `collcheck list` and `collcheck version` reads well and greps well.
#pragma once

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

namespace collcheck::cli {

class TextTable {
 public:
  void add_row(std::vector<std::string> cells);
  // Each row on its own line, after `indent` spaces; columns two spaces apart; no trailing blanks.
  void print(std::ostream& out, std::size_t indent = 2) const;

 private:
  std::vector<std::vector<std::string>> rows_;
  std::vector<std::size_t> widths_;
};

}  // namespace collcheck::cli

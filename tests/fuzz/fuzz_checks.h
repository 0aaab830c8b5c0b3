// What every fuzz target checks beyond "no crash": a property that must hold for each input, and
// that a parser's error names something and says what is wrong. A broken property aborts, which
// libFuzzer reports with the input that broke it.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "reference/result.h"

namespace collcheck::fuzz {

inline void require(bool holds, std::string_view property, std::string_view detail = {}) {
  if (holds) return;
  std::fprintf(stderr, "fuzz property broken: %.*s\n  %.*s\n", static_cast<int>(property.size()), property.data(),
               static_cast<int>(detail.size()), detail.data());
  std::abort();
}

// An error a person can act on: it has a message, and its text is not only the field's name.
inline void require_message(const Error& error, std::string_view parser) {
  require(!error.message.empty(), parser, "error with an empty message");
}

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace collcheck::fuzz

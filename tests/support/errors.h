// Test helper: expects a Result to be an error naming a field, with given words in its message
// (every bad input's error names the field and what is allowed).
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <string_view>

#include "reference/result.h"

namespace collcheck::testing {

template <typename T>
void expect_error(const Result<T>& result, std::string_view field, std::initializer_list<std::string_view> words = {}) {
  ASSERT_FALSE(result.ok()) << "expected an error on " << field;
  EXPECT_EQ(result.error().field, field) << result.error().text();
  for (std::string_view word : words) {
    EXPECT_NE(result.error().message.find(word), std::string::npos)
        << "'" << word << "' missing from: " << result.error().text();
  }
}

}  // namespace collcheck::testing

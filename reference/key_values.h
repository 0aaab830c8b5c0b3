// The `key=value,...` grammar every spec on the command line shares (backend options, fault
// plans, case text, lists of numbers): one splitter, and readers whose errors name the key.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "reference/result.h"

namespace collcheck {

// One item of a list, cut at its first '=': `a=b=c` is key `a`, value `b=c`.
struct KeyValue {
  std::string_view item;   // as typed: `chunk=4096`
  std::string_view key;    // before the first '=' (the whole item when it has none)
  std::string_view value;  // after the first '=' (empty when it has none)
  bool has_value = false;  // whether the item has an '=': a bare word is the caller's to allow
};

// Every piece between separators, empty ones kept: "a,,b" gives a, "", b; "" gives one "".
std::vector<std::string_view> split_list(std::string_view text, char separator = ',');

KeyValue split_key_value(std::string_view item);

// `key=value,...` in the order given. Empty text has no items and one trailing separator is
// allowed (`chunk=8,` is `chunk=8`, so specs can be built by appending); any other empty item
// (`a=1,,b=2`, `,a=1`) is an error. Items without '=' come back with has_value false.
Result<std::vector<KeyValue>> split_key_values(std::string_view text, char separator = ',');

// The first item whose key an earlier item already gave, or null.
const KeyValue* repeated_key(std::span<const KeyValue> items);

// Readers of one item's value. Each error has the key as its field and a message that stands
// alone, `KEY=VALUE: must be ALLOWED`, for the caller to put after its own context.
//   read_unsigned: a decimal integer in low..high; `unit` (e.g. "milliseconds") is added to the
//                  message in parentheses. Numbers too large for 64 bits are out of range.
//   read_real:     a decimal number in low..high; `allowed` is the message's ALLOWED.
//   read_on_off:   on or off.
//   read_choice:   one of `choices`; the index of the one given.
Result<std::uint64_t> read_unsigned(const KeyValue& option, std::uint64_t low, std::uint64_t high,
                                    std::string_view unit = {});
Result<double> read_real(const KeyValue& option, double low, double high, std::string_view allowed);
Result<bool> read_on_off(const KeyValue& option);
Result<std::size_t> read_choice(const KeyValue& option, std::span<const std::string_view> choices);

// `a`, `a or b`, `a, b or c`: the allowed values in a message.
std::string or_list(std::span<const std::string_view> choices);

}  // namespace collcheck

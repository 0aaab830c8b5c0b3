// The `key=value,...` splitter and the readers of one value (numbers in a range, on|off, one of
// a set), each error naming the key and what is allowed.
#include "reference/key_values.h"

#include "reference/numbers.h"

namespace collcheck {
namespace {

Error value_error(const KeyValue& option, const std::string& allowed) {
  return Error{std::string(option.key), escaped_input(option.item) + ": must be " + allowed};
}

}  // namespace

std::vector<std::string_view> split_list(std::string_view text, char separator) {
  std::vector<std::string_view> pieces;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = text.find(separator, start);
    pieces.push_back(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) return pieces;
    start = end + 1;
  }
}

KeyValue split_key_value(std::string_view item) {
  const std::size_t equals = item.find('=');
  if (equals == std::string_view::npos) return KeyValue{item, item, {}, false};
  return KeyValue{item, item.substr(0, equals), item.substr(equals + 1), true};
}

Result<std::vector<KeyValue>> split_key_values(std::string_view text, char separator) {
  std::vector<KeyValue> items;
  if (text.empty()) return items;
  std::vector<std::string_view> pieces = split_list(text, separator);
  if (pieces.back().empty()) pieces.pop_back();  // one trailing separator
  for (std::string_view piece : pieces) {
    if (piece.empty()) {
      return Error{"", quoted_input(text) + " has an empty item: items are KEY=VALUE separated by '" +
                           std::string(1, separator) + "'"};
    }
    items.push_back(split_key_value(piece));
  }
  return items;
}

const KeyValue* repeated_key(std::span<const KeyValue> items) {
  for (std::size_t i = 0; i < items.size(); ++i) {
    for (std::size_t earlier = 0; earlier < i; ++earlier) {
      if (items[earlier].key == items[i].key) return &items[i];
    }
  }
  return nullptr;
}

Result<std::uint64_t> read_unsigned(const KeyValue& option, std::uint64_t low, std::uint64_t high,
                                    std::string_view unit) {
  Result<std::uint64_t> value = parse_integer(option.key, option.value, CountRange{0, UINT64_MAX, false, {}});
  const bool digits_only =
      !option.value.empty() && option.value.find_first_not_of("0123456789") == std::string_view::npos;
  if (!value && !digits_only) return value_error(option, "an integer, " + range_text(low, high, unit));
  if (!value || *value < low || *value > high) return value_error(option, range_text(low, high, unit));
  return value;
}

Result<double> read_real(const KeyValue& option, double low, double high, std::string_view allowed) {
  Result<double> value = parse_decimal(option.key, option.value, low, high, allowed);
  if (!value) return value_error(option, std::string(allowed));
  return value;
}

Result<bool> read_on_off(const KeyValue& option) {
  constexpr std::string_view kChoices[] = {"on", "off"};
  Result<std::size_t> choice = read_choice(option, kChoices);
  if (!choice) return choice.error();
  return *choice == 0;
}

Result<std::size_t> read_choice(const KeyValue& option, std::span<const std::string_view> choices) {
  for (std::size_t i = 0; i < choices.size(); ++i) {
    if (option.has_value && option.value == choices[i]) return i;
  }
  return value_error(option, or_list(choices));
}

std::string or_list(std::span<const std::string_view> choices) {
  std::string out;
  for (std::size_t i = 0; i < choices.size(); ++i) {
    if (i > 0) out += i + 1 == choices.size() ? " or " : ", ";
    out += choices[i];
  }
  return out;
}

}  // namespace collcheck

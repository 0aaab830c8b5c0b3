// libFuzzer target for the `key=value,...` grammar every spec shares (reference/key_values.h):
// the pieces cover the text exactly, and each reader either gives a value in its range or an
// error that names the key.
#include <array>
#include <limits>
#include <string>

#include "reference/key_values.h"
#include "tests/fuzz/fuzz_checks.h"

using namespace collcheck;

namespace {

void read_every_way(const KeyValue& item) {
  fuzz::require(item.key.size() + item.value.size() + (item.has_value ? 1 : 0) == item.item.size(),
                "an item is its key, '=' and value", item.item);
  const Result<std::uint64_t> count = read_unsigned(item, 1, 4096, "ranks");
  if (count) fuzz::require(*count >= 1 && *count <= 4096, "read_unsigned stays in its range", item.item);
  else fuzz::require(count.error().field == item.key, "read_unsigned's error names the key", item.item);
  const Result<std::uint64_t> wide = read_unsigned(item, 0, std::numeric_limits<std::uint64_t>::max());
  if (!wide) fuzz::require_message(wide.error(), "read_unsigned");
  const Result<double> real = read_real(item, 0, 1, "0..1");
  if (real) fuzz::require(*real >= 0 && *real <= 1, "read_real stays in its range", item.item);
  else fuzz::require(real.error().field == item.key, "read_real's error names the key", item.item);
  const Result<bool> on = read_on_off(item);
  if (!on) fuzz::require_message(on.error(), "read_on_off");
  constexpr std::array<std::string_view, 3> choices = {"shm", "tcp", "auto"};
  const Result<std::size_t> choice = read_choice(item, choices);
  if (choice) fuzz::require(*choice < choices.size() && choices[*choice] == item.value, "read_choice", item.item);
  else fuzz::require_message(choice.error(), "read_choice");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = fuzz::as_text(data, size);
  std::string joined;
  for (std::string_view piece : split_list(text)) joined += std::string(piece) + ",";
  fuzz::require(joined == std::string(text) + ",", "split_list's pieces joined by ',' are the text", text);
  const Result<std::vector<KeyValue>> items = split_key_values(text);
  if (!items) {
    fuzz::require_message(items.error(), "split_key_values");
    return 0;
  }
  for (const KeyValue& item : *items) read_every_way(item);
  repeated_key(*items);
  return 0;
}

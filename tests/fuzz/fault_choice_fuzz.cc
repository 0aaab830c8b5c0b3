// libFuzzer target for `--faults` as `collcheck check` reads it (harness/fault_generator.h): a
// fixed plan, `random` or `random:KIND,...`; the seed is the text's length, so seeds stay text.
#include "harness/fault_generator.h"
#include "tests/fuzz/fuzz_checks.h"

using namespace collcheck;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = fuzz::as_text(data, size);
  const std::uint64_t seed = size;
  const Result<FaultChoice> choice = parse_fault_choice(text, seed);
  if (!choice) {
    fuzz::require_message(choice.error(), "parse_fault_choice");
    return 0;
  }
  fuzz::require(!choice->random || !swarm_for_case(*choice, seed, 0).empty(), "a random choice has a swarm", text);
  fuzz::require(!describe(*choice, seed).empty(), "a choice describes itself", text);
  // A fixed plan reads back from its own text as the same plan (replay lines carry that text).
  if (!choice->random && !choice->plan.empty()) {
    const Result<FaultChoice> again = parse_fault_choice(to_string(choice->plan), seed);
    fuzz::require(again.ok() && !again->random && to_string(again->plan) == to_string(choice->plan),
                  "a fixed plan reads back from its text", text);
  }
  return 0;
}

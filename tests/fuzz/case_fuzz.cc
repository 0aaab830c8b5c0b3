// libFuzzer target for the case text (`allreduce/f32/sum/n=1000/ranks=7/...`, reference/case.h):
// a case that parses is valid, prints canonically and parses back to itself; an error says why.
#include "reference/case.h"
#include "tests/fuzz/fuzz_checks.h"

using namespace collcheck;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = fuzz::as_text(data, size);
  const Result<Case> parsed = parse_case(text);
  if (!parsed) {
    fuzz::require_message(parsed.error(), "parse_case");
    return 0;
  }
  fuzz::require(validate(*parsed).ok(), "a parsed case is valid", text);
  const std::string printed = to_string(*parsed);
  const Result<Case> again = parse_case(printed);
  fuzz::require(again.ok(), "a printed case parses", printed);
  fuzz::require(*again == *parsed, "a printed case parses back to itself", printed);
  fuzz::require(to_string(*again) == printed, "the printed form is canonical", printed);
  return 0;
}

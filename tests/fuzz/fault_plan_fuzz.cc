// libFuzzer target for fault plans (`drop:link=2->3:p=0.01;...`, faults/plan.h): a plan that
// parses prints canonically and parses back to itself, validates or says why against worlds of
// several sizes, and every simpler plan the shrinker offers differs from it.
#include "faults/plan.h"
#include "tests/fuzz/fuzz_checks.h"

using namespace collcheck;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = fuzz::as_text(data, size);
  const Result<FaultPlan> plan = parse_fault_plan(text);
  if (!plan) {
    fuzz::require_message(plan.error(), "parse_fault_plan");
    return 0;
  }
  const std::string printed = to_string(*plan);
  const Result<FaultPlan> again = parse_fault_plan(printed);
  fuzz::require(again.ok(), "a printed plan parses", printed);
  fuzz::require(*again == *plan, "a printed plan parses back to itself", printed);
  fuzz::require(to_string(*again) == printed, "the printed form is canonical", printed);
  for (int nranks : {1, 2, 7, 4096}) {
    const Status valid = validate(*plan, nranks);
    if (!valid) fuzz::require_message(valid.error(), "validate(FaultPlan)");
  }
  for (const FaultPlan& simpler_plan : simpler(*plan)) {
    fuzz::require(!(simpler_plan == *plan), "a simpler plan differs from the plan", printed);
  }
  return 0;
}

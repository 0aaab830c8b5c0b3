// Outcomes and the properties over them: a run is ok, detected, hang, corrupt or crash; safety
// (never corrupt), liveness (never hang; no false alarms), recovery and reliability.
#include "properties/outcome_properties.h"

#include "reference/oracle.h"

namespace collcheck {
namespace {

std::string outcome_text(Outcome outcome, const std::string& error) {
  return std::string(name(outcome)) + (error.empty() ? "" : ": " + error);
}

Outcome outcome_of(const Case& c, const RepeatedRun& base, const PropertyContext& context) {
  return context.outcome ? *context.outcome : classify(c, base);
}

// The call-by-call oracle verdict of a run that returned: empty when every call matches.
std::string wrong_result(const Case& c, const RepeatedRun& run) {
  if (run.calls.empty()) return "no call returned any output";
  for (std::size_t call = 0; call < run.calls.size(); ++call) {
    Case this_call = c;
    this_call.seed = c.seed + call;
    const std::string prefix = run.calls.size() > 1 ? "call " + std::to_string(call) + ": " : "";
    if (run.calls[call].size() != static_cast<std::size_t>(c.nranks)) {
      return prefix + std::to_string(run.calls[call].size()) + " ranks returned, of " + std::to_string(c.nranks);
    }
    PropertyResult verdict = match_oracle(this_call, run.calls[call], prefix);
    if (!verdict.ok) return verdict.detail;
  }
  return "";
}

}  // namespace

RunOptions PropertyContext::run_options(std::uint64_t seed, int calls) const {
  RunOptions options{seed, calls};
  options.deadline = deadline;
  options.fault_plan = fault_plan;
  options.message_memory = message_memory;
  return options;
}

PropertyResult match_oracle(const Case& c, const std::vector<RankResult>& ranks, const std::string& call) {
  Oracle oracle(c);
  std::vector<std::span<const std::byte>> outputs;
  outputs.reserve(ranks.size());
  for (const RankResult& rank : ranks) outputs.emplace_back(rank.output);
  for (const Verdict& verdict : oracle.compare_all(outputs)) {
    if (!verdict.ok) return fail(call + verdict.describe(c.dtype));
  }
  return pass();
}

Outcome classify(const Case& c, const RepeatedRun& run) {
  if (run.outcome != Outcome::Ok) return run.outcome;
  return wrong_result(c, run).empty() ? Outcome::Ok : Outcome::Corrupt;
}

// A wrong answer that looks right is the worst outcome: no caller can know to retry.
PropertyResult safety(const Case& c, Backend&, const RepeatedRun& base, const PropertyContext& context) {
  if (!context.under_faults()) return skip("a clean run (the oracle property judges its result)");
  if (outcome_of(c, base, context) != Outcome::Corrupt) return pass();
  return fail("corrupt: the run reported success with a wrong result under " + context.fault_plan + ": " +
              wrong_result(c, base));
}

PropertyResult liveness(const Case&, Backend&, const RepeatedRun& base, const PropertyContext& context) {
  if (base.outcome == Outcome::Ok) return pass();
  if (base.outcome == Outcome::Detected) {
    if (context.under_faults()) return pass();
    return fail("detected on a clean run (a false alarm): " + base.error);
  }
  return fail(outcome_text(base.outcome, base.error));
}

// After an error the backend must serve again: launched worlds relaunch after a hang or a crash
// and are reused after `detected`, so this catches state a failed run leaves behind.
PropertyResult recovery(const Case& c, Backend& backend, const RepeatedRun& base, const PropertyContext& context) {
  if (base.outcome == Outcome::Ok) return skip("the run ended ok: nothing to recover from");
  if (base.outcome != Outcome::Detected && base.outcome != Outcome::Hang) {
    return skip("the run ended " + std::string(name(base.outcome)) + " (recovery follows detected or hang)");
  }
  RunOptions clean = context.run_options(context.schedule_seed);
  clean.fault_plan.clear();
  clean.without_faults = true;
  const RepeatedRun again = backend.run(c, clean);
  const Outcome outcome = classify(c, again);
  if (outcome == Outcome::Ok) return pass();
  const std::string after = "after " + std::string(name(base.outcome)) + ", the run without faults ended ";
  if (outcome == Outcome::Corrupt) return fail(after + "corrupt: " + wrong_result(c, again));
  return fail(after + outcome_text(outcome, again.error));
}

PropertyResult reliability(const Case& c, Backend& backend, const RepeatedRun& base, const PropertyContext& context) {
  if (!backend.capabilities().reliable) return skip("the backend does not retransmit (not reliable)");
  if (!context.under_faults()) return skip("a clean run");
  if (!context.transient) return skip("the faults are not all transient (" + context.fault_plan + ")");
  const Outcome outcome = outcome_of(c, base, context);
  if (outcome == Outcome::Ok) return pass();
  const std::string under = "reliable, yet under transient faults (" + context.fault_plan + ") the run ended ";
  if (outcome == Outcome::Corrupt) return fail(under + "corrupt: " + wrong_result(c, base));
  return fail(under + outcome_text(outcome, base.error));
}

}  // namespace collcheck

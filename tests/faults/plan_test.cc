// The fault-plan language: printed plans parse back exactly, every error names its item and key,
// validate catches targets outside the world, and simpler() only ever offers simpler plans.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "faults/plan.h"

namespace collcheck {
namespace {

FaultPlan parsed(const std::string& text) {
  Result<FaultPlan> plan = parse_fault_plan(text);
  EXPECT_TRUE(plan.ok()) << text << ": " << plan.error().text();
  return plan.ok() ? *plan : FaultPlan{};
}

TEST(FaultPlan, CanonicalTextsRoundTrip) {
  const std::vector<std::string> texts = {
      "none",
      "drop",
      "drop:link=2->3:p=0.01",
      "delay:rank=5:ms=50",
      "delay:ms=1.5:jitter=0.25",
      "corrupt:link=0->1:after=3:bits=1",  // bits=1 is the default and drops out when printed
      "corrupt:link=0->1:after=3:bits=7:times=2",
      "drop:offset=4096:p=0.5",
      "drop:link=0->1:times=1:message=last",
      "delay:message=first:ms=2",
      "corrupt:rank=2:message=last:bits=3:where=tail",
      "corrupt:where=boundary;corrupt:where=first;corrupt:where=last",
      "duplicate:rank=1;reorder:link=1->0:p=0.125",
      "link-down:link=1->2:at=0.002",
      "link-flap:link=3->0:at=0.0001:period=0.3",
      "straggler:rank=3:factor=4",
      "straggler:rank=3:at=1e-05:ms=2:factor=1.5",
      "stop:rank=0:at=0.5;kill:rank=2:at=0.001",
      // Six faults in one plan, split over two lines: the parentheses mark one literal on purpose.
      ("drop:link=2->3:p=0.01;delay:rank=5:ms=50;corrupt:link=0->1:after=3:bits=1;"
       "link-down:link=1->2:at=0.002;straggler:rank=3:factor=4;kill:rank=2:at=0.001"),
  };
  for (const std::string& text : texts) {
    const FaultPlan plan = parsed(text);
    const std::string printed = to_string(plan);
    EXPECT_EQ(parsed(printed), plan) << text << " printed as " << printed;
    EXPECT_EQ(to_string(parsed(printed)), printed);
  }
  EXPECT_EQ(to_string(parsed("corrupt:link=0->1:after=3:bits=1")), "corrupt:link=0->1:after=3");
  EXPECT_EQ(to_string(parsed("delay:ms=50:rank=5")), "delay:rank=5:ms=50");  // canonical key order
  EXPECT_EQ(to_string(parsed("corrupt:where=any:message=any")), "corrupt");  // defaults drop out
  EXPECT_TRUE(parsed("").empty());
}

TEST(FaultPlan, ParsesFieldsIntoTheirPlaces) {
  const FaultPlan plan = parsed("corrupt:link=0->1:after=3:bits=5:p=0.25;straggler:rank=3:at=0.5:factor=4");
  ASSERT_EQ(plan.faults.size(), 2u);
  const Fault& c = plan.faults[0];
  EXPECT_EQ(c.kind, FaultKind::Corrupt);
  EXPECT_EQ(c.target.scope, Target::Scope::Link);
  EXPECT_EQ(c.target.from, 0);
  EXPECT_EQ(c.target.to, 1);
  EXPECT_EQ(c.trigger.after, 3u);
  EXPECT_EQ(c.trigger.p, 0.25);
  EXPECT_EQ(c.bits, 5);
  const Fault& s = plan.faults[1];
  EXPECT_EQ(s.kind, FaultKind::Straggler);
  EXPECT_EQ(s.target.scope, Target::Scope::Rank);
  EXPECT_EQ(s.target.rank, 3);
  EXPECT_EQ(s.trigger.at, 0.5);
  EXPECT_EQ(s.factor, 4);
}

TEST(FaultPlan, EveryKindHasAName) {
  for (FaultKind kind : all_fault_kinds()) {
    Result<FaultKind> back = parse_fault_kind(to_string(kind));
    ASSERT_TRUE(back.ok()) << to_string(kind);
    EXPECT_EQ(*back, kind);
  }
}

// Each bad plan and the words its error must contain (the item, the key, what is allowed).
TEST(FaultPlan, ErrorsNameTheItemAndTheKey) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"explode:rank=1", {"item 1", "explode", "drop", "link-flap", "kill"}},
      {"drop;delay:rank=x", {"item 2", "rank", "'x'", "rank number"}},
      {"drop:link=2-3", {"link", "A->B"}},
      {"drop:link=2->2", {"link", "two different ranks"}},
      {"drop:p=0", {"p", "0 < p <= 1"}},
      {"drop:p=1.5", {"p", "0 < p <= 1"}},
      {"drop:p=nan", {"p"}},
      {"drop:at=-1", {"at", "seconds, 0..86400"}},
      {"drop:after=-2", {"after", "message number"}},
      {"drop:offset=1k", {"offset", "byte offset"}},
      {"corrupt:bits=0", {"bits", "1..64"}},
      {"corrupt:bits=65", {"bits", "1..64"}},
      {"delay:ms=-5", {"ms", "milliseconds, 0..86400000"}},
      {"delay:jitter=inf", {"jitter"}},
      {"straggler:rank=1:factor=0.5", {"factor", "1..1000000"}},
      {"link-flap:link=0->1:period=0", {"period", "0 < period"}},
      {"drop:bits=3", {"unknown key 'bits'", "drop", "allowed", "link, rank, at, after, offset, p, times, message"}},
      {"drop:message=middle", {"message", "'middle'", "one of any, first, last"}},
      {"corrupt:where=edge", {"where", "'edge'", "one of any, first, last, tail, boundary"}},
      {"drop:where=first", {"unknown key 'where'", "drop"}},
      {"kill:rank=1:message=last", {"unknown key 'message'", "kill", "rank, at"}},
      {"link-down:link=0->1:p=0.5", {"unknown key 'p'", "link-down", "link, at"}},
      {"kill:link=0->1", {"unknown key 'link'", "rank, at"}},
      {"kill:at=1", {"rank", "needs one", "rank=R"}},
      {"link-down", {"link", "needs one", "link=A->B"}},
      {"drop:rank=1:rank=2", {"rank", "given twice"}},
      {"drop:rank=1:link=0->1", {"link", "one target per fault"}},
      {"drop:at=1:at=2", {"at", "given twice"}},
      {"drop:", {"is not key=value", "keys:"}},
      {"drop:p", {"'p' is not key=value"}},
      {"drop;;delay", {"item 2", "unknown fault kind ''"}},
      // Times are bounded so that no clock conversion overflows; no nan, inf, hex or sign.
      {"kill:rank=1:at=1e10", {"at", "'1e10': must be seconds, 0..86400"}},
      {"kill:rank=1:at=86401", {"at", "0..86400"}},
      {"drop:at=inf", {"at", "is not a number"}},
      {"drop:at=nan", {"at", "is not a number"}},
      {"drop:at=0x10", {"at", "is not a number"}},
      {"drop:at=+1", {"at", "is not a number"}},
      {"drop:rank=+1", {"rank", "rank number"}},
      {"delay:ms=1e300", {"ms", "0..86400000"}},
      {"delay:jitter=86400001", {"jitter", "0..86400000"}},
      {"link-flap:link=0->1:period=1e9", {"period", "86400000"}},
      {"straggler:rank=1:factor=1e7", {"factor", "1..1000000"}},
      {"drop:p=0x1", {"p", "0 < p <= 1"}},
      {"corrupt:bits=99999999999999999999", {"bits", "1..64"}},
      {"drop\x01:rank=1", {"unknown fault kind 'drop\\x01'"}},
  };
  for (const auto& [text, words] : cases) {
    Result<FaultPlan> plan = parse_fault_plan(text);
    ASSERT_FALSE(plan.ok()) << text << " parsed as " << to_string(*plan);
    EXPECT_EQ(plan.error().field, "--faults") << text;
    for (const std::string& word : words) {
      EXPECT_NE(plan.error().message.find(word), std::string::npos)
          << text << ": `" << plan.error().message << "` does not say `" << word << "`";
    }
  }
}

TEST(FaultPlan, BadInputIsEchoedEscapedAndCut) {
  const std::string huge = "drop:rank=" + std::string(100000, '\x01');
  const std::string message = parse_fault_plan(huge).error().message;
  EXPECT_LT(message.size(), 400u) << message;
  EXPECT_EQ(message.find('\x01'), std::string::npos);
  EXPECT_NE(message.find("\\x01\\x01"), std::string::npos) << message;
  EXPECT_NE(message.find("(100010 bytes)"), std::string::npos) << message;
}

TEST(FaultPlan, ValidateCatchesTargetsOutsideTheWorld) {
  EXPECT_TRUE(validate(parsed("drop:link=2->3;kill:rank=3:at=1;delay:ms=1"), 4).ok());
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"drop:link=2->4", "link: 2->4: both ranks must be 0..3 in a world of 4"},
      {"drop;drop:link=4->2", "item 2"},
      {"kill:rank=4:at=1", "rank: 4: must be 0..3"},
      {"straggler:rank=9:factor=2", "rank: 9"},
  };
  for (const auto& [text, words] : cases) {
    const Status status = validate(parsed(text), 4);
    ASSERT_FALSE(status.ok()) << text;
    EXPECT_EQ(status.error().field, "--faults");
    EXPECT_NE(status.error().message.find(words), std::string::npos) << status.error().message;
  }
  // Plans built in code get the parser's checks too.
  Fault negative;
  negative.target = Target{Target::Scope::Rank, 0, 0, -1};
  EXPECT_FALSE(validate(FaultPlan{{negative}}, 4).ok());
  Fault stray;
  stray.kind = FaultKind::Kill;
  stray.target = Target{Target::Scope::Rank, 0, 0, 1};
  stray.trigger.p = 0.5;  // kill takes only `at`
  const Status status = validate(FaultPlan{{stray}}, 4);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().message.find("p: not taken by kill"), std::string::npos) << status.error().message;
}

// b is no harder than a: every trigger as late or later, every parameter as mild or milder.
bool no_harder(const Fault& a, const Fault& b) {
  const Trigger& s = a.trigger;
  const Trigger& t = b.trigger;
  const bool times_fewer = s.times == 0 || (t.times != 0 && t.times <= s.times);
  const bool placed_no_narrower =
      (t.message == s.message || t.message == StreamPosition::Any) && (b.where == a.where || b.where == BytePlace::Any);
  return a.kind == b.kind && a.target == b.target && t.at >= s.at && t.after >= s.after && t.offset >= s.offset &&
         t.p <= s.p && times_fewer && b.ms <= a.ms && b.jitter <= a.jitter && b.bits <= a.bits &&
         b.factor <= a.factor && b.period == a.period && placed_no_narrower;
}

TEST(FaultPlan, SimplerPlansAreStrictlySimplerAndValid) {
  const FaultPlan plan = parsed(
      "drop:link=2->3:p=0.01:message=last;delay:rank=1:ms=50:jitter=3;corrupt:link=0->1:after=3:bits=8:times=4:"
      "where=tail;link-down:link=1->2:at=0.002;straggler:rank=3:factor=4:ms=1;kill:rank=2:at=0.001");
  const std::vector<FaultPlan> candidates = simpler(plan);
  EXPECT_GT(candidates.size(), plan.faults.size());
  std::size_t fewer = 0;
  for (const FaultPlan& candidate : candidates) {
    EXPECT_NE(candidate, plan) << to_string(candidate);
    EXPECT_TRUE(validate(candidate, 4).ok()) << to_string(candidate);
    EXPECT_EQ(parsed(to_string(candidate)), candidate);
    if (candidate.faults.size() == plan.faults.size() - 1) {
      ++fewer;
      continue;
    }
    ASSERT_EQ(candidate.faults.size(), plan.faults.size()) << to_string(candidate);
    int changed = 0;
    for (std::size_t i = 0; i < plan.faults.size(); ++i) {
      EXPECT_TRUE(no_harder(plan.faults[i], candidate.faults[i])) << to_string(candidate);
      changed += plan.faults[i] == candidate.faults[i] ? 0 : 1;
    }
    EXPECT_EQ(changed, 1) << to_string(candidate);
  }
  EXPECT_EQ(fewer, plan.faults.size());
  EXPECT_TRUE(simpler(FaultPlan{}).empty());
}

// Following any one candidate again and again ends: the shrinker cannot loop forever.
TEST(FaultPlan, ShrinkingEnds) {
  FaultPlan plan = parsed("delay:rank=1:at=0.5:after=7:offset=100:p=0.9:times=9:ms=50:jitter=3");
  for (std::size_t pick = 0; pick < 12; ++pick) {
    FaultPlan current = plan;
    int steps = 0;
    for (;; ++steps) {
      std::vector<FaultPlan> next = simpler(current);
      if (next.size() <= 1) break;  // only the removal is left
      current = next[1 + pick % (next.size() - 1)];
      ASSERT_LT(steps, 200) << to_string(current);
    }
  }
}

}  // namespace
}  // namespace collcheck

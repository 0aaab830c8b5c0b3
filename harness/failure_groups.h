// How the check loop tells failures apart: the shape of a property's detail (its numbers taken
// out), the kind of a failure that shrinking keeps to, and the groups of failing cases that
// share a signature (harness/check.h, Failure).
#pragma once

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <string_view>

#include "impls/backend/backend.h"

namespace collcheck {

// The shape of what a property saw: its first line (the rest lists elements or ranks), every
// number in it (digits, with a sign, point or exponent) '#' and the fault plan it names
// (`under PLAN`) left out, so that one bug seen at other ranks, elements, values or plans reads
// the same: `# of # elements wrong`.
std::string detail_shape(std::string_view detail);

// What a failure is, for shrinking: the base run's outcome and the head of its detail's shape
// (up to the first ':'), so that a shrink step never slips from one bug to another.
struct FailureKind {
  Outcome outcome = Outcome::Ok;
  std::string head;
  bool operator==(const FailureKind&) const = default;
};
FailureKind kind_of(Outcome outcome, std::string_view detail);

// Backend, property, outcome and collective: the part of a signature before the detail's shape.
std::string failure_kind(const std::string& backend, std::string_view property, Outcome outcome, Collective collective);

// The groups found so far on one backend: signatures (the first case's and the shrunk case's)
// → index in the report's failures; per kind, how many of its failures were shrunk and the
// groups they ended in.
struct FailureGroups {
  std::map<std::string, std::size_t> by_signature;
  std::map<std::string, std::size_t> shrinks_per_kind;
  std::map<std::string, std::set<std::size_t>> groups_of_kind;
};

}  // namespace collcheck

// A campaign across hosts: each process of an MPI or Slurm job runs one share of every backend's
// stream of cases (CaseShare), and rank 0 merges the shares' reports into the one report.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/check.h"
#include "reference/result.h"

namespace collcheck {

// A share's report as bytes for the merge, and back (every field the merge needs).
std::string encode_report(const CheckReport&);
Result<CheckReport> decode_report(std::string_view bytes);

// One report from the shares' (an empty one: a share not heard from, named in missing_shares
// with its host and why). Tallies and outcomes are summed; failure groups of the same
// signature are one group, kept from the share whose case came first in the stream (so its
// replay line is the one a single process would print), with the counts summed; groups are in
// stream order per backend, and past `max_failures` their cases are counted as unreported.
CheckReport merge_reports(const std::vector<std::optional<CheckReport>>& shares, const std::vector<std::string>& hosts,
                          const std::vector<std::string>& why, std::size_t max_failures);

}  // namespace collcheck

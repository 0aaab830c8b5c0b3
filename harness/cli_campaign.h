// How `collcheck check` takes part in a job that mpirun or srun launched: in lockstep (every rank
// runs the same loop on backends across processes), or with --share as one share of a campaign
// across the job's hosts, rank 0 printing the report merged from the shares' (docs/cli.md).
#pragma once

#include <chrono>
#include <cstddef>
#include <sstream>
#include <string>
#include <vector>

#include "harness/arguments.h"
#include "harness/check.h"
#include "impls/backend/world.h"

namespace collcheck::cli {

inline constexpr std::size_t kMaxShares = 65536;

// Under mpirun or srun, with backends that run across processes, this process is one rank of
// the world: every rank runs the same loop, rank 0 alone prints.
struct Lockstep {
  World* world = nullptr;
  bool quiet = false;  // not rank 0 (of a lockstep world or a campaign)
  std::ostringstream discard;
};

// Joins the launched world in lockstep where the backends run across processes and a launcher
// started this process; else nothing.
Status join_lockstep(const std::vector<std::string>& specs, Lockstep& lockstep);

struct Campaign {
  bool asked = false;  // --share was given
  CaseShare share;
  World* world = nullptr;          // the job's world the shares merge over; null: this share alone
  std::vector<std::string> hosts;  // each share's host (merged only)
  double share_wait = 60;          // --share-wait: seconds rank 0 waits for the others past the budget
  std::string share_wait_text = "60s";
  bool merged() const { return world != nullptr; }
  bool quiet() const { return world != nullptr && world->rank() != 0; }  // prints nothing but errors
};

// --share and --share-wait: `auto` joins the launcher's world (MPI) as share RANK/SIZE; `I/N`
// runs share I of N, merged over the launcher's world when there is one (it must be that rank's
// share), else alone. Every process of the job must call it (MPI_Init is collective).
Result<Campaign> join_campaign(const Arguments& args);

// How this process takes part: with --share, join_campaign; without, lockstep where
// join_lockstep calls for it (and --share-wait alone is a usage error).
Result<Campaign> join_job(const Arguments& args, const std::vector<std::string>& specs, Lockstep& lockstep);

// The header's words for the campaign, `, a campaign of 3 shares on 3 hosts` and the like; empty
// without --share.
std::string describe(const Campaign&);

// Rank 0: the report merged from every share's (`mine` its own), waiting for the others until
// the later of now and `start` + the time budget, plus --share-wait; a share not heard from by
// then is named in it. Other ranks send theirs to rank 0 and get it back. Alone: `mine`.
CheckReport campaign_report(const Campaign&, const CheckReport& mine, const CheckOptions& options,
                            std::chrono::steady_clock::time_point start);

}  // namespace collcheck::cli

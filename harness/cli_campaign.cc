// Lockstep under a launcher; a campaign's share of the stream from --share (the launcher's rank
// and size, or I/N), the hosts named at the start, and the shares' reports merged on rank 0 over
// MPI with a deadline.
#include "harness/cli_campaign.h"

#include <algorithm>
#include <optional>
#include <span>

#include "harness/campaign.h"
#include "impls/registry.h"
#include "impls/worlds/control_socket.h"
#include "impls/worlds/mpi_world.h"
#include "reference/numbers.h"

namespace collcheck::cli {
namespace {

const std::string kShareAllowed =
    ": must be auto (the launcher's rank and size) or I/N, share I of N with 0 <= I < N <= " +
    std::to_string(kMaxShares);

Result<CaseShare> parse_share(const std::string& text) {
  const std::size_t slash = text.find('/');
  if (slash == std::string::npos) return Error{"--share", quoted_input(text) + kShareAllowed};
  Result<std::uint64_t> index = parse_count("--share", text.substr(0, slash), 0, kMaxShares - 1);
  Result<std::uint64_t> count = parse_count("--share", text.substr(slash + 1), 1, kMaxShares);
  if (!index || !count || *index >= *count) return Error{"--share", quoted_input(text) + kShareAllowed};
  return CaseShare{*index, *count};
}

// Every rank's host name, in rank order.
std::vector<std::string> host_names(World& world) {
  const std::string mine = this_host_name();
  const auto bytes = world.allgather(std::as_bytes(std::span(mine.data(), mine.size())));
  std::vector<std::string> hosts;
  hosts.reserve(bytes.size());
  for (const auto& host : bytes) hosts.emplace_back(reinterpret_cast<const char*>(host.data()), host.size());
  return hosts;
}

}  // namespace

Status join_lockstep(const std::vector<std::string>& specs, Lockstep& lockstep) {
  if (!launched_by_launcher()) return Ok{};
  const bool across =
      std::any_of(specs.begin(), specs.end(), [](const std::string& s) { return runs_across_processes(s); });
  if (!across) return Ok{};
  if (!std::all_of(specs.begin(), specs.end(), [](const std::string& s) { return runs_across_processes(s); })) {
    return Error{"--backend",
                 "under mpirun every backend must run across processes (@proc, mpi, gloo); run @sim ones alone"};
  }
  Result<World*> world = launched_world();
  if (!world) return world.error();
  lockstep.world = *world;
  lockstep.quiet = (*world)->rank() != 0;
  return Ok{};
}

Result<Campaign> join_campaign(const Arguments& args) {
  Campaign campaign;
  campaign.asked = true;
  const std::string text = args.get("share");
  Result<double> wait = parse_duration("--share-wait", args.get("share-wait"), DurationRange{0, false, 86400});
  if (!wait) return wait.error();
  campaign.share_wait = *wait;
  campaign.share_wait_text = args.get("share-wait");
  std::optional<CaseShare> given;
  if (text != "auto") {
    Result<CaseShare> share = parse_share(text);
    if (!share) return share.error();
    given = *share;
  }
  if (!launched_by_launcher()) {
    if (!given) {
      return Error{"--share",
                   "auto: no launcher started this process (no Open MPI, PMI, PMIx or Slurm variables); "
                   "run under mpirun or srun, or give --share I/N"};
    }
    campaign.share = *given;
    return campaign;
  }
  Result<World*> world = launched_world();
  if (!world) return world.error();
  const CaseShare launched{static_cast<std::size_t>((*world)->rank()), static_cast<std::size_t>((*world)->size())};
  if (given && (given->index != launched.index || given->count != launched.count)) {
    return Error{"--share", quoted_input(text) + ": the launcher started this process as share " +
                                std::to_string(launched.index) + "/" + std::to_string(launched.count) +
                                "; give auto (or that)"};
  }
  campaign.share = launched;
  campaign.world = *world;
  campaign.hosts = host_names(**world);
  // Each share launches worlds of its own (mpirun as a child): they must not see this job's.
  leave_launcher_environment();
  return campaign;
}

Result<Campaign> join_job(const Arguments& args, const std::vector<std::string>& specs, Lockstep& lockstep) {
  if (!args.has("share")) {
    if (args.has("share-wait")) return Error{"--share-wait", "goes with --share (a campaign)"};
    Status joined = join_lockstep(specs, lockstep);
    if (!joined) return joined.error();
    return Campaign{};
  }
  Result<Campaign> campaign = join_campaign(args);
  if (campaign) lockstep.quiet = campaign->quiet();
  return campaign;
}

std::string describe(const Campaign& campaign) {
  if (!campaign.asked) return "";
  const std::string share = std::to_string(campaign.share.index) + "/" + std::to_string(campaign.share.count);
  if (!campaign.merged()) return ", share " + share + " of a campaign (this share alone: no launcher to merge over)";
  std::vector<std::string> hosts = campaign.hosts;
  std::sort(hosts.begin(), hosts.end());
  const auto distinct = static_cast<std::size_t>(std::unique(hosts.begin(), hosts.end()) - hosts.begin());
  return ", a campaign of " + std::to_string(campaign.share.count) + " shares on " + std::to_string(distinct) +
         " host" + (distinct == 1 ? "" : "s");
}

CheckReport campaign_report(const Campaign& campaign, const CheckReport& mine, const CheckOptions& options,
                            std::chrono::steady_clock::time_point start) {
  if (!campaign.merged()) return mine;
  const auto seconds = [](double s) {
    return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(s));
  };
  const auto budget_end = start + seconds(options.time_budget);
  const auto deadline = std::max(std::chrono::steady_clock::now(), budget_end) + seconds(campaign.share_wait);
  const std::string bytes = encode_report(mine);
  const auto gathered = gather_at_rank_zero(std::as_bytes(std::span(bytes.data(), bytes.size())), deadline);
  if (gathered.empty()) return mine;  // not rank 0: sent
  std::vector<std::optional<CheckReport>> shares(gathered.size());
  std::vector<std::string> why(gathered.size(), "no report within --share-wait " + campaign.share_wait_text +
                                                    " past the time budget (it stopped, hung or died)");
  for (std::size_t i = 0; i < gathered.size(); ++i) {
    if (!gathered[i]) continue;
    Result<CheckReport> report =
        i == 0
            ? Result<CheckReport>(mine)
            : decode_report(std::string_view(reinterpret_cast<const char*>(gathered[i]->data()), gathered[i]->size()));
    if (report) shares[i] = std::move(*report);
    else why[i] = report.error().text();
  }
  return merge_reports(shares, campaign.hosts, why, options.max_failures);
}

}  // namespace collcheck::cli

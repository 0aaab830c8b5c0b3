// Whether RDMA can run on this machine (ibverbs.h: rdma_cannot_run_here): libibverbs built in and
// loadable, and a device found; the verbs a spec chooses, read and opened. Built with or without
// libibverbs' headers.
#include "collcheck/config.h"
#include "impls/ib/ibverbs.h"
#include "impls/ib/loopback_verbs.h"
#include "reference/numbers.h"

namespace collcheck::ib {

#if !COLLCHECK_HAVE_IBVERBS
Result<std::unique_ptr<Verbs>> load_ibverbs() {
  return Error{"ib", "this build has no libibverbs: " COLLCHECK_IBVERBS_REASON};
}
#endif

Result<bool> apply_verbs_option(const KeyValue& item, VerbsChoice& choice) {
  if (item.key == "verbs") {
    constexpr std::string_view kVerbs[] = {"ibverbs", "loopback"};
    Result<std::size_t> which = read_choice(item, kVerbs);
    if (!which) return which.error();
    choice.loopback = *which == 1;
    return true;
  }
  if (item.key == "dev") {
    if (item.value.empty()) return Error{"", "dev=: must name an RDMA device (ibv_devices lists them)"};
    choice.device = std::string(item.value);
    return true;
  }
  if (item.key != "port" && item.key != "gid") return false;
  Result<std::uint64_t> number = read_unsigned(item, item.key == "port" ? 1 : 0, 255);
  if (!number) return number.error();
  (item.key == "port" ? choice.port : choice.gid_index) = static_cast<int>(*number);
  return true;
}

Result<std::unique_ptr<Device>> open_chosen(const VerbsChoice& choice, std::unique_ptr<Verbs>& owned) {
  if (choice.loopback) return process_loopback().open(choice.device, choice.port, choice.gid_index);
  Result<std::unique_ptr<Verbs>> loaded = load_ibverbs();
  if (!loaded) return loaded.error();
  owned = std::move(*loaded);
  return owned->open(choice.device, choice.port, choice.gid_index);
}

std::string verbs_cannot_run_here(const VerbsChoice& choice) {
  const std::string why = choice.loopback ? std::string() : rdma_cannot_run_here();
  return why.empty() ? why : why + "; verbs=loopback runs it in one process";
}

std::string rdma_cannot_run_here() {
  Result<std::unique_ptr<Verbs>> verbs = load_ibverbs();
  if (!verbs) return verbs.error().message;
  Result<std::vector<std::string>> devices = (*verbs)->devices();
  return devices ? std::string() : devices.error().message;
}

}  // namespace collcheck::ib

// Whether RDMA can run on this machine (ibverbs.h: rdma_cannot_run_here): libibverbs built in and
// loadable, and a device found. Built with or without libibverbs' headers.
#include "collcheck/config.h"
#include "impls/ib/ibverbs.h"

namespace collcheck::ib {

#if !COLLCHECK_HAVE_IBVERBS
Result<std::unique_ptr<Verbs>> load_ibverbs() {
  return Error{"ib", "this build has no libibverbs: " COLLCHECK_IBVERBS_REASON};
}
#endif

std::string rdma_cannot_run_here() {
  Result<std::unique_ptr<Verbs>> verbs = load_ibverbs();
  if (!verbs) return verbs.error().message;
  Result<std::vector<std::string>> devices = (*verbs)->devices();
  return devices ? std::string() : devices.error().message;
}

}  // namespace collcheck::ib

// nccl-tests' size and bus-bandwidth factor per collective.
#include "reference/bandwidth.h"

#include <algorithm>

namespace collcheck {

std::size_t algorithm_bytes(const Case& c) {
  return std::max(input_elements(c), output_elements(c)) * size_of(c.dtype);
}

double bus_factor(Collective collective, int nranks) {
  const double n = nranks;
  switch (collective) {
    case Collective::AllReduce: return 2 * (n - 1) / n;
    case Collective::AllGather:
    case Collective::ReduceScatter:
    case Collective::AllToAll: return (n - 1) / n;
    default: return 1;
  }
}

}  // namespace collcheck

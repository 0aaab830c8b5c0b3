// A segment of shared memory that one member of a world creates and the members on its host map:
// in shared memory (shm_open), or a file under /tmp where that fails; named by segment_name
// (leftovers.h), so that one left by a killed process is swept away.
#pragma once

#include <cstddef>
#include <string>

#include "reference/result.h"

namespace collcheck {

// Where a segment is: 's' (shm_open's name) or 'f' (a file), then the path; what the creator
// tells the others.
using SegmentPlace = std::string;

// Creates `bytes` of zeroed shared memory named segment_name(job, rank) and maps it at `base`;
// an error names `field`.
Result<SegmentPlace> create_segment(const std::string& job, int rank, std::size_t bytes, std::byte*& base,
                                    const std::string& field);

// Maps `bytes` of the segment at `place`; null on an error, then said in `error`.
std::byte* map_segment(const SegmentPlace& place, std::size_t bytes, std::string& error);

// Removes the segment's name (the mappings stay until unmapped).
void unlink_segment(const SegmentPlace& place);

}  // namespace collcheck

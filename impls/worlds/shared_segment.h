// A segment of shared memory that one member of a world creates and the members on its host map:
// in shared memory (shm_open), or a file under /tmp where that fails or has no room; named by
// segment_name (leftovers.h), so that one left by a killed process is swept away.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "reference/result.h"

namespace collcheck {

// Where a segment is: 's' (shm_open's name) or 'f' (a file), then the path; what the creator
// tells the others.
using SegmentPlace = std::string;

// How the error of a segment that no place had room for begins: the machine (a container's small
// /dev/shm), not the run, is short, and a backend reports such a run refused, not as a finding.
inline constexpr std::string_view kNoRoomForSegment = "shared memory has no room";

// Creates `bytes` of zeroed shared memory named segment_name(job, rank) and maps it at `base`, its
// pages reserved before anything touches them; an error names `field`, and begins with
// kNoRoomForSegment where neither /dev/shm nor /tmp had room for it.
Result<SegmentPlace> create_segment(const std::string& job, int rank, std::size_t bytes, std::byte*& base,
                                    const std::string& field);

// Whether a rank's error, as it travelled (a peer's text, an exception's), says that a segment
// found no room: the run is then refused (RunEnding::refused), whichever executor's segment it was.
bool says_no_room_for_segment(std::string_view error);

// Maps `bytes` of the segment at `place`; null on an error, then said in `error`.
std::byte* map_segment(const SegmentPlace& place, std::size_t bytes, std::string& error);

// Removes the segment's name (the mappings stay until unmapped).
void unlink_segment(const SegmentPlace& place);

}  // namespace collcheck

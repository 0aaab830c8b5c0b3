// Thread worlds for Gloo's algorithms in tests (label gloo): a spec made on every member of a
// fresh world, each member on its own thread, and the checks of its results against the oracle.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "impls/backend/rank_backend.h"

namespace collcheck::gloo_worlds {

// The one spec `text` names (a test failure where it names none or several).
RankBackendSpec one_spec(const std::string& text);

using RankBody = std::function<void(int rank, RankBackend&, std::vector<std::string>& failures)>;

// Makes the backend on every member of a fresh `nranks` thread world (each member on its own
// thread, as the connection is collective) and runs `body` there; returns every rank's failures.
std::vector<std::string> on_world(const RankBackendSpec& spec, int nranks, const RankBody& body);

// What a rank's result must be: the oracle's output, intact guards, an untouched out-of-place input.
void check_result(const Case& c, int rank, const RankResult& r, std::vector<std::string>& failures);

// Runs every case on every rank and checks each rank's result; an error is a failure. `cases`
// must outlive the body.
RankBody run_cases(const std::vector<Case>& cases, const RankRunOptions& options = {});

// Every rank's outcome and error of one run of `c` on a fresh world, as "detected: ERROR".
std::vector<std::string> outcomes_of(const std::string& text, const Case& c);

}  // namespace collcheck::gloo_worlds

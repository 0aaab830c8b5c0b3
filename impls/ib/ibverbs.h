// The verbs interface (verbs.h) over libibverbs, loaded at run time with dlopen of
// libibverbs.so.1, so that a build with the headers but without RDMA hardware (or without the
// library) still runs everything else. Built where CMake finds infiniband/verbs.h; the probe of
// whether RDMA can run here everywhere (rdma_here.cc).
#pragma once

#include <memory>
#include <string>

#include "impls/ib/verbs.h"
#include "reference/key_values.h"
#include "reference/result.h"

namespace collcheck::ib {

// libibverbs, or why it cannot be loaded ("cannot load libibverbs.so.1: ...", or that this build
// has no libibverbs). Its devices() is an error naming the reason where ibv_get_device_list finds
// none.
Result<std::unique_ptr<Verbs>> load_ibverbs();

// One of a spec's `verbs`, `dev`, `port` and `gid` options into `choice`: true when `item` was one
// of them, false when it is none; an error names the option and what it allows.
Result<bool> apply_verbs_option(const KeyValue& item, VerbsChoice& choice);

// Opens the chosen port: the process's loopback, or libibverbs loaded into `owned` (which must
// outlive the device).
Result<std::unique_ptr<Device>> open_chosen(const VerbsChoice& choice, std::unique_ptr<Verbs>& owned);

// Why a transport on the chosen verbs cannot run here: "" for the loopback (it runs anywhere), else
// rdma_cannot_run_here()'s reason and that verbs=loopback would run it: what `ALGORITHM@ib` and
// `ALGORITHM@cuda:mode=processes,net=ib` say before launching anything.
std::string verbs_cannot_run_here(const VerbsChoice& choice);

// Why RDMA hardware cannot be used here (no libibverbs, no device: the reason), or "" where
// libibverbs finds a device: what `ALGORITHM@ib` and `nccl:net=ib` say before launching anything.
std::string rdma_cannot_run_here();

}  // namespace collcheck::ib

// A build measured on several devices at once: each phase's measurements as a plan, dealt to shards by expected
// time, and the shards' journals checked and merged back (docs/sharding.md).
#pragma once

#include <vector>

#include "nnmeter/profiling.h"
#include "profiling/journal.h"

namespace nnmeter::sharding {

// The measurements a phase still needs of one job: its batch and the repeat indices not yet journaled.
struct PhaseJob {
  size_t batch = 0;
  const ProfileJob* job = nullptr;
  std::vector<int> repeats;
};

// Called by profile_batches, with options.sharding active, for a phase that has measurements to do (`todo`, in the
// batches' order). Merge mode with the shards' journals of this phase's plan: checks them (every planned repeat in
// its own shard's journal, none in another's, none of another plan) and appends them to `journals`. Otherwise the
// plan is written (root/plan.json) and MeasurementPlanned thrown.
void take_phase(const std::vector<ProfileBatch>& batches, const std::vector<PhaseJob>& todo, const ProfilerOptions& options,
                const std::vector<Journal*>& journals);

// The shard (1-based) of every job of `costs`, dealt largest first to the shard with the least expected time so
// far (ties: the lower shard), so that the largest shard is as short as the costs allow.
std::vector<int> deal(const std::vector<double>& costs, int shards);

}  // namespace nnmeter::sharding

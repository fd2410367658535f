// The roles of the processes of an MPI job. Rank 0, the leader, runs the verb (HTTP, scheduler, sampling, output): its
// model is a LeaderModel that broadcasts each step before running its own shards of it. Every other rank is a worker:
// it loads the same model over the same devices, then runs the steps it is sent until the leader stops it. The
// collectives inside the forward pass combine the shards.
#pragma once

#include <memory>

#include "hal/process_group.h"
#include "model/model.h"

namespace cai::dist {

// Whether this process is a worker of an MPI job (rank > 0).
bool is_worker();

// Checks that every process loaded the same model with the same layout and KV cache, and its MTP module or not (the
// arguments or files may differ between machines): errors name the first rank that differs and what differs.
Status check_same_model(Model& model, hal::ProcessGroup& group);

// The leader's model: forward() (and its MTP module's forward_mtp) broadcasts the step, then runs this process's
// shards. When a transfer between the
// processes fails the group is broken: the step fails (unavailable, naming the rank), and 2 s later the leader
// aborts the job with exit status 3 (time for the failed requests' answers to reach their clients), so an
// orchestrator restarts the whole group. Destroying it tells the workers to stop.
std::unique_ptr<Model> make_leader_model(std::unique_ptr<Model> model, hal::ProcessGroup& group);

// A worker's life after loading: runs the leader's steps on `model` until told to stop, then leaves the job. Never
// returns: exits 0 when stopped, and ends the job (non-zero) when a step or a transfer fails or the leader is gone.
[[noreturn]] void run_worker(Model& model, hal::ProcessGroup& group);

}  // namespace cai::dist

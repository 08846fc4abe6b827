// The environment torch.distributed's env:// rendezvous reads, as Trainyard gives it to a
// replica (issue 4): the world is the primary (rank 0, which hosts the store) and the workers
// (ranks 1..N); parameter servers and evaluators are outside it. Shared by the scheduler and
// `trainyard local train --distributed`, so both follow one rule.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace trainyard::model {

// Every variable TorchDistributedEnv may set (a caller that must clear them for replicas
// outside the world uses this list).
inline constexpr std::array<const char*, 5> kTorchEnvNames = {"MASTER_ADDR", "MASTER_PORT",
                                                              "WORLD_SIZE", "RANK", "LOCAL_RANK"};

// The variables of one replica: `primary` is the master (or chief), else `worker_index` >= 0
// names a worker; anything else gets none. Each replica stands for its own machine, so
// LOCAL_RANK is 0; the primary listens on 127.0.0.1:`primary_port`.
inline std::vector<std::pair<std::string, std::string>> TorchDistributedEnv(bool primary,
                                                                            int64_t worker_index,
                                                                            int64_t workers,
                                                                            int primary_port) {
  if (!primary && worker_index < 0) return {};
  const int64_t rank = primary ? 0 : worker_index + 1;
  return {{"MASTER_ADDR", "127.0.0.1"},
          {"MASTER_PORT", std::to_string(primary_port)},
          {"WORLD_SIZE", std::to_string(1 + workers)},
          {"RANK", std::to_string(rank)},
          {"LOCAL_RANK", "0"}};
}

}  // namespace trainyard::model

#pragma once

#include <memory>
#include <string>

#include "trainyard/store/job_store.h"

namespace trainyard::store {

struct SqliteOptions {
  std::string path;  // database file; created with its directory if absent
  // Durability: "NORMAL" survives a crash of the process (the promise); "FULL" also survives
  // power loss at a cost in create throughput.
  std::string synchronous = "NORMAL";
};

// Opens (creating and migrating) the database. Migrations are numbered and applied in order.
Result<std::unique_ptr<JobStore>> OpenSqliteJobStore(const SqliteOptions& options);

// An in-memory store with the same semantics (tests of other modules).
std::unique_ptr<JobStore> NewInMemoryJobStore();

}  // namespace trainyard::store

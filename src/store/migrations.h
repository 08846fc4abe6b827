// The numbered schema migrations of the SQLite store. Private to src/store.
#pragma once

#include <span>

#include "sqlite_db.h"

namespace trainyard::store::sqlite {

struct Migration {
  int version;      // 1, 2, ... in order; the database's PRAGMA user_version after applying it
  const char* sql;  // statements run inside the migration transaction
};

// Every migration, oldest first. Append only: never edit a released migration.
std::span<const Migration> Migrations();
int LatestSchemaVersion();

// Brings the database to LatestSchemaVersion() in one IMMEDIATE transaction (concurrent openers
// wait; the version is re-read inside the transaction). FAILED_PRECONDITION when the database
// was written by a newer Trainyard.
Status Migrate(Connection& conn, const std::string& path);

}  // namespace trainyard::store::sqlite

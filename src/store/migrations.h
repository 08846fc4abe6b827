// The numbered schema migrations of the SQLite store. Private to src/store.
#pragma once

#include <span>

#include "sqlite_db.h"

namespace trainyard::store::sqlite {

// The sort value of a time column as SQL (store_common.h, TimeSortValue: whole seconds, floored;
// an unset time, 0, after every set one). The version-4 indexes are on these expressions, and a
// query uses such an index only when it spells the expression exactly the same: never change it
// (a new spelling needs new indexes in a new migration).
#define TY_TIME_SORT_SQL(column)                                                         \
  "(CASE WHEN " column " = 0 THEN 9223372036854775807 WHEN " column " < 0 THEN (" column \
  " + 1) / 1000000 - 1 ELSE " column " / 1000000 END)"

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

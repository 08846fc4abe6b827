// Online backup and restore of a daemon's data dir (`trainyard admin backup|restore`,
// docs/backup.md). A backup is a directory laid out like a data dir:
//
//   <backup>/trainyard.db    a consistent copy of the store, made with SQLite's online backup
//                            API in one read transaction: the daemon keeps running and writing
//                            while it is taken, and the copy is the database as of one commit
//   <backup>/buckets/...     the bucket store (staged packages, gs:// job dirs), copied after the
//                            database, so every object a backed-up job names is in it
//   <backup>/<other files>   the rest of the data dir's own files (tokens, secrets, TLS
//                            certificate, containers.conf, ...)
//   <backup>/BACKUP.json     the manifest, written last: a backup without it is incomplete
//
// Left out, as a new daemon rebuilds them: envs/ (cached Python environments), jobs/ (replica
// work dirs of running trainers), python/ (written at every start), the lock and the WAL files.
// Modes and modification times are kept (an object's generation is its mtime); run as root,
// owners are kept too.
//
// Needs only SQLite and the file system, not a running daemon (so the CLI can link it).
#pragma once

#include <cstdint>
#include <string>

#include "trainyard/core/status.h"

namespace trainyard::store {

struct BackupSummary {
  int schema_version = 0;  // PRAGMA user_version of the copied database
  int64_t jobs = 0;        // rows of its jobs table
  int64_t log_chunks = 0;  // rows of its log_chunks table
  int64_t database_bytes = 0;
  int64_t files = 0;  // copied besides the database (buckets included)
  int64_t file_bytes = 0;
};

// Backs up `data_dir` (its bucket store at `buckets_dir`; "" = <data_dir>/buckets) into `dest`,
// which must not exist or be an empty directory, and must not lie inside either. NOT_FOUND
// when data_dir holds no trainyard.db; the database copy is checked (PRAGMA quick_check)
// before the manifest is written.
Result<BackupSummary> BackupDataDir(const std::string& data_dir, const std::string& buckets_dir,
                                    const std::string& dest);

// Restores the backup at `backup` into `data_dir` (its buckets into `buckets_dir`; "" =
// <data_dir>/buckets). Refuses a backup without a manifest and a data dir that is not empty
// (FAILED_PRECONDITION naming it): a restore never mixes with or overwrites existing data.
Result<BackupSummary> RestoreDataDir(const std::string& backup, const std::string& data_dir,
                                     const std::string& buckets_dir);

}  // namespace trainyard::store

#include "migrations.h"

#include <cstdlib>
#include <string>

namespace trainyard::store::sqlite {
namespace {

// Version 1: jobs, their state history, and job log lines (in chunks). Unreleased: edited in
// place when logs moved from one row per line to chunks; append new versions from here on.
constexpr const char* kV1 = R"sql(
CREATE TABLE jobs (
  seq                   INTEGER PRIMARY KEY AUTOINCREMENT,
  project               TEXT    NOT NULL,
  job_id                TEXT    NOT NULL,
  state                 INTEGER NOT NULL,
  create_time           INTEGER NOT NULL,
  start_time            INTEGER NOT NULL DEFAULT 0,
  end_time              INTEGER NOT NULL DEFAULT 0,
  etag                  TEXT    NOT NULL DEFAULT '',
  error_message         TEXT    NOT NULL DEFAULT '',
  labels_json           TEXT    NOT NULL DEFAULT '{}',
  training_input_json   TEXT    NOT NULL DEFAULT '',
  spec_json             TEXT    NOT NULL DEFAULT '{}',
  consumed_ml_units     REAL    NOT NULL DEFAULT 0,
  consumed_ml_units_set INTEGER NOT NULL DEFAULT 0,
  training_output_json  TEXT    NOT NULL DEFAULT ''
);
CREATE UNIQUE INDEX jobs_project_job_id ON jobs (project, job_id);
CREATE INDEX jobs_project_seq ON jobs (project, seq);
CREATE INDEX jobs_project_state_seq ON jobs (project, state, seq);
CREATE INDEX jobs_state ON jobs (state);

CREATE TABLE job_state_history (
  id         INTEGER PRIMARY KEY,
  job_seq    INTEGER NOT NULL REFERENCES jobs (seq) ON DELETE CASCADE,
  from_state INTEGER NOT NULL,
  to_state   INTEGER NOT NULL,
  time       INTEGER NOT NULL,
  reason     TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX job_state_history_job ON job_state_history (job_seq, id);

-- Log lines in chunks: consecutive lines of one (project, job_id, task_name, trial_id) stream
-- with insert ids first_id..last_id (log_chunk.h encodes `data`). AUTOINCREMENT makes
-- sqlite_sequence remember the highest last_id ever used, so insert ids are never reused.
CREATE TABLE log_chunks (
  last_id   INTEGER PRIMARY KEY AUTOINCREMENT,
  first_id  INTEGER NOT NULL,
  project   TEXT    NOT NULL,
  job_id    TEXT    NOT NULL,
  task_name TEXT    NOT NULL DEFAULT '',
  trial_id  TEXT    NOT NULL DEFAULT '',
  min_ts    INTEGER NOT NULL,
  max_ts    INTEGER NOT NULL,
  data      BLOB    NOT NULL
);
CREATE INDEX log_chunks_job ON log_chunks (project, job_id, last_id);
CREATE INDEX log_chunks_project ON log_chunks (project, last_id);

)sql";

// Version 2: timestamp-ordered log reads (docs/store.md, "Log order"). Chunks by their earliest
// line, per job and per project; and the longest time span of any chunk written before this
// version (from now on the store bounds a chunk's span, so this never needs to grow).
constexpr const char* kV2 = R"sql(
CREATE INDEX log_chunks_job_ts ON log_chunks (project, job_id, min_ts, max_ts);
CREATE INDEX log_chunks_project_ts ON log_chunks (project, min_ts, max_ts);
CREATE TABLE log_chunk_span (max_span INTEGER NOT NULL);
INSERT INTO log_chunk_span SELECT coalesce(max(max_ts - min_ts), 0) FROM log_chunks;
)sql";

// Version 3: per replica stream, how far into which attempt's log file the store has stored
// lines (LogEntry::source_offset), so lines delivered again after a crash are dropped.
constexpr const char* kV3 = R"sql(
CREATE TABLE log_cursors (
  project        TEXT    NOT NULL,
  job_id         TEXT    NOT NULL,
  trial_id       TEXT    NOT NULL,
  task_name      TEXT    NOT NULL,
  source_attempt INTEGER NOT NULL,
  source_offset  INTEGER NOT NULL,
  PRIMARY KEY (project, job_id, trial_id, task_name)
) WITHOUT ROWID;
)sql";

// Version 4: projects.jobs.list's orderBy (docs/store.md, "Job order"). One index per time key
// on (project, the time's sort value, seq): a page in either direction is one range of it, ties
// in seq order. The state rides along so a state filter is checked without reading the row.
// orderBy=jobId uses jobs_project_job_id and orderBy=state jobs_project_state_seq.
#define TY_ORDER_INDEX(name, column) \
  "CREATE INDEX " name " ON jobs (project, " TY_TIME_SORT_SQL(column) ", seq, state);\n"
constexpr const char* kV4 = TY_ORDER_INDEX("jobs_project_create_order", "create_time")
    TY_ORDER_INDEX("jobs_project_start_order", "start_time")
        TY_ORDER_INDEX("jobs_project_end_order", "end_time");
#undef TY_ORDER_INDEX

constexpr Migration kMigrations[] = {
    {1, kV1},
    {2, kV2},
    {3, kV3},
    {4, kV4},
};

}  // namespace

std::span<const Migration> Migrations() { return kMigrations; }

int LatestSchemaVersion() { return kMigrations[std::size(kMigrations) - 1].version; }

Status Migrate(Connection& conn, const std::string& path) {
  TRAINYARD_RETURN_IF_ERROR(conn.Exec("BEGIN IMMEDIATE"));
  auto apply = [&]() -> Status {
    TRAINYARD_ASSIGN_OR_RETURN(std::string text, conn.QueryText("PRAGMA user_version"));
    int current = std::atoi(text.c_str());
    if (current > LatestSchemaVersion()) {
      return FailedPrecondition("Database " + path + " has schema version " +
                                std::to_string(current) + ", newer than the " +
                                std::to_string(LatestSchemaVersion()) +
                                " this Trainyard supports; upgrade Trainyard to open it");
    }
    for (const Migration& m : kMigrations) {
      if (m.version <= current) continue;
      Status s = conn.Exec(m.sql);
      if (!s.ok()) {
        return Status(s.code(), "Migration " + std::to_string(m.version) + " of " + path +
                                    " failed: " + s.message());
      }
      TRAINYARD_RETURN_IF_ERROR(
          conn.Exec(("PRAGMA user_version = " + std::to_string(m.version)).c_str()));
    }
    return Status::Ok();
  };
  Status status = apply();
  if (!status.ok()) {
    (void)conn.Exec("ROLLBACK");
    return status;
  }
  return conn.Exec("COMMIT");
}

}  // namespace trainyard::store::sqlite

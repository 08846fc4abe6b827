// SqliteJobStore: the embedded JobStore on SQLite in WAL mode.
//
// Writes go through one writer connection with group commit: concurrent callers queue their
// write operations; whichever caller finds the writer idle becomes the leader, runs every queued
// operation inside one IMMEDIATE transaction (each under its own SAVEPOINT, so one failing
// operation does not affect the others) and commits once. Every caller returns only after the
// commit that contains its operation, so an OK result is durable while many writers share the
// cost of each commit.
//
// Reads use a pool of separate connections: WAL lets them run concurrently with each other and
// with the writer, so GetJob/ListJobs/ReadLogs never wait behind a commit or a log append.
//
// Log lines are stored in chunks, one row per run of consecutive lines of one stream (see
// log_chunk.h and docs/store.md), so the per-row SQLite cost is paid per chunk, not per line.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "job_codec.h"
#include "log_chunk.h"
#include "migrations.h"
#include "sqlite_db.h"
#include "store_common.h"
#include "trainyard/core/failpoint.h"
#include "trainyard/core/log.h"
#include "trainyard/core/time.h"
#include "trainyard/core/util.h"
#include "trainyard/store/store_sqlite.h"

namespace trainyard::store {
namespace {

using model::Job;
using model::JobState;
using model::LogEntry;
using sqlite::Connection;
using sqlite::Stmt;

constexpr int kBusyTimeoutMs = 5000;
// Most write operations one commit carries (bounds the latency a large batch adds).
constexpr size_t kMaxBatch = 256;
// Idle reader connections kept open.
constexpr size_t kMaxIdleReaders = 8;
// A jobId prefix (or createTime floor) matching at most this many jobs is listed through the
// (project, job_id) index (the createTime index) and sorted; a less selective one is checked
// while walking the page's order.
constexpr int64_t kPrefixIndexMaxRows = 2000;
// Bounds of one log chunk (a chunk is read whole even when a cursor or limit needs a few lines).
constexpr size_t kMaxChunkLines = 4096;
constexpr size_t kMaxChunkBytes = 1 << 20;
// Most time one chunk's lines span (max_ts - min_ts). A timestamp-ordered read starting at time
// T needs the chunks holding lines at or after T: with this bound they are the chunks with
// min_ts >= T - span, one range of the (project, job_id, min_ts) index (docs/store.md).
constexpr int64_t kMaxChunkSpan = 1'000'000;  // 1 s

constexpr const char* kJobColumns =
    "seq, project, job_id, state, create_time, start_time, end_time, etag, error_message, "
    "labels_json, training_input_json, spec_json, consumed_ml_units, consumed_ml_units_set, "
    "training_output_json";

// Decodes a row selected with kJobColumns. Assigns into `job`'s existing strings so a scan can
// reuse one Job for the rows it rejects.
Status DecodeJob(const Stmt& row, Job* job) {
  job->seq = row.Int(0);
  job->project.assign(row.TextView(1));
  job->job_id.assign(row.TextView(2));
  int64_t state = row.Int(3);
  if (state < 0 || state > static_cast<int64_t>(JobState::kCancelled)) {
    return Internal("corrupt job row " + std::to_string(job->seq) + ": state " +
                    std::to_string(state));
  }
  job->state = static_cast<JobState>(state);
  job->create_time = row.Int(4);
  job->start_time = row.Int(5);
  job->end_time = row.Int(6);
  job->etag.assign(row.TextView(7));
  job->error_message.assign(row.TextView(8));
  Status s = sqlite::DecodeLabels(row.TextView(9), &job->labels);
  if (s.ok()) s = sqlite::DecodeSpec(row.TextView(11), &job->spec);
  if (!s.ok()) {
    return Internal("job row " + std::to_string(job->seq) + " (" + job->Name() +
                    "): " + s.message());
  }
  job->training_input_json.assign(row.TextView(10));
  job->consumed_ml_units = row.Double(12);
  job->consumed_ml_units_set = row.Int(13) != 0;
  job->training_output_json.assign(row.TextView(14));
  job->job_position = 0;
  return Status::Ok();
}

model::Severity DecodeSeverity(int64_t value) {
  switch (value) {
    case 100:
      return model::Severity::kDebug;
    case 200:
      return model::Severity::kInfo;
    case 300:
      return model::Severity::kNotice;
    case 400:
      return model::Severity::kWarning;
    case 500:
      return model::Severity::kError;
    case 600:
      return model::Severity::kCritical;
    case 700:
      return model::Severity::kAlert;
    case 800:
      return model::Severity::kEmergency;
    default:
      return model::Severity::kDefault;
  }
}

// The smallest string greater than every string starting with `prefix`, if one exists.
std::optional<std::string> PrefixUpperBound(std::string prefix) {
  while (!prefix.empty() && static_cast<unsigned char>(prefix.back()) == 0xff) prefix.pop_back();
  if (prefix.empty()) return std::nullopt;
  prefix.back() = static_cast<char>(static_cast<unsigned char>(prefix.back()) + 1);
  return prefix;
}

// One page of ListJobs being filled from one or more statements, each reading rows in the
// page's order.
struct ListScan {
  const ListJobsRequest* request = nullptr;
  size_t page_size = 0;
  std::optional<JobState> state;  // the filter's required state, if any
  ListJobsResponse response;
  bool done = false;  // the page is full and a next match was seen (or there is none)
  Job job;            // reused for rejected rows

  // Adds the rows of `stmt` that pass the filter until the page is full and one more match
  // shows there is a next page. Returns whether the page is done.
  Result<bool> Run(Stmt& stmt) {
    const model::Filter* filter = request->filter;
    while (!done) {
      TRAINYARD_ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) break;
      if (response.jobs.size() == page_size && filter == nullptr) {
        response.next_page_token = internal::EncodePageToken(*request, response.jobs.back());
        done = true;
        break;
      }
      TRAINYARD_RETURN_IF_ERROR(DecodeJob(stmt, &job));
      if (filter != nullptr && !filter->Matches(job)) continue;
      if (response.jobs.size() == page_size) {
        response.next_page_token = internal::EncodePageToken(*request, response.jobs.back());
        done = true;
        break;
      }
      response.jobs.push_back(std::move(job));
      job = Job();
    }
    return done;
  }
};

// The sort value of each time key in SQL, as the version-4 indexes spell it (migrations.h).
constexpr const char* kCreateSortSql = TY_TIME_SORT_SQL("create_time");
constexpr const char* kStartSortSql = TY_TIME_SORT_SQL("start_time");
constexpr const char* kEndSortSql = TY_TIME_SORT_SQL("end_time");

class SqliteJobStore final : public JobStore {
 public:
  SqliteJobStore(std::string path, std::unique_ptr<Connection> writer,
                 std::unique_ptr<Connection> checkpointer)
      : path_(std::move(path)),
        writer_(std::move(writer)),
        checkpoint_conn_(std::move(checkpointer)) {
    // SQLite's automatic checkpoint runs inside the commit that crosses the threshold, on the
    // writer: log ingestion then waits for the WAL to be copied into the database. Commits
    // only count WAL frames here; a thread of its own copies them back.
    sqlite3_wal_hook(writer_->db(), &SqliteJobStore::OnWalCommit, this);
    checkpoint_thread_ = std::thread([this] { CheckpointLoop(); });
  }

  ~SqliteJobStore() override {
    {
      std::lock_guard lock(checkpoint_mu_);
      checkpoint_stop_ = true;
    }
    checkpoint_cv_.notify_all();
    if (checkpoint_thread_.joinable()) checkpoint_thread_.join();
    sqlite3_wal_hook(writer_->db(), nullptr, nullptr);
  }

  static Result<std::unique_ptr<JobStore>> Open(const SqliteOptions& options);

  Result<int64_t> CreateJob(const Job& job) override {
    const std::string labels = sqlite::EncodeLabels(job.labels);
    const std::string spec = sqlite::EncodeSpec(job.spec);
    int64_t seq = 0;
    Status status = Write([&](Connection& conn) -> Status {
      TRAINYARD_ASSIGN_OR_RETURN(
          Stmt stmt,
          conn.Prepare("INSERT INTO jobs (project, job_id, state, create_time, start_time, "
                       "end_time, etag, error_message, labels_json, training_input_json, "
                       "spec_json, consumed_ml_units, consumed_ml_units_set, "
                       "training_output_json) "
                       "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)"));
      stmt.Bind(1, job.project)
          .Bind(2, job.job_id)
          .Bind(3, static_cast<int64_t>(job.state))
          .Bind(4, job.create_time)
          .Bind(5, job.start_time)
          .Bind(6, job.end_time)
          .Bind(7, job.etag)
          .Bind(8, job.error_message)
          .Bind(9, labels)
          .Bind(10, job.training_input_json)
          .Bind(11, spec)
          .Bind(12, job.consumed_ml_units)
          .Bind(13, static_cast<int64_t>(job.consumed_ml_units_set ? 1 : 0))
          .Bind(14, job.training_output_json);
      Status inserted = stmt.Run();
      if (stmt.failed_rc() == SQLITE_CONSTRAINT_UNIQUE) {
        return internal::JobAlreadyExists(job.project, job.job_id);
      }
      TRAINYARD_RETURN_IF_ERROR(inserted);
      seq = conn.last_insert_rowid();
      return Status::Ok();
    });
    if (!status.ok()) return status;
    return seq;
  }

  Result<Job> GetJob(const std::string& project, const std::string& job_id) override {
    TRAINYARD_ASSIGN_OR_RETURN(Reader reader, AcquireReader());
    TRAINYARD_ASSIGN_OR_RETURN(Stmt stmt,
                               reader->Prepare(std::string("SELECT ") + kJobColumns +
                                               " FROM jobs WHERE project = ?1 AND job_id = ?2"));
    stmt.Bind(1, project).Bind(2, job_id);
    TRAINYARD_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) return internal::JobNotFound(project, job_id);
    Job job;
    TRAINYARD_RETURN_IF_ERROR(DecodeJob(stmt, &job));
    return job;
  }

  Status UpdateJob(const Job& job, const std::optional<StateChange>& change) override {
    const std::string labels = sqlite::EncodeLabels(job.labels);
    return Write([&](Connection& conn) -> Status {
      int64_t seq = 0;
      {
        TRAINYARD_ASSIGN_OR_RETURN(
            Stmt stmt, conn.Prepare("UPDATE jobs SET state = ?3, start_time = ?4, end_time = ?5, "
                                    "error_message = ?6, labels_json = ?7, etag = ?8, "
                                    "consumed_ml_units = ?9, consumed_ml_units_set = ?10, "
                                    "training_output_json = ?11 "
                                    "WHERE project = ?1 AND job_id = ?2 RETURNING seq"));
        stmt.Bind(1, job.project)
            .Bind(2, job.job_id)
            .Bind(3, static_cast<int64_t>(job.state))
            .Bind(4, job.start_time)
            .Bind(5, job.end_time)
            .Bind(6, job.error_message)
            .Bind(7, labels)
            .Bind(8, job.etag)
            .Bind(9, job.consumed_ml_units)
            .Bind(10, static_cast<int64_t>(job.consumed_ml_units_set ? 1 : 0))
            .Bind(11, job.training_output_json);
        TRAINYARD_ASSIGN_OR_RETURN(bool row, stmt.Step());
        if (!row) return internal::JobNotFound(job.project, job.job_id);
        seq = stmt.Int(0);
        TRAINYARD_RETURN_IF_ERROR(stmt.Run());
      }
      if (!change) return Status::Ok();
      TRAINYARD_ASSIGN_OR_RETURN(
          Stmt history,
          conn.Prepare("INSERT INTO job_state_history (job_seq, from_state, to_state, time, "
                       "reason) VALUES (?1, ?2, ?3, ?4, ?5)"));
      history.Bind(1, seq)
          .Bind(2, static_cast<int64_t>(change->from))
          .Bind(3, static_cast<int64_t>(change->to))
          .Bind(4, change->time)
          .Bind(5, change->reason);
      return history.Run();
    });
  }

  Result<ListJobsResponse> ListJobs(const ListJobsRequest& request) override {
    TRAINYARD_ASSIGN_OR_RETURN(std::optional<internal::JobCursor> cursor,
                               internal::DecodePageToken(request));
    ListScan scan;
    scan.request = &request;
    scan.page_size = static_cast<size_t>(std::max(1, request.page_size));
    std::optional<std::string> prefix;
    if (request.filter != nullptr) {
      scan.state = request.filter->RequiredState();
      prefix = request.filter->RequiredJobIdPrefix();
      if (prefix && prefix->empty()) prefix.reset();
    }
    std::optional<std::string> upper;
    if (prefix) upper = PrefixUpperBound(*prefix);

    TRAINYARD_ASSIGN_OR_RETURN(Reader reader, AcquireReader());
    bool by_prefix = false;
    if (prefix) {
      TRAINYARD_ASSIGN_OR_RETURN(int64_t n, CountPrefix(*reader, request.project, *prefix, upper));
      by_prefix = n <= kPrefixIndexMaxRows;
    }
    // A lower bound on createTime (createTime>-P1D, the console's recent jobs) that leaves few
    // jobs: read just those through the createTime index instead of every row of the project.
    std::optional<int64_t> created_from;  // seconds, as the index sorts them
    if (!by_prefix && request.filter != nullptr) {
      if (std::optional<Timestamp> t = request.filter->CreateTimeFloor()) {
        const int64_t secs = *t >= 0 ? *t / kMicrosPerSecond : (*t + 1) / kMicrosPerSecond - 1;
        TRAINYARD_ASSIGN_OR_RETURN(int64_t n, CountCreatedFrom(*reader, request.project, secs));
        if (n <= kPrefixIndexMaxRows) created_from = secs;
      }
    }
    // Bound parameters: ?1 project, ?2 seq cursor, ?3 prefix, ?4 prefix upper bound, ?5 state,
    // ?6 sort value cursor, ?7 createTime floor (seconds).
    std::string prefix_terms;
    if (prefix) prefix_terms = upper ? " AND job_id >= ?3 AND job_id < ?4" : " AND job_id >= ?3";
    const std::string created_terms = std::string(" AND ") + kCreateSortSql + " >= ?7";
    auto bind = [&](Stmt& stmt) {
      stmt.Bind(1, request.project);
      if (prefix) stmt.Bind(3, *prefix);
      if (upper) stmt.Bind(4, *upper);
      if (created_from) stmt.Bind(7, *created_from);
    };
    if (request.order.key != JobOrderKey::kDefault) {
      if (by_prefix) {
        return ListFewSorted(*reader, scan, cursor, "jobs_project_job_id", prefix_terms, bind);
      }
      if (created_from) {
        return ListFewSorted(*reader, scan, cursor, "jobs_project_create_order",
                             created_terms + prefix_terms, bind);
      }
      return ListSorted(*reader, scan, cursor, prefix_terms, bind);
    }
    std::string sql = std::string("SELECT ") + kJobColumns + " FROM jobs INDEXED BY ";
    if (by_prefix) {
      sql += "jobs_project_job_id WHERE project = ?1" + prefix_terms + " AND seq < ?2";
      if (scan.state) sql += " AND state = ?5";
    } else if (created_from) {
      sql += "jobs_project_create_order WHERE project = ?1" + created_terms + " AND seq < ?2" +
             prefix_terms;
      if (scan.state) sql += " AND state = ?5";
    } else if (scan.state) {
      sql += "jobs_project_state_seq WHERE project = ?1 AND state = ?5 AND seq < ?2" + prefix_terms;
    } else {
      sql += "jobs_project_seq WHERE project = ?1 AND seq < ?2" + prefix_terms;
    }
    sql += " ORDER BY seq DESC";

    TRAINYARD_ASSIGN_OR_RETURN(Stmt stmt, reader->Prepare(sql));
    bind(stmt);
    stmt.Bind(2, cursor ? cursor->seq : std::numeric_limits<int64_t>::max());
    if (scan.state) stmt.Bind(5, static_cast<int64_t>(*scan.state));
    TRAINYARD_RETURN_IF_ERROR(scan.Run(stmt).status());
    return std::move(scan.response);
  }

  Result<std::vector<Job>> ListActiveJobs() override {
    std::string states;
    for (int s = 0; s <= static_cast<int>(JobState::kCancelled); ++s) {
      if (model::IsTerminal(static_cast<JobState>(s))) continue;
      if (!states.empty()) states += ", ";
      states += std::to_string(s);
    }
    TRAINYARD_ASSIGN_OR_RETURN(Reader reader, AcquireReader());
    TRAINYARD_ASSIGN_OR_RETURN(
        Stmt stmt, reader->Prepare(std::string("SELECT ") + kJobColumns +
                                   " FROM jobs WHERE state IN (" + states + ") ORDER BY seq"));
    std::vector<Job> jobs;
    while (true) {
      TRAINYARD_ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) break;
      Job job;
      TRAINYARD_RETURN_IF_ERROR(DecodeJob(stmt, &job));
      jobs.push_back(std::move(job));
    }
    return jobs;
  }

  Result<std::vector<StateChange>> GetStateHistory(const std::string& project,
                                                   const std::string& job_id) override {
    TRAINYARD_ASSIGN_OR_RETURN(Reader reader, AcquireReader());
    int64_t seq = 0;
    {
      TRAINYARD_ASSIGN_OR_RETURN(
          Stmt stmt, reader->Prepare("SELECT seq FROM jobs WHERE project = ?1 AND job_id = ?2"));
      stmt.Bind(1, project).Bind(2, job_id);
      TRAINYARD_ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) return internal::JobNotFound(project, job_id);
      seq = stmt.Int(0);
    }
    TRAINYARD_ASSIGN_OR_RETURN(
        Stmt stmt, reader->Prepare("SELECT from_state, to_state, time, reason "
                                   "FROM job_state_history WHERE job_seq = ?1 ORDER BY id"));
    stmt.Bind(1, seq);
    std::vector<StateChange> changes;
    while (true) {
      TRAINYARD_ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) break;
      StateChange change;
      change.from = static_cast<JobState>(stmt.Int(0));
      change.to = static_cast<JobState>(stmt.Int(1));
      change.time = stmt.Int(2);
      change.reason = stmt.Text(3);
      changes.push_back(std::move(change));
    }
    return changes;
  }

  Result<std::vector<std::pair<JobState, int64_t>>> CountJobsByState() override {
    TRAINYARD_ASSIGN_OR_RETURN(Reader reader, AcquireReader());
    TRAINYARD_ASSIGN_OR_RETURN(
        Stmt stmt,
        reader->Prepare("SELECT state, count(*) FROM jobs INDEXED BY jobs_state GROUP BY state "
                        "ORDER BY state"));
    std::vector<std::pair<JobState, int64_t>> counts;
    while (true) {
      TRAINYARD_ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) break;
      counts.emplace_back(static_cast<JobState>(stmt.Int(0)), stmt.Int(1));
    }
    return counts;
  }

  Result<std::vector<FinishedJob>> ListFinishedJobs(Timestamp ended_before) override {
    TRAINYARD_ASSIGN_OR_RETURN(Reader reader, AcquireReader());
    TRAINYARD_ASSIGN_OR_RETURN(
        Stmt stmt,
        reader->Prepare("SELECT project, job_id, end_time, (SELECT coalesce(sum(length(data)), 0) "
                        "FROM log_chunks c WHERE c.project = j.project AND c.job_id = j.job_id) "
                        "FROM jobs j WHERE state IN (?1, ?2, ?3) AND (?4 = 0 OR end_time < ?4) "
                        "ORDER BY end_time, seq"));
    stmt.Bind(1, static_cast<int64_t>(JobState::kSucceeded))
        .Bind(2, static_cast<int64_t>(JobState::kFailed))
        .Bind(3, static_cast<int64_t>(JobState::kCancelled))
        .Bind(4, ended_before);
    std::vector<FinishedJob> out;
    while (true) {
      TRAINYARD_ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) break;
      out.push_back({stmt.Text(0), stmt.Text(1), stmt.Int(2), stmt.Int(3)});
    }
    return out;
  }

  Status DeleteJobLogs(const std::string& project, const std::string& job_id) override {
    return Write([&](Connection& conn) -> Status { return DeleteLogRows(conn, project, job_id); });
  }

  // A job's log chunks and its streams' cursors (a job id used again starts from nothing).
  static Status DeleteLogRows(Connection& conn, const std::string& project,
                              const std::string& job_id) {
    for (const char* sql : {"DELETE FROM log_chunks WHERE project = ?1 AND job_id = ?2",
                            "DELETE FROM log_cursors WHERE project = ?1 AND job_id = ?2"}) {
      TRAINYARD_ASSIGN_OR_RETURN(Stmt stmt, conn.Prepare(sql));
      stmt.Bind(1, project).Bind(2, job_id);
      TRAINYARD_RETURN_IF_ERROR(stmt.Run());
    }
    return Status::Ok();
  }

  Status DeleteJob(const std::string& project, const std::string& job_id) override {
    return Write([&](Connection& conn) -> Status {
      int64_t seq = 0;
      {
        TRAINYARD_ASSIGN_OR_RETURN(
            Stmt stmt,
            conn.Prepare("DELETE FROM jobs WHERE project = ?1 AND job_id = ?2 RETURNING seq"));
        stmt.Bind(1, project).Bind(2, job_id);
        TRAINYARD_ASSIGN_OR_RETURN(bool row, stmt.Step());
        if (!row) return internal::JobNotFound(project, job_id);
        seq = stmt.Int(0);
        TRAINYARD_RETURN_IF_ERROR(stmt.Run());
      }
      {
        TRAINYARD_ASSIGN_OR_RETURN(
            Stmt stmt, conn.Prepare("DELETE FROM job_state_history WHERE job_seq = ?1"));
        stmt.Bind(1, seq);
        TRAINYARD_RETURN_IF_ERROR(stmt.Run());
      }
      return DeleteLogRows(conn, project, job_id);
    });
  }

  Status AppendLogs(std::span<LogEntry> entries) override {
    if (entries.empty()) return Status::Ok();
    // Encoded outside the write transaction, so the group-commit leader only inserts rows.
    std::vector<PendingChunk> all_chunks = EncodeChunks(entries);
    return Write([&](Connection& conn) -> Status {
      // Lines of a replica's log file at or before its stream's cursor were stored before a
      // crash and are delivered again: dropped (store_common.h, PastCursor). Rare, so the
      // survivors are encoded again only then; the cursors move on in this transaction.
      std::vector<size_t> kept;
      TRAINYARD_ASSIGN_OR_RETURN(bool dropped, AdvanceLogCursors(conn, entries, &kept));
      std::vector<LogEntry> survivors;
      std::vector<PendingChunk> survivor_chunks;
      std::span<LogEntry> rows = entries;
      const std::vector<PendingChunk>* chunks = &all_chunks;
      if (dropped) {
        for (size_t i : kept) survivors.push_back(entries[i]);
        survivor_chunks = EncodeChunks(survivors);
        rows = survivors;
        chunks = &survivor_chunks;
        TY_LOG_WARN("store", "dropped {} log lines stored before (delivered again after a restart)",
                    entries.size() - kept.size());
      }
      // The highest insert id ever used, read inside the transaction: correct after a reopen,
      // after a rolled-back operation, and with other writers of the same file.
      int64_t last_used = 0;
      {
        TRAINYARD_ASSIGN_OR_RETURN(
            Stmt seq, conn.Prepare("SELECT seq FROM sqlite_sequence WHERE name = 'log_chunks'"));
        TRAINYARD_ASSIGN_OR_RETURN(bool row, seq.Step());
        if (row) last_used = seq.Int(0);
      }
      TRAINYARD_ASSIGN_OR_RETURN(
          Stmt stmt,
          conn.Prepare("INSERT INTO log_chunks (last_id, first_id, project, job_id, task_name, "
                       "trial_id, min_ts, max_ts, data) "
                       "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"));
      for (const PendingChunk& chunk : *chunks) {
        const LogEntry& head = rows[chunk.begin];
        const int64_t first_id = last_used + 1;
        const int64_t last_id = last_used + static_cast<int64_t>(chunk.end - chunk.begin);
        stmt.Bind(1, last_id)
            .Bind(2, first_id)
            .Bind(3, head.project)
            .Bind(4, head.job_id)
            .Bind(5, head.task_name)
            .Bind(6, head.trial_id)
            .Bind(7, chunk.min_ts)
            .Bind(8, chunk.max_ts)
            .BindBlob(9, chunk.data);
        TRAINYARD_RETURN_IF_ERROR(stmt.Run());
        stmt.Reset();
        for (size_t i = chunk.begin; i < chunk.end; ++i) {
          rows[i].insert_id = first_id + static_cast<int64_t>(i - chunk.begin);
        }
        last_used = last_id;
      }
      if (dropped) {
        for (size_t k = 0; k < kept.size(); ++k) entries[kept[k]].insert_id = rows[k].insert_id;
      }
      TY_FAILPOINT("store.logs.before_commit");  // chunks inserted, transaction not committed
      return Status::Ok();
    });
  }

  // Reads the cursors of the streams of `entries` that come from replicas' log files, lists in
  // `kept` the entries past them, and stores the cursors' new positions. Returns whether an
  // entry was dropped (`kept` is only filled then).
  static Result<bool> AdvanceLogCursors(Connection& conn, std::span<const LogEntry> entries,
                                        std::vector<size_t>* kept) {
    // A batch holds one or a few streams: a linear list beats a map.
    struct Stream {
      internal::LogStream key;
      std::optional<internal::LogCursor> stored;
      std::optional<internal::LogCursor> now;
    };
    std::vector<Stream> streams;
    bool dropped = false;
    for (size_t i = 0; i < entries.size(); ++i) {
      const LogEntry& e = entries[i];
      if (e.source_offset <= 0) {
        kept->push_back(i);
        continue;
      }
      internal::LogStream key = internal::StreamOf(e);
      auto it = std::find_if(streams.begin(), streams.end(),
                             [&](const Stream& s) { return s.key == key; });
      if (it == streams.end()) {
        Stream s{std::move(key), std::nullopt, std::nullopt};
        TRAINYARD_ASSIGN_OR_RETURN(
            Stmt read, conn.Prepare("SELECT source_attempt, source_offset FROM log_cursors WHERE "
                                    "project = ?1 AND job_id = ?2 AND trial_id = ?3 AND "
                                    "task_name = ?4"));
        read.Bind(1, e.project).Bind(2, e.job_id).Bind(3, e.trial_id).Bind(4, e.task_name);
        TRAINYARD_ASSIGN_OR_RETURN(bool row, read.Step());
        if (row) {
          s.stored = internal::LogCursor{static_cast<int>(read.Int(0)), read.Int(1)};
        }
        s.now = s.stored;
        streams.push_back(std::move(s));
        it = streams.end() - 1;
      }
      if (!internal::PastCursor(it->now, e)) {
        dropped = true;
        continue;
      }
      it->now = internal::LogCursor{e.source_attempt, e.source_offset};
      kept->push_back(i);
    }
    for (const Stream& s : streams) {
      if (s.now == s.stored) continue;
      TRAINYARD_ASSIGN_OR_RETURN(
          Stmt write, conn.Prepare("INSERT OR REPLACE INTO log_cursors (project, job_id, "
                                   "trial_id, task_name, source_attempt, source_offset) "
                                   "VALUES (?1, ?2, ?3, ?4, ?5, ?6)"));
      write.Bind(1, std::get<0>(s.key))
          .Bind(2, std::get<1>(s.key))
          .Bind(3, std::get<2>(s.key))
          .Bind(4, std::get<3>(s.key))
          .Bind(5, static_cast<int64_t>(s.now->attempt))
          .Bind(6, s.now->offset);
      TRAINYARD_RETURN_IF_ERROR(write.Run());
    }
    return dropped;
  }

  Result<std::vector<LogEntry>> ReadLogs(const LogQuery& query) override {
    if (query.order != LogOrder::kInsertId) return ReadLogsByTime(query);
    // Bound parameters: ?1 project, ?2 job, ?3 cursor, ?4 task, ?5 min time, ?6 max time,
    // ?7 snapshot. Chunks are selected by their ids and time range; lines are filtered while
    // decoding.
    std::string sql =
        "SELECT first_id, last_id, job_id, task_name, trial_id, data FROM log_chunks INDEXED BY ";
    sql += query.job_id.empty() ? "log_chunks_project WHERE project = ?1"
                                : "log_chunks_job WHERE project = ?1 AND job_id = ?2";
    sql += " AND last_id > ?3";
    if (!query.task_name.empty()) sql += " AND task_name = ?4";
    if (query.min_timestamp != 0) sql += " AND max_ts >= ?5";
    if (query.max_timestamp != 0) sql += " AND min_ts < ?6";
    if (query.max_insert_id != 0) sql += " AND first_id <= ?7";
    if (query.trial_id) sql += " AND trial_id = ?11";
    sql += " ORDER BY last_id";

    TRAINYARD_ASSIGN_OR_RETURN(Reader reader, AcquireReader());
    TRAINYARD_ASSIGN_OR_RETURN(Stmt stmt, reader->Prepare(sql));
    BindLogQuery(query, &stmt);
    const size_t limit = static_cast<size_t>(internal::EffectiveLogLimit(query.limit));
    std::vector<LogEntry> entries;
    while (entries.size() < limit) {
      TRAINYARD_ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) break;
      const int64_t first_id = stmt.Int(0);
      const int64_t last_id = stmt.Int(1);
      sqlite::LogChunkReader lines(stmt.BlobView(5));
      sqlite::DecodedLogLine line;
      int64_t id = first_id;
      for (;; ++id) {
        auto next = lines.Next(&line);
        if (!next.ok()) {
          return Internal("log chunk " + std::to_string(last_id) + ": " + next.status().message());
        }
        if (!*next) break;
        if (!LineMatches(query, id, line.timestamp, line.severity)) continue;
        if (entries.size() == limit) break;
        LogEntry& entry = entries.emplace_back();
        entry.insert_id = id;
        entry.project = query.project;
        entry.job_id.assign(stmt.TextView(2));
        entry.timestamp = line.timestamp;
        entry.severity = DecodeSeverity(line.severity);
        entry.task_name.assign(stmt.TextView(3));
        entry.trial_id.assign(stmt.TextView(4));
        entry.message.assign(line.message);
      }
      if (entries.size() < limit && id != last_id + 1) return CountMismatch(first_id, last_id, id);
    }
    return entries;
  }

  Result<int64_t> LastLogInsertId() override {
    TRAINYARD_ASSIGN_OR_RETURN(Reader reader, AcquireReader());
    TRAINYARD_ASSIGN_OR_RETURN(
        Stmt stmt, reader->Prepare("SELECT seq FROM sqlite_sequence WHERE name = 'log_chunks'"));
    TRAINYARD_ASSIGN_OR_RETURN(bool row, stmt.Step());
    return row ? stmt.Int(0) : int64_t{0};
  }

  // The console's queries (job_store.h): from the indexes, without decoding log lines.
  Result<std::vector<std::pair<JobState, int64_t>>> CountProjectJobsByState(
      const std::string& project) override {
    TRAINYARD_ASSIGN_OR_RETURN(Reader reader, AcquireReader());
    TRAINYARD_ASSIGN_OR_RETURN(
        Stmt stmt, reader->Prepare("SELECT state, count(*) FROM jobs INDEXED BY "
                                   "jobs_project_state_seq WHERE project = ?1 GROUP BY state "
                                   "ORDER BY state"));
    stmt.Bind(1, project);
    std::vector<std::pair<JobState, int64_t>> counts;
    while (true) {
      TRAINYARD_ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) break;
      counts.emplace_back(static_cast<JobState>(stmt.Int(0)), stmt.Int(1));
    }
    return counts;
  }

  Result<std::vector<LogStreamCount>> CountLogLines(const LogQuery& query) override {
    // A chunk holds the consecutive ids first_id..last_id of one stream, all committed at once,
    // so a snapshot (the highest committed id) never splits a chunk.
    std::string sql =
        "SELECT task_name, trial_id, sum(last_id - first_id + 1) FROM log_chunks INDEXED BY "
        "log_chunks_job WHERE project = ?1 AND job_id = ?2";
    if (query.max_insert_id != 0) sql += " AND last_id <= ?7";
    sql += " GROUP BY task_name, trial_id ORDER BY task_name, trial_id";
    TRAINYARD_ASSIGN_OR_RETURN(Reader reader, AcquireReader());
    TRAINYARD_ASSIGN_OR_RETURN(Stmt stmt, reader->Prepare(sql));
    stmt.Bind(1, query.project).Bind(2, query.job_id);
    if (query.max_insert_id != 0) stmt.Bind(7, query.max_insert_id);
    std::vector<LogStreamCount> out;
    while (true) {
      TRAINYARD_ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) break;
      out.push_back({std::string(stmt.TextView(0)), std::string(stmt.TextView(1)), stmt.Int(2)});
    }
    return out;
  }

  Result<int64_t> LocateLogLine(const LogQuery& query, int64_t ordinal) override {
    if (ordinal < 0) return int64_t{0};
    // Walks the job's chunks in id order, summing their line counts, until the one holding the
    // ordinal: the cost is the number of chunks before it, not the number of lines.
    std::string sql =
        "SELECT first_id, last_id FROM log_chunks INDEXED BY log_chunks_job "
        "WHERE project = ?1 AND job_id = ?2";
    if (!query.task_name.empty()) sql += " AND task_name = ?4";
    if (query.max_insert_id != 0) sql += " AND last_id <= ?7";
    if (query.trial_id) sql += " AND trial_id = ?11";
    sql += " ORDER BY last_id";
    TRAINYARD_ASSIGN_OR_RETURN(Reader reader, AcquireReader());
    TRAINYARD_ASSIGN_OR_RETURN(Stmt stmt, reader->Prepare(sql));
    stmt.Bind(1, query.project).Bind(2, query.job_id);
    if (!query.task_name.empty()) stmt.Bind(4, query.task_name);
    if (query.max_insert_id != 0) stmt.Bind(7, query.max_insert_id);
    if (query.trial_id) stmt.Bind(11, *query.trial_id);
    int64_t seen = 0;
    while (true) {
      TRAINYARD_ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) return int64_t{0};
      const int64_t first_id = stmt.Int(0);
      const int64_t lines = stmt.Int(1) - first_id + 1;
      if (ordinal < seen + lines) return first_id + (ordinal - seen);
      seen += lines;
    }
  }

  Result<LogSearchResult> SearchLogLines(const LogQuery& query, const LogSearch& search) override {
    // The job's chunks in id order (descending for a backward search that need not count),
    // with ordinals from their line counts; a chunk's data is decoded only when it can hold a
    // wanted line, so a search near the position it starts from reads little of a long log.
    const bool descending = search.backward && !search.count;
    std::string where =
        " FROM log_chunks INDEXED BY log_chunks_job WHERE project = ?1 AND job_id = ?2";
    if (!query.task_name.empty()) where += " AND task_name = ?4";
    if (query.max_insert_id != 0) where += " AND last_id <= ?7";
    if (query.trial_id) where += " AND trial_id = ?11";
    TRAINYARD_ASSIGN_OR_RETURN(Reader reader, AcquireReader());
    auto bind = [&](Stmt* stmt) {
      stmt->Bind(1, query.project).Bind(2, query.job_id);
      if (!query.task_name.empty()) stmt->Bind(4, query.task_name);
      if (query.max_insert_id != 0) stmt->Bind(7, query.max_insert_id);
      if (query.trial_id) stmt->Bind(11, *query.trial_id);
    };
    int64_t base = 0;  // the ordinal of the next chunk's first line (descending: of this one)
    if (descending) {
      TRAINYARD_ASSIGN_OR_RETURN(Stmt total,
                                 reader->Prepare("SELECT sum(last_id - first_id + 1)" + where));
      bind(&total);
      TRAINYARD_ASSIGN_OR_RETURN(bool row, total.Step());
      base = row ? total.Int(0) : 0;
    }
    TRAINYARD_ASSIGN_OR_RETURN(
        Stmt stmt, reader->Prepare("SELECT first_id, last_id, task_name, trial_id, data" + where +
                                   (descending ? " ORDER BY last_id DESC" : " ORDER BY last_id")));
    bind(&stmt);
    internal::LogTextMatcher matcher(search.text, search.match_case);
    internal::LogMatchCollector kept(search);
    std::vector<LogMatch> found;  // descending: the matches, nearest first
    std::vector<LogMatch> chunk_matches;
    int64_t lines_read = 0;
    const auto max = static_cast<size_t>(search.max_matches);
    while (descending ? found.size() < max : !kept.Full()) {
      TRAINYARD_ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) break;
      const int64_t first_id = stmt.Int(0);
      const int64_t last_id = stmt.Int(1);
      const int64_t lines = last_id - first_id + 1;
      if (descending) base -= lines;
      const int64_t chunk_base = base;
      if (!descending) base += lines;
      // Skip chunks that hold no wanted line (their data is never read).
      if (!search.count) {
        if (search.backward ? chunk_base >= search.from : chunk_base + lines - 1 <= search.from) {
          continue;
        }
      }
      sqlite::LogChunkReader reader_lines(stmt.BlobView(4));
      sqlite::DecodedLogLine line;
      chunk_matches.clear();
      int64_t id = first_id;
      for (;; ++id) {
        auto next = reader_lines.Next(&line);
        if (!next.ok()) {
          return Internal("log chunk " + std::to_string(last_id) + ": " + next.status().message());
        }
        if (!*next) break;
        ++lines_read;
        if (!matcher.Matches(line.message)) continue;
        const int64_t ordinal = chunk_base + (id - first_id);
        kept.Saw(ordinal);
        const bool wanted = descending ? ordinal < search.from : kept.Wants(ordinal);
        if (!wanted) continue;
        LogEntry entry;
        entry.insert_id = id;
        entry.project = query.project;
        entry.job_id = query.job_id;
        entry.timestamp = line.timestamp;
        entry.severity = DecodeSeverity(line.severity);
        entry.task_name.assign(stmt.TextView(2));
        entry.trial_id.assign(stmt.TextView(3));
        entry.message.assign(line.message);
        if (descending) {
          chunk_matches.push_back({ordinal, std::move(entry)});
        } else {
          kept.Add(ordinal, std::move(entry));
          if (kept.Full()) break;
        }
      }
      if (id != last_id + 1 && !kept.Full()) return CountMismatch(first_id, last_id, id);
      for (auto it = chunk_matches.rbegin(); it != chunk_matches.rend() && found.size() < max;
           ++it) {
        found.push_back(std::move(*it));
      }
    }
    if (!descending) return kept.Finish(lines_read);
    LogSearchResult out;
    out.matches = std::move(found);
    out.lines_read = lines_read;
    return out;
  }

 private:
  // Binds the parameters the log queries use: ?1 project, ?2 job, ?3 after id, ?4 task,
  // ?5 min time, ?6 max time (exclusive), ?7 max id, ?11 trial. Unused ones are left unbound.
  static void BindLogQuery(const LogQuery& query, Stmt* stmt) {
    stmt->Bind(1, query.project).Bind(3, query.after_insert_id);
    if (!query.job_id.empty()) stmt->Bind(2, query.job_id);
    if (!query.task_name.empty()) stmt->Bind(4, query.task_name);
    if (query.min_timestamp != 0) stmt->Bind(5, query.min_timestamp);
    if (query.max_timestamp != 0) stmt->Bind(6, query.max_timestamp);
    if (query.max_insert_id != 0) stmt->Bind(7, query.max_insert_id);
    if (query.trial_id) stmt->Bind(11, *query.trial_id);
  }

  // The line-level part of a query (project, job and task are decided per chunk).
  static bool LineMatches(const LogQuery& query, int64_t id, Timestamp ts, int64_t severity) {
    if (id <= query.after_insert_id) return false;
    if (severity < static_cast<int64_t>(query.min_severity)) return false;
    if (query.max_insert_id != 0 && id > query.max_insert_id) return false;
    if (query.min_timestamp != 0 && ts < query.min_timestamp) return false;
    if (query.max_timestamp != 0 && ts >= query.max_timestamp) return false;
    if (query.position && query.order != LogOrder::kInsertId) {
      const LogPosition p{ts, id};
      return query.order == LogOrder::kTimestampAsc ? p > *query.position : p < *query.position;
    }
    return true;
  }

  static Status CountMismatch(int64_t first_id, int64_t last_id, int64_t next_id) {
    return Internal("log chunk " + std::to_string(last_id) + " holds " +
                    std::to_string(next_id - first_id) + " lines, not " +
                    std::to_string(last_id - first_id + 1));
  }

  // A chunk opened by ReadLogsByTime: its matching lines in the order asked for.
  struct OpenChunk {
    struct Line {
      Timestamp timestamp;
      int64_t insert_id;
      int64_t severity;
      size_t offset;  // of the message in `data` (offsets survive moves of short strings)
      size_t size;
    };
    std::string data;
    std::string job_id;
    std::string task_name;
    std::string trial_id;
    std::vector<Line> lines;
    size_t next = 0;
  };

  // ReadLogs in (timestamp, insert id) order, either direction: a k-way merge of the chunks
  // that can hold matching lines. Chunks come from the (project[, job_id], min_ts) index in
  // min_ts order; a chunk is opened (decoded) only once no line of it can be ordered after
  // the smallest line not yet returned (ascending: its min_ts is not above that line's time;
  // descending: its min_ts + the span bound is not below it), so the merge is exact while at
  // most the chunks overlapping the current line are held open.
  Result<std::vector<LogEntry>> ReadLogsByTime(const LogQuery& query) {
    const bool asc = query.order == LogOrder::kTimestampAsc;
    const int64_t span = max_chunk_span_;
    // Every wanted line has lo <= ts <= hi (inclusive; nullopt = unbounded).
    std::optional<Timestamp> lo;
    std::optional<Timestamp> hi;
    if (query.min_timestamp != 0) lo = query.min_timestamp;
    if (query.max_timestamp != 0) hi = query.max_timestamp - 1;
    if (query.position) {
      if (asc) {
        lo = std::max(lo.value_or(query.position->timestamp), query.position->timestamp);
      } else {
        hi = std::min(hi.value_or(query.position->timestamp), query.position->timestamp);
      }
    }
    // ?1..?7 as in BindLogQuery; ?8 lowest min_ts, ?9 lowest max_ts, ?10 highest min_ts.
    std::string sql =
        "SELECT first_id, last_id, job_id, task_name, trial_id, min_ts, data FROM log_chunks "
        "INDEXED BY ";
    sql += query.job_id.empty() ? "log_chunks_project_ts WHERE project = ?1"
                                : "log_chunks_job_ts WHERE project = ?1 AND job_id = ?2";
    sql += " AND last_id > ?3";
    if (!query.task_name.empty()) sql += " AND task_name = ?4";
    if (query.max_insert_id != 0) sql += " AND first_id <= ?7";
    if (query.trial_id) sql += " AND trial_id = ?11";
    if (lo) sql += " AND min_ts >= ?8 AND max_ts >= ?9";
    if (hi) sql += " AND min_ts <= ?10";
    sql += asc ? " ORDER BY min_ts" : " ORDER BY min_ts DESC";

    TRAINYARD_ASSIGN_OR_RETURN(Reader reader, AcquireReader());
    TRAINYARD_ASSIGN_OR_RETURN(Stmt stmt, reader->Prepare(sql));
    BindLogQuery(query, &stmt);
    if (lo) stmt.Bind(8, *lo - span).Bind(9, *lo);
    if (hi) stmt.Bind(10, *hi);

    const size_t limit = static_cast<size_t>(internal::EffectiveLogLimit(query.limit));
    std::vector<OpenChunk> open;  // slots; `heap` holds the indexes of non-exhausted ones
    std::vector<size_t> heap;
    auto key = [&](size_t i) {
      const OpenChunk::Line& l = open[i].lines[open[i].next];
      return LogPosition{l.timestamp, l.insert_id};
    };
    // std heaps keep the largest on top: invert for ascending.
    auto heap_less = [&](size_t a, size_t b) { return asc ? key(a) > key(b) : key(a) < key(b); };

    auto open_row = [&]() -> Status {
      const int64_t first_id = stmt.Int(0);
      const int64_t last_id = stmt.Int(1);
      OpenChunk chunk;
      chunk.data.assign(stmt.BlobView(6));
      sqlite::LogChunkReader lines(chunk.data);
      sqlite::DecodedLogLine line;
      int64_t id = first_id;
      for (;; ++id) {
        auto next = lines.Next(&line);
        if (!next.ok()) {
          return Internal("log chunk " + std::to_string(last_id) + ": " + next.status().message());
        }
        if (!*next) break;
        if (!LineMatches(query, id, line.timestamp, line.severity)) continue;
        chunk.lines.push_back({line.timestamp, id, line.severity,
                               static_cast<size_t>(line.message.data() - chunk.data.data()),
                               line.message.size()});
      }
      if (id != last_id + 1) return CountMismatch(first_id, last_id, id);
      if (chunk.lines.empty()) return Status::Ok();
      auto line_less = [](const OpenChunk::Line& a, const OpenChunk::Line& b) {
        return LogPosition{a.timestamp, a.insert_id} < LogPosition{b.timestamp, b.insert_id};
      };
      // A stream's lines are stored in time order (the launcher stamps them monotonically);
      // sort anyway when a writer did not.
      if (!std::is_sorted(chunk.lines.begin(), chunk.lines.end(), line_less)) {
        std::sort(chunk.lines.begin(), chunk.lines.end(), line_less);
      }
      if (!asc) std::reverse(chunk.lines.begin(), chunk.lines.end());
      chunk.job_id.assign(stmt.TextView(2));
      chunk.task_name.assign(stmt.TextView(3));
      chunk.trial_id.assign(stmt.TextView(4));
      open.push_back(std::move(chunk));
      heap.push_back(open.size() - 1);
      std::push_heap(heap.begin(), heap.end(), heap_less);
      return Status::Ok();
    };

    std::vector<LogEntry> entries;
    TRAINYARD_ASSIGN_OR_RETURN(bool have_row, stmt.Step());
    while (entries.size() < limit) {
      while (have_row) {
        if (!heap.empty()) {
          const Timestamp top = key(heap.front()).timestamp;
          const Timestamp row_min = stmt.Int(5);
          if (asc ? row_min > top : row_min + span < top) break;
        }
        TRAINYARD_RETURN_IF_ERROR(open_row());
        TRAINYARD_ASSIGN_OR_RETURN(have_row, stmt.Step());
      }
      if (heap.empty()) break;
      std::pop_heap(heap.begin(), heap.end(), heap_less);
      const size_t i = heap.back();
      OpenChunk& chunk = open[i];
      const OpenChunk::Line& l = chunk.lines[chunk.next];
      LogEntry& entry = entries.emplace_back();
      entry.insert_id = l.insert_id;
      entry.project = query.project;
      entry.job_id = chunk.job_id;
      entry.timestamp = l.timestamp;
      entry.severity = DecodeSeverity(l.severity);
      entry.task_name = chunk.task_name;
      entry.trial_id = chunk.trial_id;
      entry.message.assign(chunk.data, l.offset, l.size);
      if (++chunk.next == chunk.lines.size()) {
        heap.pop_back();
        std::vector<OpenChunk::Line>().swap(chunk.lines);
        std::string().swap(chunk.data);
      } else {
        std::push_heap(heap.begin(), heap.end(), heap_less);
      }
    }
    return entries;
  }

  // Lines [begin, end) of an AppendLogs batch, encoded as one chunk.
  struct PendingChunk {
    size_t begin = 0;
    size_t end = 0;
    int64_t min_ts = 0;
    int64_t max_ts = 0;
    std::string data;
  };

  // Splits `entries` into runs of consecutive lines of one stream (project, job, task, trial),
  // at most kMaxChunkLines lines or about kMaxChunkBytes each, and encodes each run.
  static std::vector<PendingChunk> EncodeChunks(std::span<const LogEntry> entries) {
    std::vector<PendingChunk> chunks;
    size_t i = 0;
    while (i < entries.size()) {
      const LogEntry& head = entries[i];
      PendingChunk& chunk = chunks.emplace_back();
      chunk.begin = i;
      chunk.min_ts = head.timestamp;
      chunk.max_ts = head.timestamp;
      int64_t prev_ts = 0;
      while (i < entries.size() && i - chunk.begin < kMaxChunkLines &&
             chunk.data.size() < kMaxChunkBytes) {
        const LogEntry& e = entries[i];
        if (i != chunk.begin &&
            (e.job_id != head.job_id || e.task_name != head.task_name ||
             e.trial_id != head.trial_id || e.project != head.project ||
             std::max(chunk.max_ts, e.timestamp) - std::min(chunk.min_ts, e.timestamp) >
                 kMaxChunkSpan)) {
          break;
        }
        sqlite::AppendLogLine(&chunk.data, &prev_ts, e.timestamp, static_cast<int64_t>(e.severity),
                              e.message);
        chunk.min_ts = std::min(chunk.min_ts, e.timestamp);
        chunk.max_ts = std::max(chunk.max_ts, e.timestamp);
        ++i;
      }
      chunk.end = i;
    }
    return chunks;
  }

  // A reader connection borrowed from the pool; returned when destroyed.
  struct ReaderReturn {
    SqliteJobStore* store;
    void operator()(Connection* conn) const { store->ReleaseReader(conn); }
  };
  using Reader = std::unique_ptr<Connection, ReaderReturn>;

  struct WriteOp {
    std::function<Status(Connection&)> fn;
    Status result;
    bool done = false;
  };

  // ListJobs in request.order (not the default): statements over one index each, read in
  // the order's direction until the page is done (docs/store.md, "Job order").
  //  - jobId: jobs_project_job_id from the cursor's id (ids are unique in a project).
  //  - a time: its version-4 index; first the rest of the cursor's tie (same sort value, seq
  //    past the cursor's), then the values past it.
  //  - state: jobs_project_state_seq, one state at a time in the order of their names.
  Result<ListJobsResponse> ListSorted(Connection& conn, ListScan& scan,
                                      const std::optional<internal::JobCursor>& cursor,
                                      const std::string& prefix_terms,
                                      const std::function<void(Stmt&)>& bind) {
    const JobOrder& order = scan.request->order;
    const char* dir = order.descending ? " DESC" : " ASC";
    const char* past = order.descending ? " < " : " > ";
    const std::string select = std::string("SELECT ") + kJobColumns + " FROM jobs INDEXED BY ";
    const std::string state_term = scan.state ? " AND state = ?5" : "";
    auto run = [&](const std::string& sql, std::optional<int64_t> seq, const auto& bind_value,
                   std::optional<JobState> state) -> Result<bool> {
      TRAINYARD_ASSIGN_OR_RETURN(Stmt stmt, conn.Prepare(sql));
      bind(stmt);
      if (seq) stmt.Bind(2, *seq);
      if (state) stmt.Bind(5, static_cast<int64_t>(*state));
      bind_value(stmt);
      return scan.Run(stmt);
    };
    auto no_value = [](Stmt&) {};
    if (order.key == JobOrderKey::kJobId) {
      std::string sql = select + "jobs_project_job_id WHERE project = ?1" + prefix_terms +
                        state_term + (cursor ? std::string(" AND job_id") + past + "?6" : "") +
                        " ORDER BY job_id" + dir;
      auto value = [&](Stmt& stmt) {
        if (cursor) stmt.Bind(6, cursor->value.text);
      };
      TRAINYARD_RETURN_IF_ERROR(run(sql, std::nullopt, value, scan.state).status());
      return std::move(scan.response);
    }
    if (order.key == JobOrderKey::kState) {
      for (int i = 0; i < internal::kJobStateCount && !scan.done; ++i) {
        const int64_t rank = order.descending ? internal::kJobStateCount - 1 - i : i;
        if (cursor &&
            (order.descending ? rank > cursor->value.number : rank < cursor->value.number)) {
          continue;
        }
        const JobState state = internal::StateOfSortRank(rank);
        if (scan.state && state != *scan.state) continue;
        const bool tie = cursor && rank == cursor->value.number;
        std::string sql = select + "jobs_project_state_seq WHERE project = ?1 AND state = ?5" +
                          (tie ? std::string(" AND seq") + past + "?2" : "") + prefix_terms +
                          " ORDER BY seq" + dir;
        TRAINYARD_RETURN_IF_ERROR(
            run(sql, tie ? std::optional<int64_t>(cursor->seq) : std::nullopt, no_value, state)
                .status());
      }
      return std::move(scan.response);
    }
    const char* value_sql = order.key == JobOrderKey::kCreateTime  ? kCreateSortSql
                            : order.key == JobOrderKey::kStartTime ? kStartSortSql
                                                                   : kEndSortSql;
    const char* index = order.key == JobOrderKey::kCreateTime  ? "jobs_project_create_order"
                        : order.key == JobOrderKey::kStartTime ? "jobs_project_start_order"
                                                               : "jobs_project_end_order";
    const std::string order_by = std::string(" ORDER BY ") + value_sql + dir + ", seq" + dir;
    auto value = [&](Stmt& stmt) { stmt.Bind(6, cursor->value.number); };
    if (cursor) {
      std::string sql = select + index + " WHERE project = ?1 AND " + value_sql + " = ?6 AND seq" +
                        past + "?2" + state_term + prefix_terms +
                        // (The sort value is fixed here: naming it in ORDER BY would make
                        // SQLite sort the rows instead of reading them in the index's order.)
                        " ORDER BY seq" + dir;
      TRAINYARD_ASSIGN_OR_RETURN(bool done, run(sql, cursor->seq, value, scan.state));
      if (done) return std::move(scan.response);
      sql = select + index + " WHERE project = ?1 AND " + value_sql + past + "?6" + state_term +
            prefix_terms + order_by;
      TRAINYARD_RETURN_IF_ERROR(run(sql, std::nullopt, value, scan.state).status());
    } else {
      std::string sql =
          select + index + " WHERE project = ?1" + state_term + prefix_terms + order_by;
      TRAINYARD_RETURN_IF_ERROR(run(sql, std::nullopt, no_value, scan.state).status());
    }
    return std::move(scan.response);
  }

  // ListJobs in request.order when the filter selects few jobs through one range of `index`
  // (a jobId prefix, a createTime floor): all of them, sorted here.
  Result<ListJobsResponse> ListFewSorted(Connection& conn, ListScan& scan,
                                         const std::optional<internal::JobCursor>& cursor,
                                         const char* index, const std::string& range_terms,
                                         const std::function<void(Stmt&)>& bind) {
    const ListJobsRequest& request = *scan.request;
    std::string sql = std::string("SELECT ") + kJobColumns + " FROM jobs INDEXED BY " + index +
                      " WHERE project = ?1" + range_terms + (scan.state ? " AND state = ?5" : "");
    TRAINYARD_ASSIGN_OR_RETURN(Stmt stmt, conn.Prepare(sql));
    bind(stmt);
    if (scan.state) stmt.Bind(5, static_cast<int64_t>(*scan.state));
    std::vector<std::pair<internal::JobCursor, Job>> matches;
    while (true) {
      TRAINYARD_ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) break;
      Job job;
      TRAINYARD_RETURN_IF_ERROR(DecodeJob(stmt, &job));
      internal::JobCursor at = internal::CursorOf(job, request.order.key);
      if (cursor && !internal::CursorLess(request.order, *cursor, at)) continue;
      if (request.filter != nullptr && !request.filter->Matches(job)) continue;
      matches.emplace_back(std::move(at), std::move(job));
    }
    std::sort(matches.begin(), matches.end(), [&request](const auto& a, const auto& b) {
      return internal::CursorLess(request.order, a.first, b.first);
    });
    for (auto& [at, job] : matches) {
      if (scan.response.jobs.size() == scan.page_size) {
        scan.response.next_page_token =
            internal::EncodePageToken(request, scan.response.jobs.back());
        break;
      }
      scan.response.jobs.push_back(std::move(job));
    }
    return std::move(scan.response);
  }

  Result<int64_t> CountPrefix(Connection& conn, const std::string& project,
                              const std::string& prefix, const std::optional<std::string>& upper) {
    std::string sql =
        "SELECT count(*) FROM (SELECT 1 FROM jobs INDEXED BY jobs_project_job_id "
        "WHERE project = ?1 AND job_id >= ?2";
    if (upper) sql += " AND job_id < ?3";
    sql += " LIMIT ?4)";
    TRAINYARD_ASSIGN_OR_RETURN(Stmt stmt, conn.Prepare(sql));
    stmt.Bind(1, project).Bind(2, prefix).Bind(4, kPrefixIndexMaxRows + 1);
    if (upper) stmt.Bind(3, *upper);
    TRAINYARD_ASSIGN_OR_RETURN(bool row, stmt.Step());
    return row ? stmt.Int(0) : 0;
  }

  // How many jobs of `project` were created at or after `secs` (up to kPrefixIndexMaxRows + 1).
  Result<int64_t> CountCreatedFrom(Connection& conn, const std::string& project, int64_t secs) {
    TRAINYARD_ASSIGN_OR_RETURN(
        Stmt stmt, conn.Prepare(std::string("SELECT count(*) FROM (SELECT 1 FROM jobs INDEXED BY "
                                            "jobs_project_create_order WHERE project = ?1 AND ") +
                                kCreateSortSql + " >= ?2 LIMIT ?3)"));
    stmt.Bind(1, project).Bind(2, secs).Bind(3, kPrefixIndexMaxRows + 1);
    TRAINYARD_ASSIGN_OR_RETURN(bool row, stmt.Step());
    return row ? stmt.Int(0) : 0;
  }

  Result<Reader> AcquireReader() {
    {
      std::lock_guard lock(readers_mu_);
      if (!idle_readers_.empty()) {
        Connection* conn = idle_readers_.back().release();
        idle_readers_.pop_back();
        return Reader(conn, ReaderReturn{this});
      }
    }
    TRAINYARD_ASSIGN_OR_RETURN(std::unique_ptr<Connection> conn,
                               Connection::Open(path_, SQLITE_OPEN_READWRITE));
    TRAINYARD_RETURN_IF_ERROR(conn->Exec(
        ("PRAGMA busy_timeout = " + std::to_string(kBusyTimeoutMs) +
         "; PRAGMA cache_size = -2048; PRAGMA query_only = 1; PRAGMA temp_store = MEMORY")
            .c_str()));
    return Reader(conn.release(), ReaderReturn{this});
  }

  void ReleaseReader(Connection* conn) {
    std::unique_ptr<Connection> owned(conn);
    std::lock_guard lock(readers_mu_);
    if (idle_readers_.size() < kMaxIdleReaders) idle_readers_.push_back(std::move(owned));
  }

  // Runs `fn` on the writer connection inside a transaction and returns once that transaction
  // has committed (or failed). See the file comment for the group commit.
  Status Write(std::function<Status(Connection&)> fn) {
    WriteOp op{std::move(fn), Status::Ok(), false};
    std::unique_lock lock(write_mu_);
    pending_.push_back(&op);
    while (!op.done) {
      if (writer_busy_) {
        write_cv_.wait(lock);
        continue;
      }
      writer_busy_ = true;
      std::vector<WriteOp*> batch;
      while (!pending_.empty() && batch.size() < kMaxBatch) {
        batch.push_back(pending_.front());
        pending_.pop_front();
      }
      lock.unlock();
      RunBatch(batch);
      lock.lock();
      for (WriteOp* done : batch) done->done = true;
      writer_busy_ = false;
      write_cv_.notify_all();
    }
    return std::move(op.result);
  }

  void RunBatch(const std::vector<WriteOp*>& batch) {
    Connection& conn = *writer_;
    Status begin = conn.Exec("BEGIN IMMEDIATE");
    if (!begin.ok()) {
      for (WriteOp* op : batch) op->result = begin;
      return;
    }
    for (size_t i = 0; i < batch.size(); ++i) {
      WriteOp* op = batch[i];
      op->result = conn.Exec("SAVEPOINT op");
      if (op->result.ok()) op->result = op->fn(conn);
      if (!op->result.ok() && !conn.autocommit()) (void)conn.Exec("ROLLBACK TO op");
      if (!conn.autocommit()) (void)conn.Exec("RELEASE op");
      if (conn.autocommit()) {
        // SQLite rolled the whole transaction back (I/O error, disk full, ...): nothing of this
        // batch is committed, and the operations after this one never ran.
        Status lost =
            op->result.ok() ? Unavailable("sqlite transaction was rolled back") : op->result;
        TY_LOG_ERROR("store", "write transaction rolled back: {}", lost.ToString());
        for (size_t j = 0; j < batch.size(); ++j) {
          if (j >= i || batch[j]->result.ok()) batch[j]->result = lost;
        }
        return;
      }
    }
    Status commit = conn.Exec("COMMIT");
    if (!commit.ok()) {
      TY_LOG_ERROR("store", "commit failed: {}", commit.ToString());
      if (!conn.autocommit()) (void)conn.Exec("ROLLBACK");
      for (WriteOp* op : batch) {
        if (op->result.ok()) op->result = commit;
      }
    }
  }

  // Called by SQLite on the writer after each commit with the WAL's size in frames (pages).
  static int OnWalCommit(void* self, sqlite3*, const char*, int frames) {
    auto* store = static_cast<SqliteJobStore*>(self);
    if (frames >= kCheckpointFrames) {
      {
        std::lock_guard lock(store->checkpoint_mu_);
        store->checkpoint_due_ = true;
      }
      store->checkpoint_cv_.notify_one();
    }
    return SQLITE_OK;
  }

  // PASSIVE checkpoints (they never block the writer or readers) when the WAL has grown past
  // kCheckpointFrames, and every 5 s in any case (cheap when there is nothing to copy).
  void CheckpointLoop() {
    std::unique_lock lock(checkpoint_mu_);
    while (!checkpoint_stop_) {
      checkpoint_cv_.wait_for(lock, std::chrono::seconds(5),
                              [this] { return checkpoint_due_ || checkpoint_stop_; });
      if (checkpoint_stop_) break;
      checkpoint_due_ = false;
      lock.unlock();
      int log_frames = 0;
      int copied = 0;
      int rc = sqlite3_wal_checkpoint_v2(checkpoint_conn_->db(), nullptr, SQLITE_CHECKPOINT_PASSIVE,
                                         &log_frames, &copied);
      if (rc != SQLITE_OK && rc != SQLITE_BUSY) {
        TY_LOG_WARN("store", "WAL checkpoint failed: {}", sqlite3_errmsg(checkpoint_conn_->db()));
      }
      lock.lock();
    }
    lock.unlock();
    (void)sqlite3_wal_checkpoint_v2(checkpoint_conn_->db(), nullptr, SQLITE_CHECKPOINT_PASSIVE,
                                    nullptr, nullptr);
  }

  // SQLite's own default threshold (wal_autocheckpoint = 1000 pages).
  static constexpr int kCheckpointFrames = 1000;

  const std::string path_;
  // Bound on max_ts - min_ts of every stored chunk: kMaxChunkSpan, or more when chunks written
  // before migration 2 span longer (log_chunk_span).
  int64_t max_chunk_span_ = kMaxChunkSpan;
  std::unique_ptr<Connection> writer_;
  std::unique_ptr<Connection> checkpoint_conn_;
  std::mutex checkpoint_mu_;
  std::condition_variable checkpoint_cv_;
  bool checkpoint_due_ = false;
  bool checkpoint_stop_ = false;
  std::thread checkpoint_thread_;  // last: started once everything above exists

  std::mutex write_mu_;
  std::condition_variable write_cv_;
  std::deque<WriteOp*> pending_;
  bool writer_busy_ = false;

  std::mutex readers_mu_;
  std::vector<std::unique_ptr<Connection>> idle_readers_;
};

Result<std::unique_ptr<JobStore>> SqliteJobStore::Open(const SqliteOptions& options) {
  if (options.path.empty()) return InvalidArgument("SQLite store: the database path is empty");
  std::string synchronous = options.synchronous;
  std::transform(synchronous.begin(), synchronous.end(), synchronous.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  if (synchronous != "OFF" && synchronous != "NORMAL" && synchronous != "FULL" &&
      synchronous != "EXTRA") {
    return InvalidArgument("SQLite store: synchronous must be OFF, NORMAL, FULL or EXTRA, not \"" +
                           options.synchronous + "\"");
  }
  std::filesystem::path parent = std::filesystem::path(options.path).parent_path();
  if (!parent.empty()) TRAINYARD_RETURN_IF_ERROR(MakeDirs(parent.string()));

  TRAINYARD_ASSIGN_OR_RETURN(
      std::unique_ptr<Connection> writer,
      Connection::Open(options.path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE));
  auto fail = [&](const Status& s) {
    return Status(s.code(), "Cannot open store " + options.path + ": " + s.message());
  };
  Status s = writer->Exec(("PRAGMA busy_timeout = " + std::to_string(kBusyTimeoutMs)).c_str());
  if (!s.ok()) return fail(s);
  auto mode = writer->QueryText("PRAGMA journal_mode = WAL");
  if (!mode.ok()) return fail(mode.status());
  if (mode.value() != "wal") return fail(Internal("cannot enable WAL (mode " + *mode + ")"));
  s = writer->Exec(("PRAGMA synchronous = " + synchronous +
                    "; PRAGMA foreign_keys = ON; PRAGMA journal_size_limit = 67108864")
                       .c_str());
  if (!s.ok()) return fail(s);
  s = sqlite::Migrate(*writer, options.path);
  if (!s.ok()) return s.code() == StatusCode::kFailedPrecondition ? s : fail(s);
  TRAINYARD_ASSIGN_OR_RETURN(std::unique_ptr<Connection> checkpointer,
                             Connection::Open(options.path, SQLITE_OPEN_READWRITE));
  s = checkpointer->Exec(("PRAGMA busy_timeout = " + std::to_string(kBusyTimeoutMs)).c_str());
  if (!s.ok()) return fail(s);
  // A connection learns that the file is in WAL mode when it first reads it; until then its
  // checkpoints do nothing.
  auto checkpointer_mode = checkpointer->QueryText("PRAGMA journal_mode");
  if (!checkpointer_mode.ok()) return fail(checkpointer_mode.status());
  auto legacy_span = writer->QueryText("SELECT max_span FROM log_chunk_span");
  if (!legacy_span.ok()) return fail(legacy_span.status());
  std::unique_ptr<SqliteJobStore> store(
      new SqliteJobStore(options.path, std::move(writer), std::move(checkpointer)));
  store->max_chunk_span_ = std::max<int64_t>(kMaxChunkSpan, std::atoll(legacy_span->c_str()));
  return std::unique_ptr<JobStore>(std::move(store));
}

}  // namespace

Result<std::unique_ptr<JobStore>> OpenSqliteJobStore(const SqliteOptions& options) {
  return SqliteJobStore::Open(options);
}

}  // namespace trainyard::store

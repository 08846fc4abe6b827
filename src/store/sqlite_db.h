// A thin RAII layer over the SQLite C API for the store: connections with a prepared-statement
// cache, and statements that reset themselves. Every SQLite failure becomes a Status.
// Private to src/store.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "trainyard/core/status.h"

namespace trainyard::store::sqlite {

// UNAVAILABLE for conditions that may pass (busy, locked, disk full, I/O error, cannot open),
// INTERNAL otherwise (corruption, misuse). The message is "<context>: <sqlite message>".
Status ErrorStatus(int rc, std::string_view context, std::string_view sqlite_message);

// A cached prepared statement in use. Move-only; resets the statement and clears its bindings
// when destroyed so the connection can hand it out again.
class Stmt {
 public:
  Stmt(sqlite3_stmt* stmt, sqlite3* db) : stmt_(stmt), db_(db) {}
  Stmt(Stmt&& other) noexcept;
  Stmt& operator=(Stmt&&) = delete;
  Stmt(const Stmt&) = delete;
  ~Stmt();

  // Binds by 1-based index. A bind failure is reported by the next Step/Run.
  Stmt& Bind(int index, std::string_view text);
  Stmt& Bind(int index, int64_t value);
  Stmt& Bind(int index, double value);
  // Binds a BLOB; `bytes` must stay valid until the statement has run (not copied).
  Stmt& BindBlob(int index, std::string_view bytes);

  // true: a row is available; false: done.
  Result<bool> Step();
  // Steps a statement that returns no rows (or whose rows are ignored) to completion.
  Status Run();
  // Makes the statement runnable again, keeping its bindings.
  void Reset() { sqlite3_reset(stmt_); }
  // The extended result code of the last failed Step/Run (SQLITE_OK if none).
  int failed_rc() const { return failed_rc_; }

  int64_t Int(int col) const { return sqlite3_column_int64(stmt_, col); }
  double Double(int col) const { return sqlite3_column_double(stmt_, col); }
  std::string_view TextView(int col) const;
  std::string Text(int col) const { return std::string(TextView(col)); }
  // Valid until the next Step/Reset of this statement.
  std::string_view BlobView(int col) const;

 private:
  sqlite3_stmt* stmt_;
  sqlite3* db_;
  int bind_rc_ = SQLITE_OK;
  int failed_rc_ = SQLITE_OK;
};

class Connection {
 public:
  // flags as for sqlite3_open_v2 (SQLITE_OPEN_NOMUTEX is added: one thread at a time).
  static Result<std::unique_ptr<Connection>> Open(const std::string& path, int flags);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Runs one or more statements without results.
  Status Exec(const char* sql);
  // Returns the cached statement for `sql`, preparing it on first use. Only one Stmt per SQL
  // text may be alive at a time.
  Result<Stmt> Prepare(const std::string& sql);
  // Runs a statement returning a single value (e.g. a PRAGMA) and returns it as text.
  Result<std::string> QueryText(const std::string& sql);
  // Whether no transaction is open.
  bool autocommit() const { return sqlite3_get_autocommit(db_) != 0; }
  int64_t last_insert_rowid() const { return sqlite3_last_insert_rowid(db_); }
  int changes() const { return sqlite3_changes(db_); }
  sqlite3* db() const { return db_; }

 private:
  explicit Connection(sqlite3* db) : db_(db) {}

  sqlite3* db_;
  std::unordered_map<std::string, sqlite3_stmt*> cache_;
};

}  // namespace trainyard::store::sqlite

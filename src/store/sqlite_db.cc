#include "sqlite_db.h"

#include <utility>

namespace trainyard::store::sqlite {

Status ErrorStatus(int rc, std::string_view context, std::string_view sqlite_message) {
  std::string message(context);
  message += ": ";
  message += sqlite_message.empty() ? std::string_view(sqlite3_errstr(rc)) : sqlite_message;
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_FULL:
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY:
    case SQLITE_PROTOCOL:
    case SQLITE_NOMEM:
      return Unavailable(std::move(message));
    default:
      return Internal(std::move(message));
  }
}

namespace {
Status DbError(sqlite3* db, int rc, std::string_view context) {
  return ErrorStatus(rc, context, db != nullptr ? sqlite3_errmsg(db) : "");
}
}  // namespace

Stmt::Stmt(Stmt&& other) noexcept
    : stmt_(std::exchange(other.stmt_, nullptr)),
      db_(other.db_),
      bind_rc_(other.bind_rc_),
      failed_rc_(other.failed_rc_) {}

Stmt::~Stmt() {
  if (stmt_ != nullptr) {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
}

Stmt& Stmt::Bind(int index, std::string_view text) {
  int rc =
      sqlite3_bind_text64(stmt_, index, text.data(), text.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  if (rc != SQLITE_OK && bind_rc_ == SQLITE_OK) bind_rc_ = rc;
  return *this;
}

Stmt& Stmt::Bind(int index, int64_t value) {
  int rc = sqlite3_bind_int64(stmt_, index, value);
  if (rc != SQLITE_OK && bind_rc_ == SQLITE_OK) bind_rc_ = rc;
  return *this;
}

Stmt& Stmt::BindBlob(int index, std::string_view bytes) {
  int rc = sqlite3_bind_blob64(stmt_, index, bytes.data(), bytes.size(), SQLITE_STATIC);
  if (rc != SQLITE_OK && bind_rc_ == SQLITE_OK) bind_rc_ = rc;
  return *this;
}

Stmt& Stmt::Bind(int index, double value) {
  int rc = sqlite3_bind_double(stmt_, index, value);
  if (rc != SQLITE_OK && bind_rc_ == SQLITE_OK) bind_rc_ = rc;
  return *this;
}

Result<bool> Stmt::Step() {
  if (bind_rc_ != SQLITE_OK) {
    failed_rc_ = bind_rc_;
    return DbError(db_, bind_rc_, "sqlite bind");
  }
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  failed_rc_ = sqlite3_extended_errcode(db_);
  Status status = DbError(db_, rc, "sqlite");
  sqlite3_reset(stmt_);
  return status;
}

Status Stmt::Run() {
  while (true) {
    auto row = Step();
    if (!row.ok()) return row.status();
    if (!row.value()) return Status::Ok();
  }
}

std::string_view Stmt::BlobView(int col) const {
  const void* blob = sqlite3_column_blob(stmt_, col);
  int size = sqlite3_column_bytes(stmt_, col);
  if (blob == nullptr) return {};
  return {static_cast<const char*>(blob), static_cast<size_t>(size)};
}

std::string_view Stmt::TextView(int col) const {
  const unsigned char* text = sqlite3_column_text(stmt_, col);
  int size = sqlite3_column_bytes(stmt_, col);
  if (text == nullptr) return {};
  return {reinterpret_cast<const char*>(text), static_cast<size_t>(size)};
}

Result<std::unique_ptr<Connection>> Connection::Open(const std::string& path, int flags) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    Status status = DbError(db, rc, "cannot open database " + path);
    sqlite3_close_v2(db);
    return status;
  }
  sqlite3_extended_result_codes(db, 1);
  return std::unique_ptr<Connection>(new Connection(db));
}

Connection::~Connection() {
  for (auto& [sql, stmt] : cache_) sqlite3_finalize(stmt);
  sqlite3_close_v2(db_);
}

Status Connection::Exec(const char* sql) {
  char* error = nullptr;
  int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &error);
  if (rc == SQLITE_OK) return Status::Ok();
  Status status = ErrorStatus(rc, "sqlite", error != nullptr ? error : "");
  sqlite3_free(error);
  return status;
}

Result<Stmt> Connection::Prepare(const std::string& sql) {
  auto it = cache_.find(sql);
  if (it != cache_.end()) return Stmt(it->second, db_);
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v3(db_, sql.c_str(), static_cast<int>(sql.size()),
                              SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
  if (rc != SQLITE_OK) return DbError(db_, rc, "sqlite prepare");
  if (stmt == nullptr) return Internal("sqlite prepare: empty statement");
  cache_.emplace(sql, stmt);
  return Stmt(stmt, db_);
}

Result<std::string> Connection::QueryText(const std::string& sql) {
  TRAINYARD_ASSIGN_OR_RETURN(Stmt stmt, Prepare(sql));
  TRAINYARD_ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) return std::string();
  return stmt.Text(0);
}

}  // namespace trainyard::store::sqlite

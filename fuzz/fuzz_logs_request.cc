// The entries:list request body (ListLogEntriesRequest: resourceNames, filter, orderBy, pageSize,
// pageToken) answered over an in-memory store holding a few lines: an answer is valid JSON with
// at most pageSize entries; a refusal is INVALID_ARGUMENT.
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "logging_api.h"
#include "trainyard/store/store_sqlite.h"

namespace {
trainyard::store::JobStore& Store() {
  static std::unique_ptr<trainyard::store::JobStore> store = [] {
    auto s = trainyard::store::NewInMemoryJobStore();
    std::vector<trainyard::model::LogEntry> lines;
    const char* tasks[] = {"master-replica-0", "worker-replica-0", "service"};
    for (int i = 0; i < 30; ++i) {
      trainyard::model::LogEntry e;
      e.project = i % 7 == 6 ? "other" : "p";
      e.job_id = i % 2 ? "census_1" : "census_2";
      e.timestamp = 1700000000000000 + (i % 5) * 1000000;
      e.severity = i % 3 ? trainyard::model::Severity::kInfo : trainyard::model::Severity::kError;
      e.task_name = tasks[i % 3];
      e.trial_id = i % 4 ? "" : "2";
      e.message = i % 5 ? "step " + std::to_string(i) : "caf\xc3\xa9\ttab";
      lines.push_back(e);
    }
    if (!s->AppendLogs(lines).ok()) std::abort();
    return s;
  }();
  return *store;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  auto out = trainyard::api::ListLogEntries(Store(), body);
  if (!out.ok()) {
    if (out.status().code() != trainyard::StatusCode::kInvalidArgument) std::abort();
    return 0;
  }
  auto j = nlohmann::json::parse(*out, nullptr, false);
  if (j.is_discarded() || !j.is_object()) std::abort();
  if (j.contains("entries") && j["entries"].size() > 1000) std::abort();
  return 0;
}

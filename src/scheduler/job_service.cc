#include "trainyard/scheduler/job_service.h"

#include "scheduler_core.h"

namespace trainyard::scheduler {

JobService::JobService(SchedulerOptions options, store::JobStore& store,
                       executor::Executor& executor, storage::BucketStore& buckets)
    : core_(std::make_unique<SchedulerCore>(std::move(options), store, executor, buckets)) {}

JobService::~JobService() = default;

Status JobService::Start() { return core_->Start(); }
void JobService::Stop() { core_->Stop(); }
void JobService::SetStorageEndpoint(std::string endpoint) {
  core_->SetStorageEndpoint(std::move(endpoint));
}
Status JobService::CheckRunnable(const model::Job& job) const { return core_->CheckRunnable(job); }
Result<model::Job> JobService::Submit(model::Job job) { return core_->Submit(std::move(job)); }
Result<model::Job> JobService::GetJob(const std::string& project, const std::string& job_id) {
  return core_->GetJob(project, job_id);
}
void JobService::FillLiveFields(std::vector<model::Job>& jobs) { core_->FillLiveFields(jobs); }
Status JobService::Cancel(const std::string& project, const std::string& job_id) {
  return core_->Cancel(project, job_id);
}
Result<model::Job> JobService::UpdateLabels(const std::string& project, const std::string& job_id,
                                            const std::map<std::string, std::string>& labels,
                                            const std::string& etag, bool check_etag) {
  return core_->UpdateLabels(project, job_id, labels, etag, check_etag);
}
void JobService::SetAdmissionPaused(bool paused) { core_->SetAdmissionPaused(paused); }
bool JobService::admission_paused() const { return core_->admission_paused(); }
void JobService::SetAdmissionHold(const std::string& reason) { core_->SetAdmissionHold(reason); }
SchedulerStats JobService::Stats() const { return core_->Stats(); }
Result<QueueView> JobService::Queue(const std::string& project, const std::string& page_token,
                                    int page_size) {
  return core_->Queue(project, page_token, page_size);
}
std::map<std::string, std::vector<executor::MetricRecord>> JobService::TrialMeasurements(
    const model::Job& job, const std::string& metric_tag,
    const std::vector<std::string>& trial_ids) {
  return core_->TrialMeasurements(job, metric_tag, trial_ids);
}
const NodeCapacity& JobService::node() const { return core_->node(); }
int JobService::RunAdmissionPass() { return core_->RunAdmissionPass(); }
bool JobService::Step() { return core_->Step(); }
void JobService::RunUntilIdle() {
  // Bounded, so a bug that keeps reporting work fails a test instead of hanging it.
  for (int i = 0; i < 100000 && core_->Step(); ++i) {
  }
}

void JobService::OnReplicaAllocated(const executor::ReplicaKey& key) {
  core_->OnReplicaAllocated(key);
}
void JobService::OnReplicaRunning(const executor::ReplicaKey& key) { core_->OnReplicaRunning(key); }
Status JobService::OnReplicaLogs(std::span<model::LogEntry> entries) {
  return core_->OnReplicaLogs(entries);
}
void JobService::OnReplicaMetrics(const executor::ReplicaKey& key,
                                  std::span<const executor::MetricRecord> records, bool ended) {
  core_->OnReplicaMetrics(key, records, ended);
}
void JobService::OnReplicaExit(const executor::ReplicaKey& key, const executor::ReplicaExit& exit) {
  core_->OnReplicaExit(key, exit);
}

}  // namespace trainyard::scheduler

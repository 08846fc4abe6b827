// local train, buckets, cp, admin.
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "job_builder.h"
#include "packaging.h"
#include "process.h"
#include "trainyard/core/util.h"

namespace trainyard::cli {

namespace fs = std::filesystem;

// --- local train -------------------------------------------------------------------------

std::string LocalTrainTfConfig(const std::string& module, const std::vector<std::string>& args) {
  // json.dumps of gcloud's dict: insertion order, ", " and ": " separators.
  std::string list;
  for (size_t i = 0; i < args.size(); ++i) {
    if (i > 0) list += ", ";
    list += nlohmann::json(args[i]).dump();
  }
  return "{\"job\": {\"job_name\": " + nlohmann::json(module).dump() + ", \"args\": [" + list +
         "]}, \"task\": {}, \"cluster\": {}, \"environment\": \"cloud\"}";
}

int RunLocalTrain(const Invocation& inv, const LocalTrainArgs& a) {
  if (a.distributed || a.parameter_server_count || a.worker_count || a.evaluator_count ||
      a.start_port) {
    return inv.Fail(
        "--distributed, --parameter-server-count, --worker-count, --evaluator-count and "
        "--start-port are not supported yet; run without them for a single local process");
  }
  std::error_code ec;
  fs::path package = a.package_path ? fs::path(*a.package_path) : fs::current_path(ec);
  package = fs::absolute(package, ec).lexically_normal();
  if (!package.has_filename()) package = package.parent_path();
  if (!fs::is_directory(package, ec)) {
    return inv.Fail("--package-path [" + package.string() + "] is not a directory");
  }
  std::vector<std::string> args = inv.user_args;
  if (a.job_dir) {
    std::string dir = *a.job_dir;
    // The trainer runs in the package's parent: make a local job dir absolute first.
    if (!IsGcsUri(dir) && dir.find("://") == std::string::npos) {
      dir = fs::absolute(dir, ec).lexically_normal().string();
    }
    args.push_back("--job-dir");
    args.push_back(dir);
  }
  std::vector<std::string> argv = {RuntimePython(), "-m", *a.module_name};
  argv.insert(argv.end(), args.begin(), args.end());
  inv.Out().flush();
  inv.Err().flush();
  std::cout.flush();
  std::cerr.flush();
  Status s = ExecReplace(argv, package.parent_path().string(),
                         {{"TF_CONFIG", LocalTrainTfConfig(*a.module_name, args)}});
  return inv.Fail(s.message());
}

// --- buckets -----------------------------------------------------------------------------

int RunBucketsCreate(const Invocation& inv, const std::string& bucket_uri) {
  std::string name = bucket_uri;
  if (IsGcsUri(bucket_uri)) {
    auto p = ParseGcsUri(bucket_uri);
    if (!p || !p->object.empty()) {
      return inv.Fail("Invalid bucket URI [" + bucket_uri + "]: expected gs://BUCKET");
    }
    name = p->bucket;
  }
  inv.Err() << "Creating gs://" << name << "/...\n";
  auto c = inv.MakeClient();
  Status s = c->CreateBucket(name);
  if (!s.ok()) return inv.Fail(s);
  return kExitOk;
}

int RunBucketsList(const Invocation& inv) {
  auto c = inv.MakeClient();
  auto names = c->ListBuckets();
  if (!names.ok()) return inv.Fail(names.status());
  for (const auto& n : *names) inv.Out() << "gs://" << n << "/\n";
  if (names->empty()) inv.Err() << "Listed 0 items.\n";
  return kExitOk;
}

// --- cp ----------------------------------------------------------------------------------

int RunCopy(const Invocation& inv, const std::string& source, const std::string& destination) {
  bool src_gcs = IsGcsUri(source);
  bool dst_gcs = IsGcsUri(destination);
  if (src_gcs == dst_gcs) {
    return inv.Fail(
        "cp copies a local file to gs://BUCKET/OBJECT or gs://BUCKET/OBJECT to a "
        "local path");
  }
  auto c = inv.MakeClient();
  if (dst_gcs) {
    auto dst = ParseGcsUri(destination);
    if (!dst) return inv.Fail("Invalid URI [" + destination + "]");
    std::string object = dst->object;
    if (object.empty() || object.back() == '/') object += Basename(source);
    auto data = ReadFile(source);
    if (!data.ok())
      return inv.Fail("Unable to read file [" + source + "]: " + data.status().message());
    auto up = c->UploadObject(dst->bucket, object, *data);
    if (!up.ok()) return inv.Fail(up.status());
    inv.Err() << "Copied [" << source << "] to [gs://" << dst->bucket << "/" << object << "].\n";
    return kExitOk;
  }
  auto src = ParseGcsUri(source);
  if (!src || src->object.empty() || src->object.back() == '/') {
    return inv.Fail("Invalid source [" + source + "]: expected gs://BUCKET/OBJECT");
  }
  auto data = c->DownloadObject(src->bucket, src->object);
  if (!data.ok()) return inv.Fail(data.status());
  std::error_code ec;
  fs::path target(destination);
  if (fs::is_directory(target, ec) || destination.back() == '/') {
    target /= Basename(src->object);
  }
  Status w = WriteFileAtomic(target.string(), *data);
  if (!w.ok()) return inv.Fail(w.message());
  inv.Err() << "Copied [" << source << "] to [" << target.string() << "].\n";
  return kExitOk;
}

// --- admin -------------------------------------------------------------------------------

int RunAdmin(const Invocation& inv, AdminAction action) {
  auto c = inv.MakeClient();
  Result<bool> paused = action == AdminAction::kStatus
                            ? c->GetAdmissionPaused()
                            : c->SetAdmissionPaused(action == AdminAction::kPause);
  if (!paused.ok()) return inv.Fail(paused.status());
  if (action == AdminAction::kPause) inv.Err() << "Paused admission of queued jobs.\n";
  if (action == AdminAction::kResume) inv.Err() << "Resumed admission of queued jobs.\n";
  inv.Out() << "paused: " << (*paused ? "true" : "false") << "\n";
  return kExitOk;
}

}  // namespace trainyard::cli

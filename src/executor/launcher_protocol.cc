#include "trainyard/executor/launcher_protocol.h"

#include <charconv>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <utility>

#include "protocol_private.h"
#include "trainyard/core/util.h"

namespace trainyard::executor {

using nlohmann::json;

bool ReplicaKey::operator<(const ReplicaKey& o) const {
  return std::tie(project, job_id, trial_id, task_type, index) <
         std::tie(o.project, o.job_id, o.trial_id, o.task_type, o.index);
}

bool ReplicaKey::operator==(const ReplicaKey& o) const {
  return std::tie(project, job_id, trial_id, task_type, index) ==
         std::tie(o.project, o.job_id, o.trial_id, o.task_type, o.index);
}

namespace {

std::string Dump(const json& j) {
  // Trainer output is arbitrary bytes: never throw on invalid UTF-8.
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

template <typename T>
void Get(const json& j, const char* name, T* out) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) return;
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    // nlohmann converts a float or an out-of-range integer with a C cast (undefined behaviour):
    // a number field must be an integer that fits.
    bool fits = false;
    if (it->is_number_unsigned()) {
      fits = std::in_range<T>(it->get<uint64_t>());
    } else if (it->is_number_integer()) {
      fits = std::in_range<T>(it->get<int64_t>());
    }
    if (!fits) throw std::invalid_argument(std::string(name) + " is not an integer in range");
    *out = it->is_number_unsigned() ? static_cast<T>(it->get<uint64_t>())
                                    : static_cast<T>(it->get<int64_t>());
  } else {
    *out = it->get<T>();
  }
}

}  // namespace

std::string SpecToJson(const ReplicaSpec& spec) {
  json j = {
      {"key",
       {{"project", spec.key.project},
        {"jobId", spec.key.job_id},
        {"trialId", spec.key.trial_id},
        {"taskType", spec.key.task_type},
        {"index", spec.key.index}}},
      {"workDir", spec.work_dir},
      {"python", spec.python},
      {"packages", spec.packages},
      {"packageUris", spec.package_uris},
      {"pythonModule", spec.python_module},
      {"args", spec.args},
      {"env", spec.env},
      {"envCacheDir", spec.env_cache_dir},
      {"pipIndexUrl", spec.pip_index_url},
      {"pipFindLinks", spec.pip_find_links},
      {"cwd", spec.cwd},
      {"cgroupRoot", spec.cgroup_root},
      {"cgroupName", spec.cgroup_name},
      {"limits",
       {{"memoryBytes", spec.limits.memory_bytes}, {"cpuMillis", spec.limits.cpu_millis}}},
  };
  // Set only when they say something, so most specs' spec.json stays as it was.
  if (spec.attempt != 0) j["attempt"] = spec.attempt;
  if (!spec.metric_tag.empty()) j["metricTag"] = spec.metric_tag;
  // Only container replicas carry the key, so python replicas' spec.json stays as it was.
  if (!spec.container.image.empty()) {
    const ContainerSpec& c = spec.container;
    json container = {
        {"engine", c.engine}, {"engineEnv", c.engine_env}, {"image", c.image},    {"args", c.args},
        {"name", c.name},     {"mounts", c.mounts},        {"devices", c.devices}};
    // Absent = the image's own ENTRYPOINT; an empty array is a (valid) explicit override.
    if (c.entrypoint) container["entrypoint"] = *c.entrypoint;
    if (!c.pull.policy.empty()) {
      const ImagePull& p = c.pull;
      container["pull"] = {{"policy", p.policy},        {"reference", p.reference},
                           {"registry", p.registry},    {"mirror", p.mirror},
                           {"tlsVerify", p.tls_verify}, {"authFile", p.auth_file},
                           {"token", p.token}};
    }
    j["container"] = std::move(container);
  }
  return Dump(j);
}

Result<ReplicaSpec> SpecFromJson(std::string_view text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgument("spec is not a JSON object");
  ReplicaSpec spec;
  try {
    if (auto it = j.find("key"); it != j.end()) {
      const json& k = *it;
      Get(k, "project", &spec.key.project);
      Get(k, "jobId", &spec.key.job_id);
      Get(k, "trialId", &spec.key.trial_id);
      Get(k, "taskType", &spec.key.task_type);
      Get(k, "index", &spec.key.index);
    }
    Get(j, "workDir", &spec.work_dir);
    Get(j, "attempt", &spec.attempt);
    Get(j, "metricTag", &spec.metric_tag);
    Get(j, "python", &spec.python);
    Get(j, "packages", &spec.packages);
    Get(j, "packageUris", &spec.package_uris);
    Get(j, "pythonModule", &spec.python_module);
    Get(j, "args", &spec.args);
    Get(j, "env", &spec.env);
    Get(j, "envCacheDir", &spec.env_cache_dir);
    Get(j, "pipIndexUrl", &spec.pip_index_url);
    Get(j, "pipFindLinks", &spec.pip_find_links);
    Get(j, "cwd", &spec.cwd);
    Get(j, "cgroupRoot", &spec.cgroup_root);
    Get(j, "cgroupName", &spec.cgroup_name);
    if (auto it = j.find("limits"); it != j.end() && !it->is_null()) {
      if (!it->is_object()) return InvalidArgument("invalid spec: limits is not an object");
      Get(*it, "memoryBytes", &spec.limits.memory_bytes);
      Get(*it, "cpuMillis", &spec.limits.cpu_millis);
    }
    if (auto it = j.find("container"); it != j.end() && !it->is_null()) {
      if (!it->is_object()) return InvalidArgument("invalid spec: container is not an object");
      ContainerSpec& c = spec.container;
      Get(*it, "engine", &c.engine);
      Get(*it, "engineEnv", &c.engine_env);
      Get(*it, "image", &c.image);
      if (auto ep = it->find("entrypoint"); ep != it->end() && !ep->is_null()) {
        c.entrypoint = ep->get<std::vector<std::string>>();
      }
      Get(*it, "args", &c.args);
      Get(*it, "name", &c.name);
      Get(*it, "mounts", &c.mounts);
      Get(*it, "devices", &c.devices);
      if (auto p = it->find("pull"); p != it->end() && !p->is_null()) {
        if (!p->is_object())
          return InvalidArgument("invalid spec: container.pull is not an object");
        Get(*p, "policy", &c.pull.policy);
        Get(*p, "reference", &c.pull.reference);
        Get(*p, "registry", &c.pull.registry);
        Get(*p, "mirror", &c.pull.mirror);
        Get(*p, "tlsVerify", &c.pull.tls_verify);
        Get(*p, "authFile", &c.pull.auth_file);
        Get(*p, "token", &c.pull.token);
      }
    }
  } catch (const std::exception& e) {
    return InvalidArgument(std::string("invalid spec: ") + e.what());
  }
  return spec;
}

bool MentionsDiskFull(std::string_view text) {
  return text.find("No space left on device") != std::string_view::npos ||
         text.find("[Errno 28]") != std::string_view::npos ||
         text.find("Disk quota exceeded") != std::string_view::npos;
}

bool MayBeRestarted(const ReplicaExit& exit) {
  if (exit.killed_by_request || exit.oom_killed || exit.disk_full) return false;
  if (exit.phase == "lost") return true;
  return exit.phase == "run" && exit.signal != 0 && !exit.stop_requested;
}

std::string ExitToJson(const ReplicaExit& exit) {
  json j = {{"exitCode", exit.exit_code},
            {"signal", exit.signal},
            {"phase", exit.phase},
            {"message", exit.message},
            {"errorTail", exit.error_tail},
            {"oomKilled", exit.oom_killed},
            {"stopRequested", exit.stop_requested}};
  if (exit.disk_full) j["diskFull"] = true;
  if (exit.stop_unrequested) j["stopUnrequested"] = true;
  return Dump(j);
}

std::string ExitToJson(const ReplicaExit& exit, int attempt) {
  if (attempt < 0) return ExitToJson(exit);
  json j = json::parse(ExitToJson(exit), nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return ExitToJson(exit);
  j["attempt"] = attempt;
  return Dump(j);
}

int ExitReportAttempt(std::string_view text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return -1;
  auto it = j.find("attempt");
  if (it == j.end() || !it->is_number_integer()) return -1;
  const int64_t attempt = it->get<int64_t>();
  return attempt >= 0 && attempt <= std::numeric_limits<int>::max() ? static_cast<int>(attempt)
                                                                    : -1;
}

Result<ReplicaExit> ExitFromJson(std::string_view text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return InvalidArgument("exit status is not a JSON object");
  ReplicaExit exit;
  try {
    Get(j, "exitCode", &exit.exit_code);
    Get(j, "signal", &exit.signal);
    Get(j, "phase", &exit.phase);
    Get(j, "message", &exit.message);
    Get(j, "errorTail", &exit.error_tail);
    Get(j, "oomKilled", &exit.oom_killed);
    Get(j, "stopRequested", &exit.stop_requested);
    Get(j, "diskFull", &exit.disk_full);
    Get(j, "stopUnrequested", &exit.stop_unrequested);
  } catch (const std::exception& e) {
    return InvalidArgument(std::string("invalid exit status: ") + e.what());
  }
  return exit;
}

void AppendLogRecordPrefix(std::string* out, Timestamp ts, model::Severity severity, bool service) {
  char num[24];
  auto res = std::to_chars(num, num + sizeof num, ts);
  out->append(num, res.ptr);
  out->push_back('\t');
  out->append(model::SeverityName(severity));
  out->append(service ? "\tS\t" : "\tR\t");
}

void AppendLogRecord(std::string* out, Timestamp ts, model::Severity severity, bool service,
                     std::string_view message) {
  AppendLogRecordPrefix(out, ts, severity, service);
  AppendEscapedLogMessage(out, message);
}

void AppendEscapedLogMessage(std::string* out, std::string_view message) {
  size_t start = 0;
  const size_t n = message.size();
  for (size_t i = 0; i < n; ++i) {
    char esc;
    switch (message[i]) {
      case '\\':
        esc = '\\';
        break;
      case '\n':
        esc = 'n';
        break;
      case '\t':
        esc = 't';
        break;
      case '\r':
        esc = 'r';
        break;
      default:
        continue;
    }
    out->append(message.data() + start, i - start);
    out->push_back('\\');
    out->push_back(esc);
    start = i + 1;
  }
  out->append(message.data() + start, n - start);
}

std::string FormatLogRecord(Timestamp ts, model::Severity severity, bool service,
                            std::string_view message) {
  std::string out;
  out.reserve(message.size() + 32);
  AppendLogRecord(&out, ts, severity, service, message);
  return out;
}

Status ParseLogRecordInto(std::string_view line, LogRecord* out) {
  size_t t1 = line.find('\t');
  if (t1 == std::string_view::npos) return InvalidArgument("log record has no timestamp");
  size_t t2 = line.find('\t', t1 + 1);
  if (t2 == std::string_view::npos) return InvalidArgument("log record has no severity");
  size_t t3 = line.find('\t', t2 + 1);
  if (t3 == std::string_view::npos) return InvalidArgument("log record has no source");
  LogRecord& rec = *out;
  rec.service = false;
  rec.message.clear();  // keeps its buffer: the executor parses a million lines into one record
  auto [p, ec] = std::from_chars(line.data(), line.data() + t1, rec.ts);
  if (ec != std::errc() || p != line.data() + t1) {
    return InvalidArgument("invalid log record timestamp");
  }
  std::string_view sev_name = line.substr(t1 + 1, t2 - t1 - 1);
  // The launcher writes almost only these two; the rest take the general path.
  if (sev_name == "INFO") {
    rec.severity = model::Severity::kInfo;
  } else if (sev_name == "ERROR") {
    rec.severity = model::Severity::kError;
  } else {
    auto sev = model::ParseSeverity(sev_name);
    if (!sev) return InvalidArgument("invalid log record severity");
    rec.severity = *sev;
  }
  std::string_view source = line.substr(t2 + 1, t3 - t2 - 1);
  if (source == "S") {
    rec.service = true;
  } else if (source != "R") {
    return InvalidArgument("invalid log record source");
  }
  std::string_view msg = line.substr(t3 + 1);
  rec.message.reserve(msg.size());
  for (size_t i = 0; i < msg.size(); ++i) {
    // Copy the run up to the next escape in one go (most lines have none).
    size_t next = msg.find('\\', i);
    if (next == std::string_view::npos) next = msg.size();
    rec.message.append(msg.data() + i, next - i);
    i = next;
    if (i >= msg.size()) break;
    if (i + 1 == msg.size()) {
      rec.message.push_back('\\');
      break;
    }
    char e = msg[++i];
    switch (e) {
      case '\\':
        rec.message.push_back('\\');
        break;
      case 'n':
        rec.message.push_back('\n');
        break;
      case 't':
        rec.message.push_back('\t');
        break;
      case 'r':
        rec.message.push_back('\r');
        break;
      default:  // not produced by the writer; kept verbatim
        rec.message.push_back('\\');
        rec.message.push_back(e);
    }
  }
  return Status::Ok();
}

Result<LogRecord> ParseLogRecord(std::string_view line) {
  LogRecord rec;
  TRAINYARD_RETURN_IF_ERROR(ParseLogRecordInto(line, &rec));
  return rec;
}

std::string SanitizeUtf8(std::string_view s) {
  // Fast path: plain ASCII (most log lines) is valid as it is.
  bool ascii = true;
  for (unsigned char c : s) {
    if (c >= 0x80) {
      ascii = false;
      break;
    }
  }
  if (ascii) return std::string(s);
  std::string out;
  out.reserve(s.size());
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    unsigned char c = p[i];
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
      ++i;
      continue;
    }
    size_t len = 0;
    uint32_t cp = 0;
    if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    }
    bool ok = len != 0 && i + len <= n;
    for (size_t k = 1; ok && k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) ok = false;
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    if (ok) {
      // Reject overlong forms, surrogates and values past U+10FFFF.
      ok = !((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
             (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF);
    }
    if (ok) {
      out.append(s.data() + i, len);
      i += len;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

}  // namespace trainyard::executor

#include "trainyard/scheduler/resources.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <set>

#include "trainyard/core/log.h"
#include "trainyard/core/util.h"

namespace trainyard::scheduler {

namespace {

std::string GiB(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(bytes) / (1LL << 30));
  return buf;
}

// An overcommit factor as configured: "32", "1.5".
std::string Factor(double f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", f);
  return buf;
}

std::string Cpus(int64_t millis) {
  char buf[32];
  if (millis % 1000 == 0) {
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(millis / 1000));
  } else {
    std::snprintf(buf, sizeof buf, "%.1f", static_cast<double>(millis) / 1000);
  }
  return buf;
}

}  // namespace

JobDemand JobDemand::Sum(const std::vector<ReplicaDemand>& replicas) {
  JobDemand d;
  std::map<std::string, int> by_type;
  for (const auto& r : replicas) {
    d.cpu_millis += r.cpu_millis;
    d.memory_bytes += r.memory_bytes;
    if (r.gpus > 0) {
      d.gpus += r.gpus;
      by_type[r.gpu_type] += r.gpus;
    }
  }
  d.gpus_by_type.assign(by_type.begin(), by_type.end());
  return d;
}

ResourcePool::ResourcePool(NodeCapacity capacity, bool exact_gpu_type)
    : capacity_(std::move(capacity)),
      exact_gpu_type_(exact_gpu_type),
      gpu_used_(capacity_.gpus.size(), false) {}

bool ResourcePool::GpuMatches(const Gpu& gpu, const std::string& type) const {
  return !exact_gpu_type_ || gpu.type == type;
}

int ResourcePool::FreeGpusFor(const std::string& type) const {
  int n = 0;
  for (size_t i = 0; i < capacity_.gpus.size(); ++i) {
    if (!gpu_used_[i] && GpuMatches(capacity_.gpus[i], type)) ++n;
  }
  return n;
}

int ResourcePool::free_gpus() const {
  return static_cast<int>(std::count(gpu_used_.begin(), gpu_used_.end(), false));
}

ResourcePool::Misfit ResourcePool::Exceeds(const JobDemand& d) const {
  Misfit m;
  std::string& why = m.gpus;
  auto add = [&why](const std::string& s) { why += (why.empty() ? "" : "; ") + s; };
  if (d.gpus > 0) {
    const int total = static_cast<int>(capacity_.gpus.size());
    if (total == 0) {
      add("the job asks for " + std::to_string(d.gpus) +
          " GPU(s) but this Trainyard has no GPUs (setting gpus)");
    } else if (d.gpus > total) {
      add("the job asks for " + std::to_string(d.gpus) + " GPUs but this Trainyard has " +
          std::to_string(total));
    } else if (exact_gpu_type_) {
      for (const auto& [type, n] : d.gpus_by_type) {
        int have = 0;
        for (const auto& g : capacity_.gpus) have += g.type == type ? 1 : 0;
        if (n > have) {
          add("the job asks for " + std::to_string(n) + " " + type +
              " GPU(s) but this Trainyard has " + std::to_string(have) +
              " (gpu_type_match is exact)");
        }
      }
    }
  }
  if (d.cpu_millis > capacity_.cpu_millis) {
    m.cpu = "the job's replicas need " + Cpus(d.cpu_millis) +
            " vCPUs in all but this Trainyard offers " + Cpus(capacity_.cpu_millis) + " (" +
            std::to_string(capacity_.cpus) + " CPUs x cpu_overcommit " +
            Factor(capacity_.cpu_overcommit) + ")";
  }
  if (d.memory_bytes > capacity_.memory_bytes) {
    m.memory = "the job's replicas need " + GiB(d.memory_bytes) +
               " of memory in all but this Trainyard offers " + GiB(capacity_.memory_bytes) + " (" +
               GiB(capacity_.physical_memory_bytes) + " x memory_overcommit " +
               Factor(capacity_.memory_overcommit) + ")";
  }
  return m;
}

std::string ResourcePool::Misfit::All() const {
  std::string why;
  for (const std::string* part : {&gpus, &cpu, &memory}) {
    if (!part->empty()) why += (why.empty() ? "" : "; ") + *part;
  }
  return why;
}

std::string ResourcePool::NeverFits(const JobDemand& d) const { return Exceeds(d).All(); }

ResourcePool::Shortage ResourcePool::Short(const JobDemand& d) const {
  Shortage s;
  s.cpu = d.cpu_millis > free_cpu_millis();
  s.memory = d.memory_bytes > free_memory_bytes();
  if (d.gpus > 0) {
    if (exact_gpu_type_) {
      for (const auto& [type, n] : d.gpus_by_type) {
        if (n > FreeGpusFor(type)) s.gpu = true;
      }
    } else {
      s.gpu = d.gpus > free_gpus();
    }
  }
  return s;
}

bool ResourcePool::Fits(const JobDemand& d) const {
  Shortage s = Short(d);
  return !s.cpu && !s.memory && !s.gpu;
}

Result<std::vector<std::vector<int>>> ResourcePool::Allocate(
    const std::string& owner, const std::vector<ReplicaDemand>& replicas) {
  if (!Fits(JobDemand::Sum(replicas))) {
    return FailedPrecondition("the job does not fit in the free resources");
  }
  Holding h;
  std::vector<std::vector<int>> out(replicas.size());
  std::vector<bool> taken = gpu_used_;
  // Replicas asking for a specific type first would matter only with mixed inventories and
  // exact matching; Fits() checked the per-type totals, so a first-fit walk cannot run dry.
  for (size_t i = 0; i < replicas.size(); ++i) {
    const ReplicaDemand& r = replicas[i];
    h.cpu_millis += r.cpu_millis;
    h.memory_bytes += r.memory_bytes;
    for (size_t g = 0; g < capacity_.gpus.size() && static_cast<int>(out[i].size()) < r.gpus; ++g) {
      if (taken[g] || !GpuMatches(capacity_.gpus[g], r.gpu_type)) continue;
      taken[g] = true;
      out[i].push_back(capacity_.gpus[g].index);
      h.gpus.push_back(static_cast<int>(g));
    }
    if (static_cast<int>(out[i].size()) < r.gpus) {
      return FailedPrecondition("not enough free GPUs of type " + r.gpu_type);
    }
  }
  Release(owner);
  gpu_used_ = std::move(taken);
  used_cpu_ += h.cpu_millis;
  used_memory_ += h.memory_bytes;
  holdings_[owner] = std::move(h);
  return out;
}

void ResourcePool::Restore(const std::string& owner, const std::vector<ReplicaDemand>& replicas,
                           const std::vector<std::vector<int>>& gpus) {
  Release(owner);
  Holding h;
  for (const auto& r : replicas) {
    h.cpu_millis += r.cpu_millis;
    h.memory_bytes += r.memory_bytes;
  }
  for (const auto& list : gpus) {
    for (int index : list) {
      for (size_t g = 0; g < capacity_.gpus.size(); ++g) {
        if (capacity_.gpus[g].index != index) continue;
        if (gpu_used_[g]) {
          // Two recovered replicas claim one GPU (the inventory changed across the restart):
          // both keep running, and the GPU is held for the first claimant only.
          TY_LOG_WARN("sched", "GPU {} is claimed by more than one recovered job ({} among them)",
                      index, owner);
          continue;
        }
        gpu_used_[g] = true;
        h.gpus.push_back(static_cast<int>(g));
      }
    }
  }
  used_cpu_ += h.cpu_millis;
  used_memory_ += h.memory_bytes;
  holdings_[owner] = std::move(h);
}

void ResourcePool::Release(const std::string& owner) {
  auto it = holdings_.find(owner);
  if (it == holdings_.end()) return;
  used_cpu_ -= it->second.cpu_millis;
  used_memory_ -= it->second.memory_bytes;
  for (int g : it->second.gpus) gpu_used_[g] = false;
  holdings_.erase(it);
}

std::string AcceleratorTypeForGpuName(const std::string& name) {
  std::string upper;
  for (char c : name) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  static const std::pair<const char*, const char*> kKnown[] = {
      {"K80", "NVIDIA_TESLA_K80"}, {"P100", "NVIDIA_TESLA_P100"}, {"V100", "NVIDIA_TESLA_V100"},
      {"P4", "NVIDIA_TESLA_P4"},   {"T4", "NVIDIA_TESLA_T4"},     {"A100", "NVIDIA_TESLA_A100"}};
  // Whole-token match: "P4" must not match "P40", "T4" not "RTX 4090".
  std::vector<std::string> tokens;
  std::string cur;
  for (char c : upper) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      cur += c;
    } else if (!cur.empty()) {
      tokens.push_back(cur);
      cur.clear();
    }
  }
  if (!cur.empty()) tokens.push_back(cur);
  for (const auto& [model, type] : kKnown) {
    for (const auto& t : tokens) {
      if (t == model) return type;
    }
  }
  std::string out;
  for (const auto& t : tokens) {
    if (t == "NVIDIA") continue;
    out += (out.empty() ? "" : "_") + t;
  }
  return "NVIDIA_" + (out.empty() ? std::string("GPU") : out);
}

std::vector<Gpu> ParseNvidiaSmi(const std::string& output) {
  std::vector<Gpu> gpus;
  for (const std::string& raw : Split(output, '\n')) {
    std::string line = Trim(raw);
    if (line.empty()) continue;
    size_t comma = line.find(',');
    if (comma == std::string::npos) continue;
    Gpu g;
    try {
      g.index = std::stoi(Trim(line.substr(0, comma)));
    } catch (...) {
      continue;
    }
    g.name = Trim(line.substr(comma + 1));
    g.type = AcceleratorTypeForGpuName(g.name);
    gpus.push_back(std::move(g));
  }
  return gpus;
}

std::vector<Gpu> DetectGpus(std::string* note) {
  FILE* p = ::popen("nvidia-smi --query-gpu=index,name --format=csv,noheader 2>/dev/null", "r");
  if (p == nullptr) {
    *note = "cannot run nvidia-smi";
    return {};
  }
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int rc = ::pclose(p);
  if (rc != 0) {
    *note = "nvidia-smi is not available or found no GPU";
    return {};
  }
  auto gpus = ParseNvidiaSmi(out);
  if (gpus.empty()) *note = "nvidia-smi listed no GPU";
  return gpus;
}

Result<std::vector<Gpu>> ParseGpuList(const std::string& text) {
  std::vector<Gpu> gpus;
  std::string t = Trim(text);
  if (t.empty() || t == "none") return gpus;
  for (const std::string& raw : Split(t, ',')) {
    std::string item = Trim(raw);
    int count = 1;
    size_t x = item.find('x');
    if (x != std::string::npos && x > 0 && x <= 4 &&
        std::all_of(item.begin(), item.begin() + static_cast<std::ptrdiff_t>(x),
                    [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
      count = std::stoi(item.substr(0, x));  // at most 4 digits: cannot overflow
      item = item.substr(x + 1);
    }
    bool valid = !item.empty() && count > 0 && count <= 1024;
    for (char c : item) {
      if (!std::isupper(static_cast<unsigned char>(c)) &&
          !std::isdigit(static_cast<unsigned char>(c)) && c != '_')
        valid = false;
    }
    if (!valid) {
      return InvalidArgument("config gpus: \"" + raw +
                             "\" is not an accelerator type such as NVIDIA_TESLA_T4 (or "
                             "2xNVIDIA_TESLA_T4)");
    }
    for (int i = 0; i < count; ++i) {
      Gpu g;
      g.index = static_cast<int>(gpus.size());
      g.type = item;
      gpus.push_back(std::move(g));
    }
  }
  return gpus;
}

}  // namespace trainyard::scheduler

// gcloud's --filter language as `trainyard jobs list` evaluates it (src/resource/filter.h),
// and its --format language: the first line is a format, the rest a filter. A filter that
// compiles is evaluated against job resources of several shapes (times, numbers, lists,
// missing keys); a format that parses renders them.
#include <cstdint>
#include <string_view>

#include "trainyard/resource/filter.h"
#include "trainyard/resource/format.h"

namespace {

const trainyard::resource::Json& Jobs() {
  static const auto* jobs = new trainyard::resource::Json(trainyard::resource::Json::parse(R"([
    {"jobId":"census_1","state":"RUNNING","createTime":"2024-03-10T10:00:00Z",
     "labels":{"owner":"alice","team":""},"trainingInput":{"workerCount":"4",
     "args":["--epochs","5"],"region":"us-central1"},"trainingOutput":{"consumedMLUnits":0.5,
     "trials":[{"trialId":"1","finalMetric":{"objectiveValue":0.9}}]}},
    {"jobId":"x","state":"QUEUED","createTime":"not a time","jobPosition":"3","etag":"abc="},
    {"jobId":"","createTime":12,"labels":[1,true,null,{"a":"b"}],"errorMessage":"<b>x</b>"}
  ])"));
  return *jobs;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  size_t nl = text.find('\n');
  std::string_view format = nl == std::string_view::npos ? std::string_view() : text.substr(0, nl);
  std::string_view filter = nl == std::string_view::npos ? text : text.substr(nl + 1);
  auto compiled = trainyard::resource::Filter::Compile(
      filter, trainyard::resource::FilterOptions{1710072000LL * 1000000});
  if (compiled.ok()) {
    for (const auto& job : Jobs()) (void)(*compiled)->Matches(job);
    (void)(*compiled)->MissingKeys();
  }
  auto f = trainyard::resource::ParseFormat(format);
  if (f.ok()) {
    std::vector<trainyard::resource::Json> jobs(Jobs().begin(), Jobs().end());
    (void)trainyard::resource::Render(*f, jobs);
    for (const auto& job : jobs) (void)trainyard::resource::ProjectObject(*f, job);
  }
  return 0;
}

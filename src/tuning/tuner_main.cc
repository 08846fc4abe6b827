// trainyard-tuner: one tuning study driven over stdin/stdout, one JSON object per line (the
// protocol of the tuning benchmark, bench/bench_tuning.py; tuning.md §6.1). See kHelp.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "trainyard/tuning/study.h"

namespace {

using nlohmann::json;
using trainyard::tuning::ParameterSpec;
using trainyard::tuning::ParameterType;
using trainyard::tuning::ParameterValue;
using trainyard::tuning::Study;
using trainyard::tuning::StudyConfig;

constexpr const char* kHelp = R"(Usage: trainyard-tuner [--help]

Runs one hyperparameter-tuning study (the engine behind HyperparameterSpec) over stdin/stdout:
one JSON object per line in, one JSON object per line out, flushed after every line.

  -> {"op":"create","goal":"MINIMIZE","params":[ParameterSpec...],
      "algorithm":"ALGORITHM_UNSPECIFIED","maxParallelTrials":1,
      "enableTrialEarlyStopping":false,"seed":0}
  <- {"ok":true}
  -> {"op":"suggest","count":k}
  <- {"trials":[{"id":1,"params":{"x1":0.3,...}},...]}
     (fewer than k, possibly none, once the search space is exhausted)
  -> {"op":"complete","id":1,"value":0.42}        ("value":null: the trial failed;
  <- {"ok":true}                                   optional "stopped":true: stopped early)
  -> {"op":"report","id":1,"step":3,"value":0.9}   (an intermediate measurement)
  <- {"stop":false}                                (or {"stop":true,"rule":"median"}: stop now;
                                                    rule median or predicted_final)
  -> {"op":"close"}
  <- {"ok":true}                                   (then exit 0; end of input also ends)

"create" takes AI Platform's HyperparameterSpec fields (camelCase or snake_case) plus "seed";
ParameterSpecs are {"parameterName","type":"DOUBLE|INTEGER|CATEGORICAL|DISCRETE","minValue",
"maxValue","categoricalValues","discreteValues","scaleType"}. Parameter values come back as
JSON numbers (INTEGER as integers) or strings (CATEGORICAL). A request that cannot be served is
answered {"error":"<message>"} and the tool reads on; a refused "create" leaves no study.
)";

json ValueJson(const ParameterSpec& spec, const ParameterValue& v) {
  switch (spec.type) {
    case ParameterType::kCategorical:
      return spec.categorical_values.at(static_cast<size_t>(v.category));
    case ParameterType::kInteger:
      return static_cast<int64_t>(v.number);
    case ParameterType::kDiscrete:
      // Integral list values (batch sizes, layer counts) print without a fraction.
      if (v.number == std::floor(v.number) && std::abs(v.number) < 9007199254740992.0) {
        return static_cast<int64_t>(v.number);
      }
      return v.number;
    case ParameterType::kDouble:
      return v.number;
  }
  return nullptr;
}

// The integer member `key` of `req`; nullopt when missing or not an integer.
std::optional<int64_t> IntMember(const json& req, const char* key) {
  auto it = req.find(key);
  if (it == req.end()) return std::nullopt;
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_number_float()) {
    double d = it->get<double>();
    if (d == std::floor(d) && std::abs(d) < 9.2e18) return static_cast<int64_t>(d);
  }
  return std::nullopt;
}

class Session {
 public:
  // The answer to one request line; `done` set on close.
  json Handle(const std::string& line, bool* done) {
    json req = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (req.is_discarded() || !req.is_object()) return Error("request is not a JSON object");
    auto op_it = req.find("op");
    if (op_it == req.end() || !op_it->is_string()) return Error("missing \"op\"");
    const std::string op = op_it->get<std::string>();
    if (op == "create") return Create(line);
    if (op == "close") {
      *done = true;
      return {{"ok", true}};
    }
    if (op != "suggest" && op != "complete" && op != "report") {
      return Error("unknown op \"" + op + "\"");
    }
    if (!study_) return Error("no study: send \"create\" first");
    if (op == "suggest") return Suggest(req);
    if (op == "complete") return Complete(req);
    return Report(req);
  }

 private:
  static json Error(const std::string& message) { return {{"error", message}}; }

  json Create(const std::string& line) {
    if (study_) return Error("a study already exists (one study per process)");
    auto config = trainyard::tuning::ParseStudyConfig(line);
    if (!config.ok()) return Error(config.status().message());
    auto study = Study::Create(std::move(config).value());
    if (!study.ok()) return Error(study.status().message());
    study_ = std::move(study).value();
    return {{"ok", true}};
  }

  json Suggest(const json& req) {
    int64_t count = 1;
    if (req.contains("count")) {
      auto c = IntMember(req, "count");
      if (!c || *c < 1 || *c > 10000) return Error("\"count\" must be an integer in [1, 10000]");
      count = *c;
    }
    json trials = json::array();
    const StudyConfig& config = study_->config();
    for (const auto& t : study_->Suggest(static_cast<int>(count))) {
      json params = json::object();
      for (size_t i = 0; i < config.params.size(); ++i) {
        params[config.params[i].name] = ValueJson(config.params[i], t.params[i]);
      }
      trials.push_back({{"id", t.id}, {"params", std::move(params)}});
    }
    return {{"trials", std::move(trials)}};
  }

  json Complete(const json& req) {
    auto id = IntMember(req, "id");
    if (!id) return Error("\"id\" must be an integer");
    std::optional<double> value;
    auto v = req.find("value");
    if (v != req.end() && !v->is_null()) {
      if (!v->is_number()) return Error("\"value\" must be a number or null");
      value = v->get<double>();
    }
    bool stopped = false;
    auto s = req.find("stopped");
    if (s != req.end() && !s->is_null()) {
      if (!s->is_boolean()) return Error("\"stopped\" must be a boolean");
      stopped = s->get<bool>();
    }
    trainyard::Status status = study_->Complete(*id, value, stopped);
    if (!status.ok()) return Error(status.message());
    return {{"ok", true}};
  }

  json Report(const json& req) {
    auto id = IntMember(req, "id");
    auto step = IntMember(req, "step");
    if (!id) return Error("\"id\" must be an integer");
    if (!step) return Error("\"step\" must be an integer");
    auto v = req.find("value");
    if (v == req.end() || !v->is_number()) return Error("\"value\" must be a number");
    trainyard::tuning::StopVerdict why;
    if (!study_->Report(*id, *step, v->get<double>(), &why)) return {{"stop", false}};
    return {
        {"stop", true},
        {"rule", why.rule == trainyard::tuning::StopRule::kMedian ? "median" : "predicted_final"}};
  }

  std::unique_ptr<Study> study_;
};

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(kHelp, stdout);
      return 0;
    }
    std::fprintf(stderr, "trainyard-tuner: unknown argument %s (try --help)\n", argv[i]);
    return 2;
  }
  std::ios::sync_with_stdio(false);
  Session session;
  std::string line;
  bool done = false;
  while (!done && std::getline(std::cin, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    json answer;
    try {
      answer = session.Handle(line, &done);
    } catch (const std::exception& e) {
      // nlohmann type errors on odd requests; one bad line must not end the study.
      answer = {{"error", e.what()}};
    }
    std::cout << answer.dump(-1, ' ', false, json::error_handler_t::replace) << '\n' << std::flush;
  }
  return 0;
}

// The early-stopping rules (tuning.md §5.6), the imputed final value of a stopped trial, and the
// seed mixer the designers share.
//
// Median rule: the reference is the median of the completed trials' values *at* the step (each
// one's latest report at or before it), as Optuna's MedianPruner has it, not of their running
// averages up to the step as Vizier's paper words it. On learning curves that improve over time a
// running average lags behind the curve, so Vizier's reference is lenient: in
// bench/bench_tuning.py's early-stopping part it let trials use 85% of their steps (target <=
// 70%), against 64% for this reference (and excluding stopped trials from the references), with
// the same final regret. Since session 12 the rule compares with the references' 45th percentile
// counted from the best (kMedianRulePercentile) rather than their median, from a trial's 2nd report
// rather than its 5th: those stops pay for the trials near the best one that are never stopped.
// Since session 14 a trial must stand beyond that reference by more than the references' report
// noise (ReportNoise): with a designer that proposes mostly good trials, the references at a
// trial's 2nd or 3rd report are close together, and which side of their 45th percentile a trial
// lands on was mostly noise. On development curves (8 sets x 20 seeds) the stopped trials that
// would have ended better than the study's best fell from 0.4-0.65 per study to at most 0.1 on
// the spiky and double-descent sets, for 1-2 points more of the steps (docs/benchmarks.md,
// "Session 14").
//
// Predicted-final rule (after the median rule): a trial better than the median can still be
// unable to become the best; a regression of the references' final values on their values at the
// step, with its prediction interval, says when (Vizier's performance-curve rule in a simple,
// data-driven form: no curve model is assumed, so a family where early values mislead, such as a
// too-high learning rate converging fastest to a worse value, gives wide intervals and no stops).
//
// Imputation: a stopped trial completes with an intermediate value. Fed to the GP as if final it
// made stopping cost up to 0.12 decades of best final regret on the held-out learning curves of
// bench_tuning.py (es_wide); labelled with the quantile of the references' finals that matches its
// standing at its last step, at most 0.03 (docs/benchmarks.md). That standing is shrunk toward the
// middle by the references' rank correlation between their values at the step and at the end: on
// curve families where early order misleads (crossing, overfit) the quantile mapping labelled
// slow but good trials as bad (session 10: mean loss over 9 development curve sets +0.11 -> +0.08
// decades).
//
// Near the best trial the median rule stops nothing (NearTheBestTrial, applied by Study::Report):
// the labels above still regress toward the middle, and the cost of stopping came from stopped
// trials near the best one, where the designer refines the optimum, being labelled too low. On
// 1,200 development runs (12 curve sets, seeds 1000-1099) shielding them from both rules cut the
// mean cost of stopping from +0.106 to +0.016 decades of best final regret (docs/benchmarks.md,
// "Session 12"). Since session 16 the predicted-final rule applies there too, and such a trial,
// once stopped, is labelled with that rule's own prediction (PredictFinal), which does not regress
// toward the middle: with a designer that proposes mostly good trials, the shield had kept 3 trials
// per study that were to end 0.3 decades or more behind the best running to the end. On 580
// development runs (29 curve sets, seeds 1000-1019) the steps used fell from 73 % to 62 %, for a
// mean cost of +0.02 decades (-0.00 before). On the eighth held-out set (10 curve sets x 80
// seeds) 37-73 % of the steps against 49-76 %, losses +0.02 to +0.29 decades against -0.01 to
// +0.27; the late-blooming family, where the trials that end best look worst early, loses most
// with either (docs/benchmarks.md, "Session 16").
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <vector>

#include "designer.h"

namespace trainyard::tuning {
namespace {

// Optuna's n_startup_trials and n_warmup_steps spirit: no verdict on thin evidence.
constexpr size_t kMinCompletedTrials = kMedianRuleMinReferenceTrials;
constexpr size_t kMinMeasurements = kMedianRuleMinReports;

// The value that `percent` percent of `v` (minimisation values) match or beat: linear
// interpolation between order statistics, the median at 50.
double PercentileFromBest(std::vector<double> v, double percent) {
  std::sort(v.begin(), v.end());
  const double pos = percent / 100 * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

// How many report noises (ReportNoise) a trial must stand beyond the median rule's reference.
constexpr double kMedianRuleNoiseMargin = 1.0;

}  // namespace

bool IsStoppingReference(const Trial& t) {
  // Trials stopped early are not references: their curves end where they looked worst, and
  // counting them would drag the median toward the trials it is meant to stop.
  return t.state == TrialState::kCompleted && !t.stopped_early && !t.measurements.empty();
}

double ReportNoise(const Trial& trial, const std::vector<Trial>& trials, int64_t step) {
  std::vector<double> bends;  // |second difference| per reference
  for (const Trial& t : trials) {
    if (t.id == trial.id || !IsStoppingReference(t)) continue;
    const std::vector<Measurement>& ms = t.measurements;
    size_t centre = 1;
    while (centre < ms.size() && ms[centre].step < step) ++centre;
    if (centre + 1 >= ms.size()) continue;
    bends.push_back(std::abs(ms[centre + 1].value - 2 * ms[centre].value + ms[centre - 1].value));
  }
  if (bends.empty()) return 0;
  const auto mid = bends.begin() + static_cast<std::ptrdiff_t>(bends.size() / 2);
  std::nth_element(bends.begin(), mid, bends.end());
  return 1.4826 * *mid / std::sqrt(6.0);
}

bool MedianRuleSaysStop(const Trial& trial, const std::vector<Trial>& trials, Goal goal,
                        StopVerdict* verdict) {
  if (trial.measurements.size() < kMinMeasurements) return false;
  const bool maximize = goal == Goal::kMaximize;
  const int64_t step = trial.measurements.back().step;  // the newest report
  double best = trial.measurements.front().value;
  for (const Measurement& m : trial.measurements) {
    best = maximize ? std::max(best, m.value) : std::min(best, m.value);
  }

  size_t completed = 0;
  std::vector<double> values;  // each reference trial's latest report at or before `step`
  for (const Trial& t : trials) {
    if (t.id == trial.id || !IsStoppingReference(t)) continue;
    ++completed;
    const Measurement* at = nullptr;
    for (const Measurement& m : t.measurements) {
      if (m.step <= step && (at == nullptr || m.step >= at->step)) at = &m;
    }
    if (at != nullptr) values.push_back(maximize ? -at->value : at->value);
  }
  if (completed < kMinCompletedTrials || values.empty()) return false;
  const int references = static_cast<int>(values.size());
  const double bar = PercentileFromBest(std::move(values), kMedianRulePercentile);
  const double reference = maximize ? -bar : bar;
  const double margin = kMedianRuleNoiseMargin * ReportNoise(trial, trials, step);
  const bool stop = maximize ? best < reference - margin : best > reference + margin;
  if (stop && verdict != nullptr) {
    *verdict = {step, best, reference, references, StopRule::kMedian};
  }
  return stop;
}

namespace {

// The median of a trial's latest reports at or before `step` (at most kSmoothReports of them), or
// nullopt when it has none by then: one noisy report is a poor summary of where a curve stands,
// and a median (not the mean) of three ignores one transient spike, as a bad batch makes (session
// 13, development runs of hpo_asr7's spiky curves: the cost of stopping +0.24 -> +0.14 decades;
// docs/benchmarks.md).
constexpr size_t kSmoothReports = 3;

std::optional<double> SmoothedValueAt(const Trial& t, int64_t step) {
  // Reports arrive in step order in practice; pick the latest ones by step regardless.
  std::vector<const Measurement*> upto;
  for (const Measurement& m : t.measurements) {
    if (m.step <= step) upto.push_back(&m);
  }
  if (upto.empty()) return std::nullopt;
  const size_t k = std::min(kSmoothReports, upto.size());
  std::partial_sort(upto.begin(), upto.begin() + static_cast<std::ptrdiff_t>(k), upto.end(),
                    [](const Measurement* a, const Measurement* b) { return a->step > b->step; });
  std::vector<double> values;
  for (size_t i = 0; i < k; ++i) values.push_back(upto[i]->value);
  std::sort(values.begin(), values.end());
  return k % 2 == 1 ? values[k / 2] : 0.5 * (values[k / 2 - 1] + values[k / 2]);
}

// Ranks 0..n-1 of v (ties get their mean rank).
std::vector<double> Ranks(const std::vector<double>& v) {
  std::vector<size_t> idx(v.size());
  for (size_t i = 0; i < v.size(); ++i) idx[i] = i;
  std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (size_t i = 0; i < idx.size();) {
    size_t j = i;
    while (j + 1 < idx.size() && v[idx[j + 1]] == v[idx[i]]) ++j;
    for (size_t k = i; k <= j; ++k) r[idx[k]] = 0.5 * static_cast<double>(i + j);
    i = j + 1;
  }
  return r;
}

}  // namespace

double RankCorrelation(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size() || a.size() < 2) return 0;
  const std::vector<double> ra = Ranks(a), rb = Ranks(b);
  const double n = static_cast<double>(a.size());
  double ma = 0, mb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    ma += ra[i] / n;
    mb += rb[i] / n;
  }
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    sab += (ra[i] - ma) * (rb[i] - mb);
    saa += (ra[i] - ma) * (ra[i] - ma);
    sbb += (rb[i] - mb) * (rb[i] - mb);
  }
  return saa > 0 && sbb > 0 ? sab / std::sqrt(saa * sbb) : 0.0;
}

std::optional<double> ImputedFinalValue(const Trial& trial, const std::vector<Trial>& trials,
                                        Goal goal) {
  if (trial.measurements.empty()) return std::nullopt;
  int64_t step = trial.measurements.front().step;
  for (const Measurement& m : trial.measurements) step = std::max(step, m.step);
  const std::optional<double> own = SmoothedValueAt(trial, step);
  const bool maximize = goal == Goal::kMaximize;
  // Minimisation values from here on.
  const double v = maximize ? -*own : *own;
  std::vector<double> finals, at_step;
  double better = 0;
  for (const Trial& t : trials) {
    if (t.id == trial.id || !IsStoppingReference(t) || !t.value.has_value()) continue;
    const std::optional<double> at = SmoothedValueAt(t, step);
    if (!at) continue;
    const double r = maximize ? -*at : *at;
    better += r < v ? 1.0 : r == v ? 0.5 : 0.0;
    finals.push_back(maximize ? -*t.value : *t.value);
    at_step.push_back(r);
  }
  if (finals.size() < kMinImputeReferences) return std::nullopt;
  const double n = static_cast<double>(finals.size());
  // How far the standing at this step predicts the standing at the end, across the references:
  // the standing is shrunk toward the middle by their rank correlation (none when the order at
  // the step says nothing about the order at the end, as when a too-high learning rate leads
  // early and ends worse).
  better = n / 2 + std::max(0.0, RankCorrelation(at_step, finals)) * (better - n / 2);
  // The trial's standing among the references at its last step, as a quantile, mapped onto the
  // same quantile of their final values (linear interpolation between order statistics).
  std::sort(finals.begin(), finals.end());
  const double pos = std::clamp(better * (n - 1) / n, 0.0, n - 1);
  const auto lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, finals.size() - 1);
  const double f = finals[lo] + (pos - static_cast<double>(lo)) * (finals[hi] - finals[lo]);
  return maximize ? -f : f;
}

std::optional<FinalPrediction> PredictFinal(const Trial& trial, const std::vector<Trial>& trials,
                                            Goal goal) {
  if (trial.measurements.size() < kMinMeasurements) return std::nullopt;
  const bool maximize = goal == Goal::kMaximize;
  const double sign = maximize ? -1.0 : 1.0;  // minimisation values from here on
  // The trial's best smoothed value so far, not the one at its newest step: two spikes among its
  // last three reports must not make it look worse than it has shown it can be. One pass over its
  // reports in step order (a trainer may report thousands of times).
  std::vector<Measurement> ordered(trial.measurements);
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const Measurement& a, const Measurement& b) { return a.step < b.step; });
  double own = HUGE_VAL;
  for (size_t i = 0; i < ordered.size(); ++i) {
    double window[kSmoothReports];
    const size_t k = std::min(kSmoothReports, i + 1);
    for (size_t j = 0; j < k; ++j) window[j] = ordered[i - j].value;
    std::sort(window, window + k);
    const double smoothed = k % 2 == 1 ? window[k / 2] : 0.5 * (window[k / 2 - 1] + window[k / 2]);
    own = std::min(own, sign * smoothed);
  }
  const int64_t step = ordered.back().step;  // the newest
  std::vector<double> x, y;
  double best_final = HUGE_VAL;
  for (const Trial& t : trials) {
    if (t.id == trial.id || !IsStoppingReference(t) || !t.value.has_value()) continue;
    const std::optional<double> at = SmoothedValueAt(t, step);
    if (!at) continue;
    x.push_back(sign * *at);
    y.push_back(sign * *t.value);
    best_final = std::min(best_final, y.back());
  }
  const size_t n = x.size();
  if (n < kMinCompletedTrials) return std::nullopt;
  // Least squares y = a + b x over the references, and the prediction interval at the trial's x.
  const double nd = static_cast<double>(n);
  double xm = 0, ym = 0;
  for (size_t i = 0; i < n; ++i) {
    xm += x[i] / nd;
    ym += y[i] / nd;
  }
  double sxx = 0, sxy = 0;
  for (size_t i = 0; i < n; ++i) {
    sxx += (x[i] - xm) * (x[i] - xm);
    sxy += (x[i] - xm) * (y[i] - ym);
  }
  // Every reference stood at the same value: their curves say nothing about the order at the end.
  if (!(sxx > 1e-12 * (1.0 + xm * xm))) return std::nullopt;
  const double b = sxy / sxx, a = ym - b * xm;
  double rss = 0;
  for (size_t i = 0; i < n; ++i) rss += (y[i] - a - b * x[i]) * (y[i] - a - b * x[i]);
  const double dof = nd - 2;
  FinalPrediction p;
  p.step = step;
  p.mean = sign * (a + b * own);
  p.spread = std::sqrt(rss / dof * (1 + 1 / nd + (own - xm) * (own - xm) / sxx));
  // About a two-sided 95 % Student t quantile for dof >= 3 (3.18 at 3, 2.23 at 10, 2.1 at 20).
  p.z = 2.0 + 3.0 / dof;
  p.best_final = sign * best_final;
  p.references = static_cast<int>(n);
  return p;
}

bool PredictedFinalSaysStop(const Trial& trial, const std::vector<Trial>& trials, Goal goal,
                            StopVerdict* verdict) {
  const std::optional<FinalPrediction> p = PredictFinal(trial, trials, goal);
  if (!p) return false;
  const double sign = goal == Goal::kMaximize ? -1.0 : 1.0;  // minimisation values
  const double optimistic = sign * p->mean - p->z * p->spread;
  const bool stop = optimistic > sign * p->best_final;
  if (stop && verdict != nullptr) {
    *verdict = {p->step, sign * optimistic, p->best_final, p->references,
                StopRule::kPredictedFinal};
  }
  return stop;
}

bool StoppingRulesSayStop(const Trial& trial, const std::vector<Trial>& trials, Goal goal,
                          StopVerdict* verdict) {
  return MedianRuleSaysStop(trial, trials, goal, verdict) ||
         PredictedFinalSaysStop(trial, trials, goal, verdict);
}

bool NearTheBestTrial(const Trial& trial, const std::vector<Trial>& trials, const Space& space,
                      Goal goal) {
  const bool maximize = goal == Goal::kMaximize;
  const Trial* best = nullptr;
  for (const Trial& t : trials) {
    if (t.id == trial.id || !IsStoppingReference(t) || !t.value.has_value()) continue;
    if (best == nullptr || (maximize ? *t.value > *best->value : *t.value < *best->value))
      best = &t;
  }
  if (best == nullptr) return false;
  const Point centre = space.Encode(best->params);
  const size_t dims = centre.cont.size() + centre.cat.size();
  if (dims == 0) return false;
  // Root mean square over the coordinates: unit coordinates, a differing category counts 1.
  auto distance = [&](const Trial& t) {
    const Point p = space.Encode(t.params);
    double sum = 0;
    for (size_t i = 0; i < p.cont.size(); ++i) {
      sum += (p.cont[i] - centre.cont[i]) * (p.cont[i] - centre.cont[i]);
    }
    for (size_t j = 0; j < p.cat.size(); ++j) sum += p.cat[j] != centre.cat[j] ? 1.0 : 0.0;
    return std::sqrt(sum / static_cast<double>(dims));
  };
  std::vector<double> others;  // the other finished trials' distances to the best one
  for (const Trial& t : trials) {
    if (&t == best || t.id == trial.id || t.state != TrialState::kCompleted) continue;
    others.push_back(distance(t));
  }
  if (others.empty()) return false;
  const auto mid = others.begin() + static_cast<std::ptrdiff_t>(others.size() / 2);
  std::nth_element(others.begin(), mid, others.end());
  return distance(trial) < kNearBestShare * *mid;
}

uint64_t MixSeed(uint64_t seed, uint64_t salt) {
  constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ULL;
  uint64_t z = (seed ^ (salt * kGolden)) + kGolden;  // splitmix64
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace trainyard::tuning

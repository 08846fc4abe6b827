#include "gp.h"

#include <LBFGSB.h>

#include <Eigen/Cholesky>
#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <numeric>
#include <random>

namespace trainyard::tuning::gp {
namespace {

using Eigen::ArrayXXd;
using Eigen::MatrixXd;
using Eigen::VectorXd;

constexpr double kSqrt5 = 2.23606797749978969641;
constexpr double kLog2Pi = 1.83787706640934548356;
// Vizier's tuned priors (tuned_gp_models.py): quadratic penalty weight, bounds and centres.
constexpr double kPriorWeight = 0.01;
constexpr double kSignalLo = 1e-3, kSignalHi = 10.0, kSignalCentre = 0.039;
constexpr double kLengthLo = 1e-2, kLengthHi = 1e2, kLengthCentre = 0.5;
constexpr double kNoiseLo = 1e-10, kNoiseHi = 1.0, kNoiseCentre = 0.0039;
// The additive component (gp.h): its share of the signal variance, and its per-feature length
// scales², which may be ten times shorter than the joint kernel's (ripples along one coordinate,
// as in Rastrigin, are resolved by the samples' spread along that coordinate alone).
constexpr double kAdditiveLo = 0.0, kAdditiveHi = 1.0, kAdditiveCentre = 0.5;
constexpr double kAddLengthLo = 1e-4;
// The posterior variance floor (the reference prototype's).
constexpr double kMinVariance = 1e-12;
// Candidates are scored in blocks of this many rows, so one block's kernel rows stay in cache.
constexpr Eigen::Index kPredictBlock = 256;

// Squared scaled distances between the rows of z and x: out(a, b) = sum_j w_j (z_aj - x_bj)^2
// over continuous coordinates plus w_j 1[z_aj != x_bj] over categorical ones.
void ScaledSquaredDistances(const Inputs& z, Eigen::Index z_begin, Eigen::Index z_rows,
                            const Inputs& x, const VectorXd& inv_ls2, ArrayXXd* out) {
  const int dc = x.num_cont(), dk = x.num_cat();
  out->setZero(z_rows, x.rows());
  for (Eigen::Index b = 0; b < x.rows(); ++b) {
    auto col = out->col(b);
    for (int j = 0; j < dc; ++j) {
      col += (z.cont.col(j).segment(z_begin, z_rows).array() - x.cont(b, j)).square() * inv_ls2[j];
    }
    for (int j = 0; j < dk; ++j) {
      col += (z.cat.col(j).segment(z_begin, z_rows).array() != x.cat(b, j)).cast<double>() *
             inv_ls2[dc + j];
    }
  }
}

// Matérn-5/2 of squared scaled distances, in place.
void MaternInPlace(double s2, ArrayXXd* d2) {
  ArrayXXd r = d2->sqrt();
  *d2 = s2 * (1.0 + kSqrt5 * r + (5.0 / 3.0) * *d2) * (-kSqrt5 * r).exp();
}

// The kernel between rows z_begin.. of z and the rows of x (gp.h): s2 ((1 - w) M(joint distance)
// + w / p sum_j M(distance along feature j)).
void KernelBlock(const Inputs& z, Eigen::Index z_begin, Eigen::Index z_rows, const Inputs& x,
                 const Kernel& kernel, ArrayXXd* out) {
  ScaledSquaredDistances(z, z_begin, z_rows, x, kernel.inv_ls2, out);
  MaternInPlace(kernel.s2 * (1 - kernel.w), out);
  if (kernel.w == 0) return;
  const int dc = x.num_cont(), dk = x.num_cat();
  const int p = dc + dk;
  const double share = kernel.s2 * kernel.w / p;
  ArrayXXd d(z_rows, x.rows());
  for (int j = 0; j < p; ++j) {
    for (Eigen::Index b = 0; b < x.rows(); ++b) {
      if (j < dc) {
        d.col(b) = (z.cont.col(j).segment(z_begin, z_rows).array() - x.cont(b, j)).square() *
                   kernel.inv_add_ls2[j];
      } else {
        d.col(b) = (z.cat.col(j - dc).segment(z_begin, z_rows).array() != x.cat(b, j - dc))
                       .cast<double>() *
                   kernel.inv_add_ls2[j];
      }
    }
    MaternInPlace(share, &d);
    *out += d;
  }
}

// Lower Cholesky factor of k + (noise + jitter) I, escalating the jitter (1e-9 ... 1e-2) when the
// matrix is numerically indefinite. False only if every attempt failed.
bool CholeskyWithJitter(const MatrixXd& k, double noise, Eigen::LLT<MatrixXd>* llt,
                        MatrixXd* work) {
  for (double jitter = 1e-9; jitter < 2e-2; jitter *= 10) {
    *work = k;
    work->diagonal().array() += noise + jitter;
    llt->compute(*work);
    if (llt->info() == Eigen::Success) return true;
  }
  return false;
}

// Everything the fit evaluates many times, over the n(n-1)/2 pairs a > b of the lower triangle
// (K is symmetric and the diagonal is constant): per-feature distances of every pair (independent
// of the hyperparameters, one column per feature so that d2 and the length-scale gradients are
// matrix-vector products) and reusable work space.
class NllEvaluator {
 public:
  NllEvaluator(const Inputs& x, const VectorXd& y) : y_(y), n_(x.rows()) {
    const int dc = x.num_cont(), dk = x.num_cat();
    p_ = dc + dk;
    const Eigen::Index pairs = n_ * (n_ - 1) / 2;
    diffs_.resize(pairs, p_);
    Eigen::Index idx = 0;
    for (Eigen::Index b = 0; b < n_; ++b) {
      for (Eigen::Index a = b + 1; a < n_; ++a, ++idx) {
        for (int j = 0; j < dc; ++j) {
          const double t = x.cont(a, j) - x.cont(b, j);
          diffs_(idx, j) = t * t;
        }
        for (int j = 0; j < dk; ++j) diffs_(idx, dc + j) = x.cat(a, j) != x.cat(b, j) ? 1.0 : 0.0;
      }
    }
    centre_ = HyperPriorCentre(p_);
  }

  // LBFGS++'s functor signature.
  double operator()(const VectorXd& theta, VectorXd& grad) { return Evaluate(theta, &grad); }

  double Evaluate(const VectorXd& theta, VectorXd* grad) {
    const Eigen::Index n = n_;
    const Kernel kernel = KernelOf(theta, p_);
    const double s2 = kernel.s2, w = kernel.w;
    const double noise = std::exp(theta[p_ + 1]);
    d2_.noalias() = diffs_ * kernel.inv_ls2;
    r_ = d2_.array().sqrt();
    e_ = (-kSqrt5 * r_).exp();
    joint_ = (1.0 + kSqrt5 * r_ + (5.0 / 3.0) * d2_.array()) * e_;  // unit variance
    // The additive component: per feature, its unit-variance Matérn and its derivative factor.
    add_.setZero(joint_.size());
    add_q_.resize(joint_.size(), p_);
    for (int j = 0; j < p_; ++j) {
      const Eigen::ArrayXd dj = diffs_.col(j).array() * kernel.inv_add_ls2[j];
      const Eigen::ArrayXd rj = dj.sqrt(), ej = (-kSqrt5 * rj).exp();
      add_ += (1.0 + kSqrt5 * rj + (5.0 / 3.0) * dj) * ej / p_;
      // dM/d ln(ls2) = (5/6)(1 + sqrt5 r) exp(-sqrt5 r) d2.
      add_q_.col(j) = ((5.0 / 6.0) * (1.0 + kSqrt5 * rj) * ej * dj).matrix();
    }
    kp_ = s2 * ((1 - w) * joint_ + w * add_);
    const VectorXd dev = theta - centre_;
    const double penalty = kPriorWeight * dev.squaredNorm();
    auto fail = [&] {
      if (grad != nullptr) *grad = 2 * kPriorWeight * dev;
      return 1e10 + penalty;
    };
    bool ok = false;
    for (double jitter = 1e-9; jitter < 2e-2 && !ok; jitter *= 10) {
      k_.resize(n, n);
      Eigen::Index idx = 0;
      for (Eigen::Index b = 0; b < n; ++b) {
        k_(b, b) = s2 + noise + jitter;
        for (Eigen::Index a = b + 1; a < n; ++a) k_(a, b) = kp_[idx++];
      }
      llt_.compute(k_);  // reads the lower triangle only
      ok = llt_.info() == Eigen::Success;
    }
    if (!ok) return fail();
    const MatrixXd& l = llt_.matrixLLT();
    alpha_ = llt_.solve(y_);
    double value = 0.5 * y_.dot(alpha_) + l.diagonal().array().log().sum() + 0.5 * n * kLog2Pi;
    if (!std::isfinite(value)) return fail();
    value += penalty;
    if (grad == nullptr) return value;

    // d(nll)/d(theta_i) = -0.5 sum(W .* dK/dtheta_i), W = alpha alpha^T - K^-1; K^-1 = L^-T L^-1
    // from the triangular inverse (n^3/3 flops in all; a general solve would take 2n^3).
    linv_.setZero(n, n);
    for (Eigen::Index j = 0; j < n; ++j) {
      linv_(j, j) = 1.0;
      for (Eigen::Index k = j; k < n; ++k) {
        const double xk = linv_(k, j) / l(k, k);
        linv_(k, j) = xk;
        if (k + 1 < n) linv_.col(j).segment(k + 1, n - k - 1) -= xk * l.col(k).tail(n - k - 1);
      }
    }
    wp_.resize(kp_.size());
    double trace_w = 0;
    Eigen::Index idx = 0;
    for (Eigen::Index b = 0; b < n; ++b) {
      const auto col_b = linv_.col(b).tail(n - b);
      trace_w += alpha_[b] * alpha_[b] - col_b.squaredNorm();
      for (Eigen::Index a = b + 1; a < n; ++a, ++idx) {
        // K^-1(a, b) = sum_{k >= a} Linv(k, a) Linv(k, b).
        const double kinv = linv_.col(a).tail(n - a).dot(linv_.col(b).tail(n - a));
        wp_[idx] = alpha_[a] * alpha_[b] - kinv;
      }
    }
    grad->resize(NumHyperparameters(p_));
    // Off-diagonal pairs count twice; the diagonal of dK/d ln s2 is s2, of dK/d ln ls2_j zero.
    (*grad)[0] = -0.5 * (2 * (wp_ * kp_).sum() + s2 * trace_w);
    // dK/d ln(ls2_j) = Q * D_j / ls2_j with Q = s2 (1 - w) (5/6)(1 + sqrt5 r) exp(-sqrt5 r):
    // no 1/r.
    wq_ = wp_ * (s2 * (1 - w) * (5.0 / 6.0)) * (1.0 + kSqrt5 * r_) * e_;
    grad->segment(1, p_).noalias() = -(diffs_.transpose() * wq_.matrix());
    grad->segment(1, p_).array() *= kernel.inv_ls2.array();
    (*grad)[p_ + 1] = -0.5 * trace_w * noise;
    // The diagonal does not depend on w or the additive length scales (it is s2).
    (*grad)[p_ + 2] = -s2 * (wp_ * (add_ - joint_)).sum();
    grad->segment(p_ + 3, p_).noalias() = -(s2 * w / p_) * (add_q_.transpose() * wp_.matrix());
    *grad += 2 * kPriorWeight * dev;
    return value;
  }

 private:
  VectorXd y_;
  Eigen::Index n_ = 0;
  int p_ = 0;
  MatrixXd diffs_;  // pairs x features
  VectorXd centre_, d2_, alpha_;
  Eigen::ArrayXd r_, e_, joint_, add_, kp_, wp_, wq_;
  MatrixXd add_q_;  // pairs x features
  MatrixXd k_, linv_;
  Eigen::LLT<MatrixXd, Eigen::Lower> llt_;
};

// Remembers the best point a solver visited: LBFGS++ throws when a line search fails, and its x
// is then wherever the search stopped.
template <typename F>
class BestTracker {
 public:
  explicit BestTracker(F* f) : f_(f) {}
  double operator()(const VectorXd& x, VectorXd& grad) {
    double v = (*f_)(x, grad);
    if (std::isfinite(v) && v < best_value_) {
      best_value_ = v;
      best_x_ = x;
    }
    return v;
  }
  double best_value() const { return best_value_; }
  const VectorXd& best_x() const { return best_x_; }

 private:
  F* f_;
  double best_value_ = std::numeric_limits<double>::infinity();
  VectorXd best_x_;
};

}  // namespace

Inputs Inputs::Concat(const Inputs& a, const Inputs& b) {
  Inputs out(a.rows() + b.rows(), a.num_cont(), a.num_cat());
  out.cont.topRows(a.rows()) = a.cont;
  out.cont.bottomRows(b.rows()) = b.cont;
  out.cat.topRows(a.rows()) = a.cat;
  out.cat.bottomRows(b.rows()) = b.cat;
  return out;
}

double NormalQuantile(double p) {
  if (!(p > 0)) return -std::numeric_limits<double>::infinity();
  if (!(p < 1)) return std::numeric_limits<double>::infinity();
  // Acklam's rational approximation (relative error 1.2e-9), then one Halley step on
  // Phi(x) - p, which brings it to full double precision.
  static constexpr double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,
                                 -2.759285104469687e+02, 1.383577518672690e+02,
                                 -3.066479806614716e+01, 2.506628277459239e+00};
  static constexpr double b[] = {-5.447609879822406e+01, 1.615858368580409e+02,
                                 -1.556989798598866e+02, 6.680131188771972e+01,
                                 -1.328068155288572e+01};
  static constexpr double c[] = {-7.784894002430293e-03, -3.223964580411365e-01,
                                 -2.400758277161838e+00, -2.549732539343734e+00,
                                 4.374664141464968e+00,  2.938163982698783e+00};
  static constexpr double d[] = {7.784695709041462e-03, 3.224671290700398e-01,
                                 2.445134137142996e+00, 3.754408661907416e+00};
  constexpr double kLow = 0.02425;
  double x;
  if (p < kLow || p > 1 - kLow) {
    double q = std::sqrt(-2 * std::log(p < kLow ? p : 1 - p));
    x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
    if (p > 1 - kLow) x = -x;
  } else {
    double q = p - 0.5, r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
  }
  double e = 0.5 * std::erfc(-x / std::sqrt(2.0)) - p;
  double u = e * std::sqrt(2 * M_PI) * std::exp(x * x / 2);
  return x - u / (1 + x * u / 2);
}

VectorXd WarpLabels(const std::vector<double>& labels) {
  const Eigen::Index n = static_cast<Eigen::Index>(labels.size());
  VectorXd y(n);
  std::vector<double> feasible;
  for (Eigen::Index i = 0; i < n; ++i) {
    double v = labels[i];
    y[i] = v;
    if (std::isfinite(v)) feasible.push_back(v);
  }
  if (n == 0) return y;
  if (feasible.empty()) return VectorXd::Zero(n);  // all -1, centred
  std::vector<double> uniq = feasible;
  std::sort(uniq.begin(), uniq.end());
  uniq.erase(std::unique(uniq.begin(), uniq.end()), uniq.end());
  if (uniq.size() == 1 && feasible.size() == labels.size()) return VectorXd::Zero(n);

  // Half-rank warp: labels below the median go onto Gaussian quantiles of their dense rank, with
  // the spread of the good half (Vizier's HalfRankComponent).
  if (feasible.size() > 1) {
    std::vector<double> sorted = feasible;
    std::sort(sorted.begin(), sorted.end());
    const size_t m = sorted.size();
    const double median = m % 2 == 1 ? sorted[m / 2] : 0.5 * (sorted[m / 2 - 1] + sorted[m / 2]);
    double sum = 0;
    size_t good = 0;
    for (double u : uniq) {
      if (u >= median) {
        sum += (u - median) * (u - median);
        ++good;
      }
    }
    double std_good = good > 0 ? std::sqrt(sum / static_cast<double>(good)) : 0;
    if (!(std_good > 0)) {
      double all = 0;
      for (double u : uniq) all += (u - median) * (u - median);
      std_good = std::sqrt(all / static_cast<double>(uniq.size()));
      if (!(std_good > 0)) std_good = 1;
    }
    const size_t idx =
        static_cast<size_t>(std::lower_bound(uniq.begin(), uniq.end(), median) - uniq.begin());
    const double denom =
        static_cast<double>(idx) + (uniq[std::min(idx, uniq.size() - 1)] == median ? 0.5 : 0.0);
    for (Eigen::Index i = 0; i < n; ++i) {
      if (!std::isfinite(y[i]) || !(y[i] < median)) continue;
      const double rank = static_cast<double>(std::lower_bound(uniq.begin(), uniq.end(), y[i]) -
                                              uniq.begin() + 1);  // dense, 1-based
      y[i] = NormalQuantile(0.5 * (rank - 0.5) / denom) * std_good + median;
    }
  }

  // Log warp onto [-0.5, 0.5], stretching the differences among the good values.
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (Eigen::Index i = 0; i < n; ++i) {
    if (std::isfinite(y[i])) {
      lo = std::min(lo, y[i]);
      hi = std::max(hi, y[i]);
    }
  }
  for (Eigen::Index i = 0; i < n; ++i) {
    if (!std::isfinite(y[i])) continue;
    y[i] = hi > lo ? 0.5 - std::log1p((hi - y[i]) / (hi - lo) * 0.5) / std::log(1.5) : 0.5;
  }
  // Infeasible warp: below every feasible value by half the range plus one.
  double wlo = std::numeric_limits<double>::infinity(), whi = -wlo;
  for (Eigen::Index i = 0; i < n; ++i) {
    if (std::isfinite(labels[i])) {
      wlo = std::min(wlo, y[i]);
      whi = std::max(whi, y[i]);
    }
  }
  for (Eigen::Index i = 0; i < n; ++i) {
    if (!std::isfinite(labels[i])) y[i] = wlo - (0.5 * (whi - wlo) + 1);
  }
  return (y.array() - y.mean()).matrix();
}

int NumHyperparameters(int num_features) { return 2 * num_features + 3; }

Kernel KernelOf(const VectorXd& theta, int p) {
  Kernel k;
  k.s2 = std::exp(theta[0]);
  k.inv_ls2 = (-theta.segment(1, p)).array().exp().matrix();
  k.w = theta[p + 2];
  k.inv_add_ls2 = (-theta.segment(p + 3, p)).array().exp().matrix();
  return k;
}

namespace {
// θ laid out as (ln σ_f², ln ℓ² for each of p features, ln σ_n², w, ln ℓ² of the additive
// component for each feature).
VectorXd LogHyperVector(int p, double signal, double length, double noise, double additive,
                        double add_length) {
  VectorXd v(NumHyperparameters(p));
  v[0] = std::log(signal);
  v.segment(1, p).setConstant(std::log(length));
  v[p + 1] = std::log(noise);
  v[p + 2] = additive;
  v.segment(p + 3, p).setConstant(std::log(add_length));
  return v;
}
}  // namespace

VectorXd HyperLowerBounds(int p) {
  return LogHyperVector(p, kSignalLo, kLengthLo, kNoiseLo, kAdditiveLo, kAddLengthLo);
}
VectorXd HyperUpperBounds(int p) {
  return LogHyperVector(p, kSignalHi, kLengthHi, kNoiseHi, kAdditiveHi, kLengthHi);
}
VectorXd HyperPriorCentre(int p) {
  return LogHyperVector(p, kSignalCentre, kLengthCentre, kNoiseCentre, kAdditiveCentre,
                        kLengthCentre);
}

double NegLogPosterior(const VectorXd& theta, const Inputs& x, const VectorXd& y, VectorXd* grad) {
  NllEvaluator f(x, y);
  return f.Evaluate(theta, grad);
}

VectorXd FitHyperparameters(const Inputs& x, const VectorXd& y, uint64_t seed,
                            const FitOptions& options) {
  const int p = x.num_cont() + x.num_cat();
  const VectorXd lo = HyperLowerBounds(p), hi = HyperUpperBounds(p);
  VectorXd best = HyperPriorCentre(p);
  if (x.rows() == 0) return best;

  NllEvaluator f(x, y);
  LBFGSpp::LBFGSBParam<double> param;
  param.max_iterations = options.max_iterations;
  param.epsilon = 1e-5;
  param.epsilon_rel = 0;
  param.past = 1;
  param.delta = 2.2e-9;  // scipy's default factr (1e7) times machine epsilon
  param.max_linesearch = 20;
  LBFGSpp::LBFGSBSolver<double> solver(param);

  std::mt19937_64 rng(seed);
  double best_value = std::numeric_limits<double>::infinity();
  for (int start = 0; start <= options.random_restarts; ++start) {
    VectorXd theta = HyperPriorCentre(p);
    if (start > 0) {
      for (int i = 0; i < theta.size(); ++i) {
        double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
        theta[i] = lo[i] + u * (hi[i] - lo[i]);
      }
    }
    BestTracker<NllEvaluator> tracked(&f);
    double fx = 0;
    try {
      solver.minimize(tracked, theta, fx, lo, hi);
    } catch (const std::exception&) {
      // A failed line search: keep the best point visited.
    }
    if (tracked.best_value() < best_value) {
      best_value = tracked.best_value();
      best = tracked.best_x();
    }
  }
  return best;
}

Posterior::Posterior(const Inputs& observed, const VectorXd& labels, const Inputs& pending,
                     const VectorXd& theta)
    : x_(Inputs::Concat(observed, pending)), n_obs_(static_cast<int>(observed.rows())) {
  const int p = x_.num_cont() + x_.num_cat();
  kernel_ = KernelOf(theta, p);
  noise_ = std::exp(theta[p + 1]);
  const Eigen::Index n = x_.rows();
  ArrayXXd k;
  KernelBlock(x_, 0, n, x_, kernel_, &k);
  Eigen::LLT<MatrixXd> llt;
  MatrixXd work;
  if (!CholeskyWithJitter(k.matrix(), noise_, &llt, &work)) {
    // Hopeless conditioning: treat every point as independent (large noise) rather than fail.
    work = k.matrix();
    work.diagonal().array() += noise_ + kernel_.s2;
    llt.compute(work);
  }
  chol_ = llt.matrixL();
  alpha_ = labels;
  if (n_obs_ > 0) {
    auto l_obs = chol_.topLeftCorner(n_obs_, n_obs_).triangularView<Eigen::Lower>();
    l_obs.solveInPlace(alpha_);
    l_obs.transpose().solveInPlace(alpha_);
  }
}

void Posterior::Predict(const Inputs& z, VectorXd* mean, VectorXd* std_obs,
                        VectorXd* std_all) const {
  const Eigen::Index m = z.rows(), n = x_.rows();
  if (mean != nullptr) mean->resize(m);
  if (std_obs != nullptr) std_obs->resize(m);
  if (std_all != nullptr) std_all->resize(m);
  ArrayXXd k;
  MatrixXd v;
  const auto l = chol_.triangularView<Eigen::Lower>();
  for (Eigen::Index begin = 0; begin < m; begin += kPredictBlock) {
    const Eigen::Index rows = std::min(kPredictBlock, m - begin);
    KernelBlock(z, begin, rows, x_, kernel_, &k);
    if (mean != nullptr) {
      mean->segment(begin, rows).noalias() = k.matrix().leftCols(n_obs_) * alpha_;
    }
    if (std_obs == nullptr && std_all == nullptr) continue;
    v = k.matrix().transpose();
    if (n > 0) l.solveInPlace(v);
    if (std_all != nullptr) {
      std_all->segment(begin, rows) = (kernel_.s2 - v.colwise().squaredNorm().array())
                                          .max(kMinVariance)
                                          .sqrt()
                                          .matrix()
                                          .transpose();
    }
    if (std_obs != nullptr) {
      std_obs->segment(begin, rows) =
          (kernel_.s2 - v.topRows(n_obs_).colwise().squaredNorm().array())
              .max(kMinVariance)
              .sqrt()
              .matrix()
              .transpose();
    }
  }
}

void Posterior::PredictOne(const double* cont, const int* cat, Single* out) const {
  const Eigen::Index n = x_.rows();
  const int dc = x_.num_cont(), dk = x_.num_cat();
  VectorXd k(n);
  MatrixXd dk_dz(n, dc);  // d k(z, x_b) / d z_j
  const VectorXd& inv_ls2 = kernel_.inv_ls2;
  const VectorXd& inv_add = kernel_.inv_add_ls2;
  const double joint_s2 = kernel_.s2 * (1 - kernel_.w), share = kernel_.s2 * kernel_.w / (dc + dk);
  // M(d2) and dM/dz_j = -(5/3)(1 + sqrt5 r) exp(-sqrt5 r) (z_j - x_j) / ls2_j.
  for (Eigen::Index b = 0; b < n; ++b) {
    double d2 = 0;
    for (int j = 0; j < dc; ++j) {
      double t = cont[j] - x_.cont(b, j);
      d2 += t * t * inv_ls2[j];
    }
    for (int j = 0; j < dk; ++j) d2 += cat[j] != x_.cat(b, j) ? inv_ls2[dc + j] : 0.0;
    const double r = std::sqrt(d2), e = std::exp(-kSqrt5 * r);
    k[b] = joint_s2 * (1 + kSqrt5 * r + (5.0 / 3.0) * d2) * e;
    const double g = -(5.0 / 3.0) * joint_s2 * (1 + kSqrt5 * r) * e;
    for (int j = 0; j < dc; ++j) dk_dz(b, j) = g * (cont[j] - x_.cont(b, j)) * inv_ls2[j];
    if (share == 0) continue;
    for (int j = 0; j < dc; ++j) {
      const double t = cont[j] - x_.cont(b, j), dj = t * t * inv_add[j];
      const double rj = std::sqrt(dj), ej = std::exp(-kSqrt5 * rj);
      k[b] += share * (1 + kSqrt5 * rj + (5.0 / 3.0) * dj) * ej;
      dk_dz(b, j) += -(5.0 / 3.0) * share * (1 + kSqrt5 * rj) * ej * t * inv_add[j];
    }
    for (int j = 0; j < dk; ++j) {
      const double dj = cat[j] != x_.cat(b, j) ? inv_add[dc + j] : 0.0;
      const double rj = std::sqrt(dj);
      k[b] += share * (1 + kSqrt5 * rj + (5.0 / 3.0) * dj) * std::exp(-kSqrt5 * rj);
    }
  }
  out->mean = k.head(n_obs_).dot(alpha_);
  out->dmean = dk_dz.topRows(n_obs_).transpose() * alpha_;

  const auto l = chol_.triangularView<Eigen::Lower>();
  VectorXd v = k;
  l.solveInPlace(v);
  VectorXd w = v;
  l.transpose().solveInPlace(w);
  auto finish = [&](double var, const VectorXd& dvar, double* std, VectorXd* dstd) {
    if (var > kMinVariance) {
      *std = std::sqrt(var);
      *dstd = dvar / (2 * *std);
    } else {
      *std = std::sqrt(kMinVariance);
      dstd->setZero(dc);
    }
  };
  finish(kernel_.s2 - v.squaredNorm(), -2 * (dk_dz.transpose() * w), &out->std_all, &out->dstd_all);
  if (n_obs_ == n) {
    out->std_obs = out->std_all;
    out->dstd_obs = out->dstd_all;
    return;
  }
  VectorXd v_obs = v.head(n_obs_);
  VectorXd w_obs = v_obs;
  chol_.topLeftCorner(n_obs_, n_obs_)
      .triangularView<Eigen::Lower>()
      .transpose()
      .solveInPlace(w_obs);
  finish(kernel_.s2 - v_obs.squaredNorm(), -2 * (dk_dz.topRows(n_obs_).transpose() * w_obs),
         &out->std_obs, &out->dstd_obs);
}

}  // namespace trainyard::tuning::gp

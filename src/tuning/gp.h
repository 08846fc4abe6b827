// The Gaussian-process model behind GP-UCB-PE (tuning.md §1.2, §5.3): Vizier's output warping, a
// Matérn-5/2 ARD kernel with one length scale per continuous coordinate and per categorical
// parameter (categorical distance 1[a != b]), MAP hyperparameters under Vizier's log-space
// priors, and a posterior that predicts many points at once and can condition its variance on
// pending points (which have no labels yet). Internal to src/tuning: Eigen stays out of the
// public headers.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <memory>
#include <vector>

#include "designer.h"

namespace trainyard::tuning {
namespace gp {

using MatrixXi = Eigen::Matrix<int, Eigen::Dynamic, Eigen::Dynamic>;

// Points in the designer's coordinates, one per row: continuous coordinates in [0, 1] (one column
// per Space continuous coordinate) and category indices (one column per categorical parameter).
struct Inputs {
  Eigen::MatrixXd cont;
  MatrixXi cat;

  Inputs() = default;
  Inputs(Eigen::Index rows, int num_cont, int num_cat) : cont(rows, num_cont), cat(rows, num_cat) {}
  Eigen::Index rows() const { return cont.rows(); }
  int num_cont() const { return static_cast<int>(cont.cols()); }
  int num_cat() const { return static_cast<int>(cat.cols()); }
  // Rows of `a` then rows of `b` (same column counts).
  static Inputs Concat(const Inputs& a, const Inputs& b);
};

// Vizier's default output warping for maximisation labels: half-rank warp of the worse half onto
// Gaussian quantiles, log warp onto [-0.5, 0.5] (best = 0.5), then infeasible labels (NaN or
// infinite) get a value below every feasible one; the result is centred. All-equal feasible labels
// warp to zeros and all-infeasible ones to -1 before centring (so also zeros).
Eigen::VectorXd WarpLabels(const std::vector<double>& labels);

// The standard normal quantile function (for the half-rank warp; exposed for tests).
double NormalQuantile(double p);

// Hyperparameters: theta = (ln signal variance, ln length scale² of every feature — continuous
// coordinates first, then categorical parameters —, ln noise variance, w, ln length scale² of every
// feature in the additive component). The kernel is s2 ((1 - w) M(x, x') + w / p sum_j M_j(x_j,
// x'_j)): a Matérn-5/2 ARD kernel on all features jointly, plus an additive one, a Matérn-5/2 per
// feature with its own length scale (Duvenaud et al. 2011, Kandasamy et al. 2015). Many objectives
// are close to a sum of one-parameter effects — Rastrigin and Levy exactly, training surfaces
// roughly —, which TPE's independent per-parameter densities exploit and a joint kernel alone
// learns slowly; w, fitted with the rest (MAP), weighs the two (docs/benchmarks.md, "Session 13").
int NumHyperparameters(int num_features);
Eigen::VectorXd HyperLowerBounds(int num_features);
Eigen::VectorXd HyperUpperBounds(int num_features);
Eigen::VectorXd HyperPriorCentre(int num_features);

// Negative log marginal likelihood plus Vizier's quadratic log-space penalties, and its analytic
// gradient (when `grad` is not null). Labels should be warped (zero mean).
double NegLogPosterior(const Eigen::VectorXd& theta, const Inputs& x, const Eigen::VectorXd& y,
                       Eigen::VectorXd* grad);

struct FitOptions {
  int random_restarts = 3;  // log-uniform starts inside the bounds, besides the prior centre
  int max_iterations = 100;
};

// MAP hyperparameters: L-BFGS-B from the prior centre and the seeded random starts, best kept.
// Deterministic given `seed`. With no data, the prior centre.
Eigen::VectorXd FitHyperparameters(const Inputs& x, const Eigen::VectorXd& y, uint64_t seed,
                                   const FitOptions& options = {});

// The kernel's parameters read from theta (p features).
struct Kernel {
  double s2 = 1, w = 0;
  Eigen::VectorXd inv_ls2, inv_add_ls2;  // 1 / length scale², joint and additive
};
Kernel KernelOf(const Eigen::VectorXd& theta, int p);

// The posterior given observed points with labels and pending points without: the mean uses the
// observed points only, "all" variances are conditioned on observed and pending points (the
// variance needs no labels), "observed" variances on the observed ones only. Standard deviations
// are of the latent function (no observation noise).
class Posterior {
 public:
  Posterior(const Inputs& observed, const Eigen::VectorXd& labels, const Inputs& pending,
            const Eigen::VectorXd& theta);

  int num_observed() const { return n_obs_; }
  int num_points() const { return static_cast<int>(x_.rows()); }
  double signal_variance() const { return kernel_.s2; }
  double noise_variance() const { return noise_; }

  // For every row of z; null outputs are skipped.
  void Predict(const Inputs& z, Eigen::VectorXd* mean, Eigen::VectorXd* std_obs,
               Eigen::VectorXd* std_all) const;

  // One point, with gradients with respect to its continuous coordinates.
  struct Single {
    double mean = 0, std_obs = 0, std_all = 0;
    Eigen::VectorXd dmean, dstd_obs, dstd_all;
  };
  void PredictOne(const double* cont, const int* cat, Single* out) const;

 private:
  Inputs x_;  // observed rows, then pending rows
  int n_obs_ = 0;
  double noise_ = 0;
  Kernel kernel_;
  Eigen::MatrixXd chol_;   // lower Cholesky factor of K(x, x) + (noise + jitter) I
  Eigen::VectorXd alpha_;  // K_obs^-1 labels
};

// Knobs of the GP-UCB-PE designer (defaults = the production setting; tests shrink them).
struct GpUcbPeOptions {
  double ucb_coefficient = 1.5;  // Vizier: 1.8 (see the comment in gp_ucb_pe.cc)
  // PE's "promising region": mean + coefficient * std >= tau. Vizier's 0.5 when nothing is
  // pending; 0 for the further members of a batch (see the comment in gp_ucb_pe.cc).
  double explore_ucb_coefficient = 0.5;
  double batch_explore_ucb_coefficient = 0.0;
  double pe_penalty = 10.0;
  double ucb_overwrite_probability = 0.25;  // UCB although no trial completed since the batch began
  double pe_overwrite_probability = 0.1;    // PE although a trial completed
  double pe_overwrite_probability_noisy = 0.7;  // ... when signal/noise variance < 0.7
  int uniform_candidates = 1500;
  int local_candidates = 1500;  // Gaussian perturbations of the best trials
  double local_sigma = 0.05;
  int local_parents = 5;
  double category_resample_probability = 0.2;
  int refine_count = 5;  // best candidates refined by L-BFGS-B
  int refine_iterations = 30;
  int64_t enumerate_limit = 4096;  // finite spaces up to this size are scored exhaustively
  bool trust_region = true;  // off only for experiments (it helps: Hartmann-6 28 % vs 60 % solved)
  FitOptions fit;
};

}  // namespace gp

// MakeGpUcbPeDesigner (designer.h) with non-default knobs.
std::unique_ptr<Designer> MakeGpUcbPeDesigner(const StudyConfig& config, const Space& space,
                                              const gp::GpUcbPeOptions& options);

}  // namespace trainyard::tuning

"""The objectives of the tuning benchmark (bench/bench_tuning.py; tuning.md §4.1 and §6.1).

Every objective is minimised in its native form and knows its optimal value f*, so simple regret
f(x) - f* can be computed exactly; regret() refuses (AssertionError) a value below f*, which would
mean a wrong f* or a point outside the box. Search spaces are AI Platform ParameterSpec dicts.

  branin2        Branin on [-5, 10] x [0, 15]                 f* = 5/(4 pi)
  camel2         six-hump camel on [-3, 3] x [-2, 2]           f* = -1.031628453489877
  hartmann3      Hartmann-3 on [0, 1]^3                        f* = -3.862779787332663
  hartmann6_max  Hartmann-6 on [0, 1]^6, posed as MAXIMIZE: the tuner sees -f, regret is on f
  rosenbrock4    Rosenbrock on [-5, 10]^4                      f* = 0
  ackley5_shift  Ackley (20, 0.2, 2 pi) on [-32.768, 32.768]^5, optimum moved per seed
  levy4_shift    Levy on [-10, 10]^4, optimum moved per seed
  styblinski4    Styblinski-Tang on [-5, 5]^4                  f* = -39.16616570377142 * 4
  hpo_mixed5     a synthetic training-loss surface over five mixed parameters (below)

Held out (never used while tuning the engine; bench_tuning.py's batch_wide and es_wide parts):

  shekel4        Shekel (m = 10) on [0, 10]^4                  f* = -10.536409816692046
  dixonprice4    Dixon-Price on [-10, 10]^4                    f* = 0
  hpo_mixed6b    a second training surface, six mixed parameters (below)

Final held-out set (added with issue 16's engine changes and run once, after them; never looked at
while changing the engine; bench_tuning.py's batch_final and es_final parts, seeds 200-219):

  powell4        Powell on [-4, 5]^4                           f* = 0
  colville4      Colville on [-10, 10]^4                       f* = 0
  hpo_xgb7       a boosted-trees surface, seven mixed parameters, two categoricals (below)
  hpo_cnn5       a network surface, five parameters: a five-valued categorical, two log-scaled
                 DISCRETE lists (one of them linear), an INTEGER (below)

Third held-out set (session 9: defined before the engine changes for mixed spaces in batches and
run once after them; bench_tuning.py's batch_third and es_third parts, seeds 300-339):

  hpo_lgbm9      a gradient-boosting surface, nine parameters, three categoricals (one binary),
                 a near-tie between two boosting types (below)
  hpo_bert6      a fine-tuning surface, six parameters: two categoricals (a four-valued scheduler),
                 an uneven linear DISCRETE warm-up ratio, a log DISCRETE batch size (below)
  hpo_aug6       an image-classification surface: an eight-valued categorical whose value moves
                 the best epochs and label smoothing, a four-valued categorical that barely
                 matters, a reverse-log DISCRETE momentum (below)

Fourth held-out set (session 10: defined and committed before the engine changes for early stopping
and mixed spaces in batches, run once after them; bench_tuning.py's batch_fourth and es_fourth
parts, seeds 400-439):

  goldstein2        Goldstein-Price on [-2, 2]^2                 f* = 3
  rastrigin3_shift  Rastrigin (A = 10) on [-5.12, 5.12]^3, optimum moved per seed
  hpo_rnn7          a recurrent-network surface, seven parameters: a three-valued cell type with a
                    near-tie, a four-valued optimizer, an uneven linear DISCRETE gradient clip
                    that matters most for the vanilla cell, a log DISCRETE hidden size whose best
                    value moves with the depth (below)
  hpo_vit8          a vision-transformer surface, eight parameters: the model size (four values)
                    moves the best learning rate, drop path and mixup; an uneven linear DISCRETE
                    mixup alpha, a log DISCRETE patch size (below)
  hpo_dqn6          a reinforcement-learning surface, six parameters: a reverse-log DISCRETE
                    discount, an uneven linear DISCRETE target-update period whose weight depends
                    on a binary categorical, a three-valued exploration categorical (below)

Fifth held-out set (session 11: defined and committed before any engine change it judges, run once
after one; bench_tuning.py's batch_fifth and es_fifth parts, seeds 500-579):

  griewank4_shift   Griewank on [-20, 20]^4, optimum moved per seed: a smooth bowl with many small
                    regular ripples
  hpo_gnn6          a graph-network surface, six parameters: a four-valued aggregator that moves
                    the best learning rate and sets how much depth beyond 3 layers costs
                    (over-smoothing), a log INTEGER width that moves the best dropout, an uneven
                    linear DISCRETE weight decay with a zero (below)

Sixth held-out set (session 13: defined and committed before any engine change it judges, run once
after one; bench_tuning.py's batch_sixth and es_sixth parts, seeds 600-679):

  alpine4_shift     Alpine No. 1 (sum |x sin x + 0.1 x|) on [-10, 10]^4, moved per seed: a
                    non-smooth, many-valleyed surface whose minima are all 0
  salomon3_shift    Salomon (1 - cos(2 pi |x|) + 0.1 |x|) on [-10, 10]^3, moved per seed:
                    ring-shaped ripples around the optimum (multimodal, not aligned with the axes)
  trid4             Trid on [-16, 16]^4                        f* = -16 (a smooth, tilted bowl)
  hpo_asr7          a speech-recognition surface, seven parameters: a four-valued optimizer and an
                    uneven DISCRETE warm-up (0 to 25,000 steps) that move the best learning rate,
                    a three-valued augmentation whose best value depends on the depth, a log
                    INTEGER batch size (below)

Seventh held-out set (session 14: defined and committed before any engine change it judges, run
once after one; bench_tuning.py's batch_seventh and es_seventh parts, seeds 700-779):

  zakharov4_shift   Zakharov (sum x_i^2 + s^2 + s^4, s = sum 0.5 i x_i) on [-5, 10]^4, moved per
                    seed: a smooth valley made narrow and ill-conditioned by the quartic term
  shubert2          Shubert (prod_d sum_{i=1..5} i cos((i + 1) x_d + i)) on [-10, 10]^2
                    f* = -186.7309088310239: 18 global minima among hundreds of local ones
  qing3             Qing (sum (x_i^2 - i)^2) on [-3, 3]^3      f* = 0 at the eight points
                    (+-1, +-sqrt 2, +-sqrt 3): separated global minima, none at the centre
  hpo_det8          an object-detection surface, eight parameters: the optimizer, a four-valued
                    backbone, the batch and the warm-up move the best learning rate, the best
                    weight decay depends on the optimizer, the mosaic strength matters most for
                    the deep backbones, a linear DISCRETE anchor scale (below)

Eighth held-out set (session 16: defined and committed before any engine change it judges, run
once after one; bench_tuning.py's batch_eighth and es_eighth parts, seeds 800-879):

  michalewicz5      Michalewicz (m = 10: -sum sin(x_i) sin(i x_i^2 / pi)^20) on [0, pi]^5
                    f* = -4.687658179088148: flat plateaus cut by steep, narrow valleys
  schwefel3         Schwefel (418.9829 d - sum x_i sin(sqrt |x_i|)) on [-500, 500]^3
                    f* = 3 (418.9829 - 418.98288727243374) = 3.8e-5 at x_i = 420.9687463591536,
                    near a corner: deceptive, the second-best minima lie far from the best. Not
                    moved per seed (its optimum is not central, and outside the box the function
                    goes below f*)
  griewrosen4_shift CEC 2005's expanded Griewank plus Rosenbrock (F8F2: sum of F8(F2(x_i,
                    x_i+1)) over the pairs, the last one (x_4, x_1)) on [-5, 5]^4, moved per seed:
                    Rosenbrock's curved valley (not separable) ringed by Griewank's ripples; f* = 0
  hpo_tft8          a time-series forecasting transformer surface, eight parameters: the width,
                    the normalizer, the loss and a reverse-log EMA decay move the best learning
                    rate; a log DISCRETE head count whose best value grows with the width; the
                    best look-back window depends on the normalizer (below)

Shifted functions: the optimum of Ackley (natively the centre of the box, which a designer that
starts at the centre would hit with its first trial) and Levy (natively (1, ..., 1), near the
centre) is moved to a point drawn per seed inside the central 80 % of the box. The draw depends
only on the seed and the function, so every algorithm optimises the same instances.

hpo_mixed5 (every parameter type and scale of AI Platform's ParameterSpec):

  learning_rate  DOUBLE 1e-5..1, UNIT_LOG_SCALE
  momentum       DOUBLE 0.5..0.9999, UNIT_REVERSE_LOG_SCALE
  num_layers     INTEGER 1..8
  batch_size     DISCRETE 16, 32, 64, 128, 256, UNIT_LOG_SCALE
  optimizer      CATEGORICAL sgd, adam, rmsprop

With a = log10(learning_rate), b = log2(batch_size / 64), c = log10(1 - momentum) + 1 (0 at
momentum 0.9):

  f = 0.6 * (1 - exp(-((a - a*) / 0.6)^2 / 2))     learning rate: a Gaussian well that saturates
    + 0.04 * c^2                                   momentum
    + 0.02 * (num_layers - 5)^2                    depth
    + 0.03 * b^2                                   batch size
    + {adam: 0, rmsprop: 0.03, sgd: 0.06}[optimizer]

  a* = {adam: -3, rmsprop: -3.4, sgd: -1.5}[optimizer] + 0.5 * log10(batch_size / 64)
       (+ c for sgd: plain SGD's effective step is learning_rate / (1 - momentum))

so the best learning rate depends on the optimizer (SGD wants ~30x Adam's), grows as the square
root of the batch size, and for SGD shrinks as momentum grows. Every term is >= 0 and all are 0
exactly at adam, learning_rate 1e-3, momentum 0.9, 5 layers, batch 64: f* = 0 there and nowhere
else. Far from a* the learning-rate term saturates at 0.6 (a diverged or frozen run), which is what
makes the surface hard for a model that assumes a bowl. The weights were set so random search's
medians (about 10^-0.7 at 10 trials, 10^-1.05 at 50) are close to tuning.md §6.4's.

hpo_mixed6b (a different shape: the best learning rate moves with the width and the activation,
dropout wants to grow with the width, a discrete warm-up with a linear scale):

  learning_rate  DOUBLE 1e-4..1, UNIT_LOG_SCALE
  weight_decay   DOUBLE 1e-6..0.1, UNIT_LOG_SCALE
  dropout        DOUBLE 0..0.7, UNIT_LINEAR_SCALE
  hidden_units   INTEGER 16..1024, UNIT_LOG_SCALE
  activation     CATEGORICAL relu, gelu, tanh
  warmup_steps   DISCRETE 0, 100, 500, 1000, 5000

With a = log10(learning_rate), u = log2(hidden_units / 256):

  a* = -2.5 - 0.3 u + {relu: 0, gelu: -0.2, tanh: 0.5}[activation]
  f = 0.5 (1 - exp(-((a - a*) / 0.5)^2 / 2)) + 0.05 ((log10(weight_decay) + 4) / 1.5)^2
    + (dropout - (0.2 + 0.1 u))^2 / 0.9 + 0.02 u^2 + {relu: 0.02, gelu: 0, tanh: 0.05}[activation]
    + 0.03 (log10(warmup_steps + 10) - log10(510))^2

f* = 0 at gelu, learning rate 10^-2.7, weight decay 1e-4, dropout 0.2, 256 units, warm-up 500.

hpo_xgb7 (final held-out set; the best step size falls as the number of trees grows, the best
depth depends on the growth policy, a second basin at lossguide):

  eta               DOUBLE 1e-3..0.5, UNIT_LOG_SCALE
  max_depth         INTEGER 2..12, UNIT_LINEAR_SCALE
  n_estimators      INTEGER 50..2000, UNIT_LOG_SCALE
  subsample         DOUBLE 0.4..1, UNIT_LINEAR_SCALE
  min_child_weight  DOUBLE 0.1..100, UNIT_LOG_SCALE
  booster           CATEGORICAL gbtree, dart, gblinear
  grow_policy       CATEGORICAL depthwise, lossguide

With a = log10(eta), m = log10(n_estimators / 400):

  a* = -1.3 - m + {gbtree: 0, dart: 0.2, gblinear: 0.5}[booster]
  f = 0.5 (1 - exp(-((a - a*) / 0.45)^2 / 2)) + 0.012 (max_depth - {depthwise: 6, lossguide: 9})^2
    + 0.05 m^2 + 0.3 (subsample - 0.8)^2 + 0.04 log10(min_child_weight)^2
    + {gbtree: 0, dart: 0.01, gblinear: 0.12}[booster] + {depthwise: 0, lossguide: 0.015}[policy]

f* = 0 at gbtree, depthwise, eta 10^-1.3, 400 trees, depth 6, subsample 0.8, min_child_weight 1.

hpo_cnn5 (final held-out set; the best learning rate depends on the optimizer and grows with the
batch size):

  learning_rate    DOUBLE 1e-5..0.1, UNIT_LOG_SCALE
  batch_size       DISCRETE 8, 16, ..., 1024 (eight powers of 2), UNIT_LOG_SCALE
  num_layers       INTEGER 1..12, UNIT_LINEAR_SCALE
  optimizer        CATEGORICAL sgd, momentum, adam, adamw, rmsprop
  label_smoothing  DISCRETE 0, 0.05, 0.1, 0.2, UNIT_LINEAR_SCALE

With a = log10(learning_rate), b = log2(batch_size / 128):

  a* = {sgd: -1.2, momentum: -2, adam: -3.2, adamw: -3, rmsprop: -3.5}[optimizer] + 0.7 b log10(2)
  f = 0.55 (1 - exp(-((a - a*) / 0.5)^2 / 2)) + 0.015 (num_layers - 7)^2 + 0.015 b^2
    + {sgd: 0.08, momentum: 0.03, adam: 0.01, adamw: 0, rmsprop: 0.04}[optimizer]
    + 2 (label_smoothing - 0.1)^2

f* = 0 at adamw, learning rate 1e-3, batch 128, 7 layers, label smoothing 0.1.

hpo_lgbm9 (third held-out set; the best learning rate falls as the trees grow leaves, extra trees
want twice the leaves, goss wants more features):

  learning_rate     DOUBLE 1e-3..0.3, UNIT_LOG_SCALE
  num_leaves        INTEGER 8..512, UNIT_LOG_SCALE
  min_data_in_leaf  INTEGER 1..200, UNIT_LOG_SCALE
  feature_fraction  DOUBLE 0.3..1, UNIT_LINEAR_SCALE
  lambda_l2         DOUBLE 1e-8..10, UNIT_LOG_SCALE
  max_bin           DISCRETE 63, 127, 255, 511, 1023, UNIT_LOG_SCALE
  boosting          CATEGORICAL gbdt, dart, goss
  objective         CATEGORICAL l2, huber, fair
  extra_trees       CATEGORICAL false, true

With a = log10(learning_rate), L = log2(num_leaves / 64), L* = {false: 0, true: 1}[extra_trees]:

  a* = -1.2 - 0.25 L + {gbdt: -0.3, dart: 0, goss: -0.4}[boosting]
  f = 0.45 (1 - exp(-((a - a*) / 0.45)^2 / 2)) + 0.012 (L - L*)^2
    + 0.03 log10(min_data_in_leaf / 20)^2 + 0.25 (feature_fraction - {goss: 0.9, else 0.7})^2
    + 0.004 (log10(lambda_l2) + 1)^2 + 0.005 log2((max_bin + 1) / 256)^2
    + {gbdt: 0.005, dart: 0, goss: 0.02}[boosting] + {l2: 0.03, huber: 0, fair: 0.01}[objective]
    + {false: 0, true: 0.008}[extra_trees]

f* = 0 at dart, huber, no extra trees, learning rate 10^-1.2, 64 leaves, 20 per leaf, feature
fraction 0.7, lambda_l2 0.1, 255 bins.

hpo_bert6 (third held-out set; the best learning rate depends on the optimizer and the scheduler
and grows with the batch size):

  learning_rate  DOUBLE 1e-6..1e-3, UNIT_LOG_SCALE
  batch_size     DISCRETE 8, 16, 32, 64, UNIT_LOG_SCALE
  warmup_ratio   DISCRETE 0, 0.01, 0.03, 0.06, 0.1, 0.2, UNIT_LINEAR_SCALE
  weight_decay   DOUBLE 0..0.3, UNIT_LINEAR_SCALE
  scheduler      CATEGORICAL linear, cosine, constant, polynomial
  optimizer      CATEGORICAL adamw, adafactor, sgd

With a = log10(learning_rate), b = log2(batch_size / 32):

  a* = -4.5 + 0.5 b log10(2) + {adamw: 0, adafactor: 0.4, sgd: 1.6}[optimizer]
       + {constant: -0.3, else 0}[scheduler]
  f = 0.5 (1 - exp(-((a - a*) / 0.4)^2 / 2)) + 0.01 b^2
    + 0.05 (log10(warmup_ratio + 0.01) - log10(0.07))^2 + 0.3 (weight_decay - 0.05)^2
    + {linear: 0, cosine: 0.004, constant: 0.03, polynomial: 0.012}[scheduler]
    + {adamw: 0, adafactor: 0.02, sgd: 0.06}[optimizer]

f* = 0 at adamw, linear, learning rate 10^-4.5, batch 32, warm-up 0.06, weight decay 0.05 (SGD's
best learning rate lies outside the box).

hpo_aug6 (third held-out set; the augmentation decides how many epochs pay and whether label
smoothing helps; the initialisation barely matters):

  learning_rate    DOUBLE 1e-4..1, UNIT_LOG_SCALE
  momentum         DISCRETE 0.8, 0.9, 0.95, 0.99, UNIT_REVERSE_LOG_SCALE
  epochs           INTEGER 10..200, UNIT_LOG_SCALE
  label_smoothing  DOUBLE 0..0.3, UNIT_LINEAR_SCALE
  augment          CATEGORICAL none, flip, crop, flipcrop, autoaugment, randaugment, mixup, cutmix
  init             CATEGORICAL he, xavier, orthogonal, lecun

With a = log10(learning_rate), c = log10(1 - momentum) + 1 (0 at momentum 0.9):

  a* = -1.3 + c
  E* = {none: 30, flip: 40, crop: 50, flipcrop: 60, autoaugment: 120, randaugment: 100,
        mixup: 150, cutmix: 120}[augment];  ls* = {mixup: 0, cutmix: 0, else 0.1}[augment]
  f = 0.5 (1 - exp(-((a - a*) / 0.5)^2 / 2)) + 0.03 c^2 + 0.03 log2(epochs / E*)^2
    + 0.6 (label_smoothing - ls*)^2
    + {none: 0.08, flip: 0.05, crop: 0.045, flipcrop: 0.025, autoaugment: 0.008, randaugment: 0,
       mixup: 0.012, cutmix: 0.004}[augment] + {he: 0, xavier: 0.003, orthogonal: 0.001,
       lecun: 0.004}[init]

f* = 0 at randaugment, he, momentum 0.9, learning rate 10^-1.3, 100 epochs, label smoothing 0.1.

hpo_rnn7 (fourth held-out set; the best learning rate depends on the optimizer and the cell and
falls as the hidden size grows, the best hidden size grows with the depth, the vanilla cell needs
gradient clipping):

  learning_rate  DOUBLE 1e-4..0.1, UNIT_LOG_SCALE
  hidden_size    DISCRETE 64, 128, 256, 512, 1024, UNIT_LOG_SCALE
  num_layers     INTEGER 1..4, UNIT_LINEAR_SCALE
  dropout        DOUBLE 0..0.6, UNIT_LINEAR_SCALE
  grad_clip      DISCRETE 0, 0.25, 1, 5, UNIT_LINEAR_SCALE
  cell           CATEGORICAL lstm, gru, vanilla
  optimizer      CATEGORICAL adam, sgd, rmsprop, adagrad

With a = log10(learning_rate), h = log2(hidden_size / 256), L = num_layers:

  a* = -2.8 - 0.2 h + {adam: 0, sgd: 1.3, rmsprop: -0.3, adagrad: 0.8}[optimizer]
       + {lstm: 0, gru: 0.1, vanilla: -0.5}[cell]
  f = 0.5 (1 - exp(-((a - a*) / 0.5)^2 / 2)) + 0.02 (h - 0.5 (L - 2))^2 + 0.015 (L - 2)^2
    + 0.4 (dropout - 0.1 - 0.1 L)^2 + k 0.02 (log10(grad_clip + 0.05) - log10(1.05))^2
    + {lstm: 0, gru: 0.005, vanilla: 0.07}[cell] + {adam: 0, sgd: 0.05, rmsprop: 0.015,
       adagrad: 0.04}[optimizer],   k = 4 for vanilla, else 1

f* = 0 at lstm, adam, learning rate 10^-2.8, 256 units, 2 layers, dropout 0.3, clip 1.

hpo_vit8 (fourth held-out set; a larger model wants a lower learning rate, more drop path and more
mixup):

  learning_rate  DOUBLE 1e-5..1e-2, UNIT_LOG_SCALE
  weight_decay   DOUBLE 1e-4..1, UNIT_LOG_SCALE
  drop_path      DOUBLE 0..0.5, UNIT_LINEAR_SCALE
  warmup_epochs  INTEGER 0..30, UNIT_LINEAR_SCALE
  patch_size     DISCRETE 4, 8, 16, 32, UNIT_LOG_SCALE
  mixup_alpha    DISCRETE 0, 0.1, 0.2, 0.4, 0.8, 1.0, UNIT_LINEAR_SCALE
  model_size     CATEGORICAL tiny, small, base, large
  optimizer      CATEGORICAL adamw, lamb, sgd

With a = log10(learning_rate), S = {tiny: -0.2, small: 0, base: 0.2, large: 0.4}[model_size]:

  a* = -3.3 - S + {adamw: 0, lamb: 0.5, sgd: 1.3}[optimizer]
  f = 0.5 (1 - exp(-((a - a*) / 0.45)^2 / 2)) + 0.04 (log10(weight_decay) + 1.3)^2
    + 0.5 (drop_path - {tiny: 0, small: 0.1, base: 0.2, large: 0.35}[model_size])^2
    + 0.0002 (warmup_epochs - 10)^2 + 0.02 log2(patch_size / 16)^2
    + 0.15 (mixup_alpha - {tiny: 0, small: 0.1, base: 0.2, large: 0.4}[model_size])^2
    + {tiny: 0.09, small: 0.03, base: 0, large: 0.012}[model_size]
    + {adamw: 0, lamb: 0.01, sgd: 0.05}[optimizer]

f* = 0 at base, adamw, learning rate 10^-3.5, weight decay 10^-1.3, drop path 0.2, 10 warm-up
epochs, patch 16, mixup 0.2.

hpo_dqn6 (fourth held-out set; the best learning rate falls as the discount approaches 1 and
depends on the exploration; double Q-learning halves the cost of a poor target-update period):

  learning_rate  DOUBLE 1e-5..1e-2, UNIT_LOG_SCALE
  gamma          DISCRETE 0.9, 0.95, 0.98, 0.99, 0.995, 0.999, UNIT_REVERSE_LOG_SCALE
  buffer_size    INTEGER 1000..1000000, UNIT_LOG_SCALE
  target_update  DISCRETE 100, 500, 1000, 5000, 10000, UNIT_LINEAR_SCALE
  exploration    CATEGORICAL egreedy, boltzmann, noisy
  double_q       CATEGORICAL false, true

With a = log10(learning_rate), g = log10(1 - gamma) + 2 (0 at 0.99), B = log10(buffer_size / 1e5):

  a* = -3.7 + 0.3 g + {egreedy: 0, boltzmann: 0.2, noisy: -0.3}[exploration]
  f = 0.5 (1 - exp(-((a - a*) / 0.45)^2 / 2)) + 0.05 g^2 + 0.03 B^2
    + {false: 1, true: 0.5}[double_q] 0.03 (log10(target_update) - 3)^2
    + {egreedy: 0.02, boltzmann: 0.04, noisy: 0}[exploration] + {false: 0.025, true: 0}[double_q]

f* = 0 at noisy, double Q, learning rate 10^-4, gamma 0.99, buffer 1e5, target update 1000.

hpo_gnn6 (fifth held-out set):

  learning_rate  DOUBLE 1e-4..0.3, UNIT_LOG_SCALE
  hidden_dim     INTEGER 16..512, UNIT_LOG_SCALE
  num_layers     INTEGER 1..8
  dropout        DOUBLE 0..0.7
  weight_decay   DISCRETE 0, 1e-6, 1e-5, 5e-4, 1e-2, UNIT_LINEAR_SCALE
  aggregator     CATEGORICAL mean, sum, max, attention

With a = log10(learning_rate), L = num_layers, h = log2(hidden_dim / 128),
w = log10(weight_decay + 1e-7):

  a* = -2.4 - 0.08 (L - 3) + {mean: 0, sum: -0.6, max: 0.2, attention: -0.3}[aggregator]
  f = 0.5 (1 - exp(-((a - a*) / 0.45)^2 / 2)) + {sum, attention: 0.01; mean, max: 0.025} (L - 3)^2
    + 0.015 (h - 0.5)^2 + 0.3 (dropout - 0.2 - 0.05 h)^2 + 0.004 (w + 4.5)^2
    + {mean: 0.01, sum: 0.03, max: 0.02, attention: 0}[aggregator]

f* = 0 is a lower bound (the weight-decay term is at least 0.001 at the listed values).

hpo_asr7 (sixth held-out set; the best learning rate grows with the warm-up and the batch and
falls with depth, strong augmentation pays only for deep models):

  learning_rate    DOUBLE 1e-5..1e-2, UNIT_LOG_SCALE
  warmup_steps     DISCRETE 0, 500, 1000, 4000, 10000, 25000, UNIT_LINEAR_SCALE
  num_layers       INTEGER 2..16
  label_smoothing  DOUBLE 0..0.3
  specaugment      CATEGORICAL none, light, strong
  optimizer        CATEGORICAL adam, adamw, novograd, sgd
  batch_size       INTEGER 8..256, UNIT_LOG_SCALE

With a = log10(learning_rate), w = log10(warmup_steps + 1), L = num_layers, b = log2(batch / 32):

  a* = -3.3 + 0.2 (min(w, 4) - 3) - 0.04 (L - 8) + 0.25 b
       + {adam: 0, adamw: 0.1, novograd: 0.5, sgd: 1.4}[optimizer]
  f = 0.45 (1 - exp(-((a - a*) / 0.5)^2 / 2)) + 0.002 (L - 10)^2 + 0.4 (label_smoothing - 0.1)^2
    + 0.01 b^2 + 0.03 max(0, 3 - w) + {none: 0.04, light: 0.01, strong: 0.004 max(0, 10 - L)}
    + {adam: 0.005, adamw: 0, novograd: 0.01, sgd: 0.06}[optimizer]

f* = 0 at adamw, a warm-up of 1,000 or 4,000 steps, 10 layers, label smoothing 0.1, strong
augmentation, batch 32 and the learning rate a*.

hpo_det8 (seventh held-out set; the best learning rate depends on the optimizer and the backbone
and grows with the batch and the warm-up; SGD wants a stronger weight decay):

  learning_rate  DOUBLE 1e-4..1e-1, UNIT_LOG_SCALE
  weight_decay   DOUBLE 1e-6..1e-2, UNIT_LOG_SCALE
  backbone       CATEGORICAL resnet50, resnet101, mobilenet, efficientnet
  optimizer      CATEGORICAL sgd, adamw
  batch_size     INTEGER 4..64, UNIT_LOG_SCALE
  warmup_epochs  INTEGER 0..10
  mosaic         DOUBLE 0..1
  anchor_scale   DISCRETE 2, 3, 4, 5, 6, UNIT_LINEAR_SCALE

With a = log10(learning_rate), b = log2(batch_size / 16), W = warmup_epochs:

  a* = {sgd: -1.7, adamw: -3.3}[optimizer] + 0.3 b + 0.03 (W - 5)
       + {resnet50: 0, resnet101: -0.1, mobilenet: 0.3, efficientnet: -0.2}[backbone]
  f = 0.5 (1 - exp(-((a - a*) / 0.45)^2 / 2)) + 0.02 (log10(weight_decay) + {sgd: 3.5, adamw: 4})^2
    + 0.002 (W - 5)^2 + 0.05 {resnet50: 1, resnet101: 1.5, mobilenet: 0.5, efficientnet: 1.2}
    (mosaic - 0.6)^2 + 0.004 (anchor_scale - 4)^2 + 0.01 b^2
    + {resnet50: 0.01, resnet101: 0, mobilenet: 0.06, efficientnet: 0.005}[backbone]
    + {sgd: 0.01, adamw: 0}[optimizer]

f* = 0 at resnet101, adamw, learning rate 10^-3.4, weight decay 1e-4, batch 16, 5 warm-up epochs,
mosaic 0.6, anchor scale 4.

hpo_tft8 (eighth held-out set; the best learning rate falls with the width and grows with the EMA
decay, the best head count grows with the width, the best dropout too, a reversible instance
normalisation (revin) wants the longest look-back):

  learning_rate    DOUBLE 1e-5..1e-1, UNIT_LOG_SCALE
  hidden_size      INTEGER 16..512, UNIT_LOG_SCALE
  attention_heads  DISCRETE 1, 2, 4, 8, UNIT_LOG_SCALE
  dropout          DOUBLE 0..0.5, UNIT_LINEAR_SCALE
  lookback         INTEGER 24..336, UNIT_LINEAR_SCALE
  ema_decay        DOUBLE 0.9..0.9999, UNIT_REVERSE_LOG_SCALE
  normalizer       CATEGORICAL standard, revin, none
  loss             CATEGORICAL mse, mae, quantile

With a = log10(learning_rate), u = log2(hidden_size / 128), H = log2(attention_heads),
c = log10(1 - ema_decay) + 2 (0 at 0.99):

  a* = -3 - 0.35 u - 0.3 c + {standard: 0, revin: 0.2, none: -0.5}[normalizer]
       + {mse: 0, mae: 0.3, quantile: 0.15}[loss]
  f = 0.5 (1 - exp(-((a - a*) / 0.5)^2 / 2)) + 0.015 (u + 2 - H)^2
    + 0.8 (dropout - clip(0.1 + 0.06 u, 0, 0.5))^2
    + 0.03 ((lookback - {standard: 168, revin: 240, none: 96}[normalizer]) / 100)^2
    + 0.03 c^2 + 0.01 u^2 + {standard: 0.02, revin: 0, none: 0.08}[normalizer]
    + {mse: 0.012, mae: 0.02, quantile: 0}[loss]

f* = 0 at revin, quantile, learning rate 10^-2.65, 128 units, 4 heads (32 per head), dropout 0.1,
a look-back of 240, EMA decay 0.99.

Learning curves (the early-stopping part): hpo_curve(params, rng) is a 30-step curve from f + 1
towards f: value(t) = f + (e^(-r t) - e^(-r T)) / (1 - e^(-r T)) + N(0, 0.01^2), with the
rate r = 0.3 * 10^(0.5 * min(0, a - a*)): a learning rate 100x below its best converges 10x slower
(almost a straight line), so its early values look bad although its final value may not be. The
noiseless curve ends exactly at f (the surface), the reported values carry the noise. That is
the "exp" family, the one the early-stopping rule was tuned on. The held-out families
(curve(surface, family, params, rng, steps, noise)), all ending exactly at f, with g = a - a*:

  exp       the above (rate 0.3 * 10^(0.5 min(0, g)))
  pow       a power law: f + (t^-k - T^-k) / (1 - T^-k), k = 0.8 * 10^(0.5 min(0, g)): most of the
            progress in the first steps, then a long slow tail
  crossing  rate 0.15 * 10^(0.5 g), clipped to [0.01, 1.5]: too high a learning rate converges
            fastest to a worse value, so early on the best configurations look worse than
            too-aggressive ones (the short-horizon bias every median rule fears)
  sigmoid   a plateau, then a drop centred on step T (0.25 + 0.25 min(1, |g|)): nothing happens
            at first and slow configurations start late

Families of the final held-out set (es_final), E(t) = the exp family's normalised shape with rate
r = 0.3 * 10^(0.5 min(0, g)):

  step      a step-decay schedule: 0.55 E(t) + 0.3 [t < T/2] + 0.15 [t < 3T/4]: plateaus, then
            drops when the schedule lowers the learning rate
  twoexp    0.6 of a fast exponential (rate 2r) and 0.4 of a slow one (rate r/6): a quick start
            and a long tail that still moves the order of the trials
  overfit   E'(t) - h 4 (t/T)(1 - t/T), E' with the crossing family's rate and h = 0.15 clip(1 + g,
            0, 1): too high a learning rate dips below its final value in mid-run and climbs back
            (validation loss rising late)

Family of the third held-out set (es_third), with the same rate r:

  cosine    a cosine-annealed schedule: the exp family's shape at progress P(t) = t/T +
            sin(pi t/T)/pi instead of t/T (the learning rate's integral): fast early, then a
            slowing run that still drops at the end

Families of the fourth held-out set (es_fourth), with the same rate r and g = a - a*:

  warmup    a linear learning-rate warm-up over the first W = T/4 steps: the exp family's shape
            at progress P(t) = t^2 / (2W) before W and t - W/2 after (rate r T / (T - W/2), so
            that it ends as far along as the exp family), plus a spike when the warm-up reaches
            too high a learning rate: 0.3 clip(g, 0, 1) exp(-((t - W) / (T/10))^2 / 2) (taken
            off again at T so the curve ends at f): nothing moves at first, then aggressive
            configurations jump before they settle
  restarts  cosine annealing with one warm restart (cycles of T/3 and 2T/3 steps): the exp
            family's shape at the cumulative integral of the learning rate, plus 0.1 (1 +
            clip(g, 0, 1.5)) lr(t) (lr(t) = (1 + cos(pi u)) / 2 at a cycle's progress u, 0 at
            T): a saw-tooth whose jump at the restart is larger for too high a learning rate

Families of the fifth held-out set (es_fifth; session 11), with the same rate r and g = a - a*:

  plateau   a loss plateau (1 - 0.05 t/t0) until t0 = T (0.1 + 0.3 min(1, |g|)), then 0.95 of the
            exp family's shape over the remaining T - t0 steps (rate r T / (T - t0)): a badly set
            learning rate sits longer on the plateau, so for a while every trial looks alike
  linear    a linearly decaying learning rate: the exp family's shape at progress t - t^2/(2T)
            (rate 2r): fast early, almost flat at the end
  hetero    the exp family's shape with noise scaled by 1 + 4 clip(g, 0, 1): too high a learning
            rate reports much noisier values (single reports mislead most where it matters)

Families of the sixth held-out set (es_sixth; session 13), with the same rate r and g = a - a*:

  spikes    the exp family's shape plus transient loss spikes: each report but the last is, with
            probability 0.1, |N(0, 0.25^2)| higher (a bad batch): single reports are heavy-tailed
  cyclic    a triangular cyclical learning rate (three cycles, lr(t) = 1 - |2 frac(3t/T) - 1|):
            the exp family's shape plus 0.08 (1 + clip(g, 0, 1)) lr(t), 0 at T: the order of the
            trials shifts with the phase of the cycle
  doubledescent  the crossing family's shape (faster for higher learning rates) plus a hump in
            mid-run, 0.25 clip(1 - |g|, 0, 1) exp(-((t - T/2) / (T/8))^2 / 2) (taken off again at
            T so the curve ends at f): the best-tuned trials look worst halfway through

Families of the seventh held-out set (es_seventh; session 14), with the same rate r and g = a - a*:

  onecycle  a one-cycle schedule: lr(t) rises linearly from 0.1 to 1 over the first 0.3 T steps,
            then cosine-anneals to 0 at T; the exp family's shape (rate 2r) at q(t), the sum of
            lr up to step t scaled so that q(T) = T/2, plus 0.12 (1 + clip(g, 0, 1)) lr(t): a
            high-learning-rate noise floor, larger for too high a rate, that vanishes as the
            rate anneals
  noisyearly  the exp family's shape with noise scaled by 1 + 4 (1 - t/T)^2: early reports (a
            small early validation set, say) are up to five times noisier than the last
  lrdrop    a step-decay schedule whose drops are larger for the better configurations:
            0.5 E(t) + c [t < T/2] + c/2 [t < 0.8 T], c = 0.35 (1 - 0.5 min(1, |g|)): the early
            order misleads until the drops

Families of the eighth held-out set (es_eighth; session 16), with the same rate r and g = a - a*:

  latebloom  the plateau family's shape, its length set by the trial's final value f instead of
            |g|: t0 = T (0.1 + 0.35 clip(1 - f / 0.3, 0, 1)): the configurations that end best
            sit longest on the plateau (up to 0.45 T) and look worst until they drop (late
            bloomers)
  divergent  too high a learning rate makes fast progress towards a value below its end, then
            blows up late: E(t) at rate r (1 + o) minus h (1 - E(t)), plus h B(t), with
            o = clip(g, 0, 1), h = 0.3 o, B = 0 until t_d = T (0.85 - 0.35 o), then
            (e^(5u) - 1) / (e^5 - 1) at u = (t - t_d) / (T - t_d) (1 at T): a trial looks up to
            0.3 better than it ends until the last steps
  heavytail  the exp family's shape with Student-t noise (2.5 degrees of freedom, scale
            `noise`) on every report but the last (Gaussian): symmetric heavy tails, 7 % of the
            reports beyond 3 noise (0.3 % for a Gaussian), 0.4 % beyond 10, lucky low reports as
            well as bad high ones
"""

import math
import zlib

import numpy as np

REGRET_FLOOR = 1e-8


def _box(names, lo, hi):
    return [{"parameterName": n, "type": "DOUBLE", "minValue": lo[i], "maxValue": hi[i],
             "scaleType": "UNIT_LINEAR_SCALE"} for i, n in enumerate(names)]


def _xs(d):
    return ["x%d" % (i + 1) for i in range(d)]


def _vec(params, names):
    return np.array([float(params[n]) for n in names])


# ------------------------------------------------------------------------------------------
# The classic functions (BoTorch's domains and definitions)


def branin(x):
    a, b, c = 1.0, 5.1 / (4 * math.pi ** 2), 5.0 / math.pi
    r, s, t = 6.0, 10.0, 1.0 / (8 * math.pi)
    return a * (x[1] - b * x[0] ** 2 + c * x[0] - r) ** 2 + s * (1 - t) * math.cos(x[0]) + s


def camel(x):
    x1, x2 = x
    return (4 - 2.1 * x1 ** 2 + x1 ** 4 / 3) * x1 ** 2 + x1 * x2 + (-4 + 4 * x2 ** 2) * x2 ** 2


H3_ALPHA = np.array([1.0, 1.2, 3.0, 3.2])
H3_A = np.array([[3.0, 10, 30], [0.1, 10, 35], [3.0, 10, 30], [0.1, 10, 35]])
H3_P = 1e-4 * np.array([[3689, 1170, 2673], [4699, 4387, 7470], [1091, 8732, 5547],
                        [381, 5743, 8828]])
H6_A = np.array([[10, 3, 17, 3.5, 1.7, 8], [0.05, 10, 17, 0.1, 8, 14],
                 [3, 3.5, 1.7, 10, 17, 8], [17, 8, 0.05, 10, 0.1, 14]])
H6_P = 1e-4 * np.array([[1312, 1696, 5569, 124, 8283, 5886], [2329, 4135, 8307, 3736, 1004, 9991],
                        [2348, 1451, 3522, 2883, 3047, 6650], [4047, 8828, 8732, 5743, 1091, 381]])


def hartmann(x, A, P):
    return -float(np.sum(H3_ALPHA * np.exp(-np.sum(A * (x[None, :] - P) ** 2, axis=1))))


def rosenbrock(x):
    return float(np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2))


def ackley(x):
    a, b, c = 20.0, 0.2, 2 * math.pi
    return float(-a * math.exp(-b * math.sqrt(np.mean(x * x))) - math.exp(np.mean(np.cos(c * x)))
                 + a + math.e)


def levy(x):
    w = 1 + (x - 1) / 4
    return float(math.sin(math.pi * w[0]) ** 2
                 + np.sum((w[:-1] - 1) ** 2 * (1 + 10 * np.sin(math.pi * w[:-1] + 1) ** 2))
                 + (w[-1] - 1) ** 2 * (1 + math.sin(2 * math.pi * w[-1]) ** 2))


def styblinski(x):
    return float(0.5 * np.sum(x ** 4 - 16 * x ** 2 + 5 * x))


# ------------------------------------------------------------------------------------------
# hpo_mixed5

HPO_SPEC = [
    {"parameterName": "learning_rate", "type": "DOUBLE", "minValue": 1e-5, "maxValue": 1.0,
     "scaleType": "UNIT_LOG_SCALE"},
    {"parameterName": "momentum", "type": "DOUBLE", "minValue": 0.5, "maxValue": 0.9999,
     "scaleType": "UNIT_REVERSE_LOG_SCALE"},
    {"parameterName": "num_layers", "type": "INTEGER", "minValue": 1, "maxValue": 8,
     "scaleType": "UNIT_LINEAR_SCALE"},
    {"parameterName": "batch_size", "type": "DISCRETE", "discreteValues": [16, 32, 64, 128, 256],
     "scaleType": "UNIT_LOG_SCALE"},
    {"parameterName": "optimizer", "type": "CATEGORICAL",
     "categoricalValues": ["sgd", "adam", "rmsprop"]},
]
HPO_BASE_LOG_LR = {"adam": -3.0, "rmsprop": -3.4, "sgd": -1.5}
HPO_OPTIMIZER_PENALTY = {"adam": 0.0, "rmsprop": 0.03, "sgd": 0.06}
HPO_OPTIMUM = {"learning_rate": 1e-3, "momentum": 0.9, "num_layers": 5, "batch_size": 64,
               "optimizer": "adam"}
HPO_STEPS = 30
HPO_NOISE = 0.01


def _hpo_parts(p):
    a = math.log10(float(p["learning_rate"]))
    b = math.log2(float(p["batch_size"]) / 64.0)
    c = math.log10(max(1.0 - float(p["momentum"]), 1e-300)) + 1.0
    opt = p["optimizer"]
    best = HPO_BASE_LOG_LR[opt] + 0.5 * b * math.log10(2.0) + (c if opt == "sgd" else 0.0)
    return a, b, c, best


def hpo_surface(p):
    a, b, c, best = _hpo_parts(p)
    return (0.6 * (1.0 - math.exp(-0.5 * ((a - best) / 0.6) ** 2))
            + 0.04 * c * c
            + 0.02 * (float(p["num_layers"]) - 5.0) ** 2
            + 0.03 * b * b
            + HPO_OPTIMIZER_PENALTY[p["optimizer"]])


def hpo_lr_gap(p):
    """g = a - a*: how far (decades) a hpo_mixed5 learning rate is from its best."""
    a, _, _, best = _hpo_parts(p)
    return a - best


def hpo_curve(p, rng, steps=HPO_STEPS, noise=HPO_NOISE):
    """The values a trial with params p reports at steps 1..steps (the "exp" family)."""
    return curve("hpo_mixed5", "exp", p, rng, steps, noise)


# ------------------------------------------------------------------------------------------
# Held-out objectives


SHEKEL_A = np.array([[4, 4, 4, 4], [1, 1, 1, 1], [8, 8, 8, 8], [6, 6, 6, 6], [3, 7, 3, 7],
                     [2, 9, 2, 9], [5, 5, 3, 3], [8, 1, 8, 1], [6, 2, 6, 2], [7, 3.6, 7, 3.6]],
                    dtype=float)
SHEKEL_C = np.array([0.1, 0.2, 0.2, 0.4, 0.4, 0.6, 0.3, 0.7, 0.5, 0.5])


def shekel(x):
    return -float(np.sum(1.0 / (np.sum((x[None, :] - SHEKEL_A) ** 2, axis=1) + SHEKEL_C)))


def dixonprice(x):
    i = np.arange(2, len(x) + 1)
    return float((x[0] - 1) ** 2 + np.sum(i * (2 * x[1:] ** 2 - x[:-1]) ** 2))


HPO6_SPEC = [
    {"parameterName": "learning_rate", "type": "DOUBLE", "minValue": 1e-4, "maxValue": 1.0,
     "scaleType": "UNIT_LOG_SCALE"},
    {"parameterName": "weight_decay", "type": "DOUBLE", "minValue": 1e-6, "maxValue": 0.1,
     "scaleType": "UNIT_LOG_SCALE"},
    {"parameterName": "dropout", "type": "DOUBLE", "minValue": 0.0, "maxValue": 0.7,
     "scaleType": "UNIT_LINEAR_SCALE"},
    {"parameterName": "hidden_units", "type": "INTEGER", "minValue": 16, "maxValue": 1024,
     "scaleType": "UNIT_LOG_SCALE"},
    {"parameterName": "activation", "type": "CATEGORICAL",
     "categoricalValues": ["relu", "gelu", "tanh"]},
    {"parameterName": "warmup_steps", "type": "DISCRETE",
     "discreteValues": [0, 100, 500, 1000, 5000]},
]
HPO6_LR_SHIFT = {"relu": 0.0, "gelu": -0.2, "tanh": 0.5}
HPO6_ACT_PENALTY = {"relu": 0.02, "gelu": 0.0, "tanh": 0.05}


def _hpo6_parts(p):
    a = math.log10(float(p["learning_rate"]))
    u = math.log2(float(p["hidden_units"]) / 256.0)
    best = -2.5 - 0.3 * u + HPO6_LR_SHIFT[p["activation"]]
    return a, u, best


def hpo6_surface(p):
    a, u, best = _hpo6_parts(p)
    return (0.5 * (1.0 - math.exp(-0.5 * ((a - best) / 0.5) ** 2))
            + 0.05 * ((math.log10(float(p["weight_decay"])) + 4.0) / 1.5) ** 2
            + (float(p["dropout"]) - (0.2 + 0.1 * u)) ** 2 / 0.9
            + 0.02 * u * u
            + HPO6_ACT_PENALTY[p["activation"]]
            + 0.03 * (math.log10(float(p["warmup_steps"]) + 10.0) - math.log10(510.0)) ** 2)


def hpo6_lr_gap(p):
    a, _, best = _hpo6_parts(p)
    return a - best


# ------------------------------------------------------------------------------------------
# The final held-out set


def powell(x):
    return float((x[0] + 10 * x[1]) ** 2 + 5 * (x[2] - x[3]) ** 2 + (x[1] - 2 * x[2]) ** 4
                 + 10 * (x[0] - x[3]) ** 4)


def colville(x):
    x1, x2, x3, x4 = x
    return float(100 * (x1 ** 2 - x2) ** 2 + (x1 - 1) ** 2 + (x3 - 1) ** 2
                 + 90 * (x3 ** 2 - x4) ** 2 + 10.1 * ((x2 - 1) ** 2 + (x4 - 1) ** 2)
                 + 19.8 * (x2 - 1) * (x4 - 1))


XGB_SPEC = [
    {"parameterName": "eta", "type": "DOUBLE", "minValue": 1e-3, "maxValue": 0.5,
     "scaleType": "UNIT_LOG_SCALE"},
    {"parameterName": "max_depth", "type": "INTEGER", "minValue": 2, "maxValue": 12,
     "scaleType": "UNIT_LINEAR_SCALE"},
    {"parameterName": "n_estimators", "type": "INTEGER", "minValue": 50, "maxValue": 2000,
     "scaleType": "UNIT_LOG_SCALE"},
    {"parameterName": "subsample", "type": "DOUBLE", "minValue": 0.4, "maxValue": 1.0,
     "scaleType": "UNIT_LINEAR_SCALE"},
    {"parameterName": "min_child_weight", "type": "DOUBLE", "minValue": 0.1, "maxValue": 100.0,
     "scaleType": "UNIT_LOG_SCALE"},
    {"parameterName": "booster", "type": "CATEGORICAL",
     "categoricalValues": ["gbtree", "dart", "gblinear"]},
    {"parameterName": "grow_policy", "type": "CATEGORICAL",
     "categoricalValues": ["depthwise", "lossguide"]},
]
XGB_LR_SHIFT = {"gbtree": 0.0, "dart": 0.2, "gblinear": 0.5}
XGB_BOOSTER_PENALTY = {"gbtree": 0.0, "dart": 0.01, "gblinear": 0.12}
XGB_DEPTH = {"depthwise": 6.0, "lossguide": 9.0}
XGB_POLICY_PENALTY = {"depthwise": 0.0, "lossguide": 0.015}


def _xgb_parts(p):
    a = math.log10(float(p["eta"]))
    m = math.log10(float(p["n_estimators"]) / 400.0)
    return a, m, -1.3 - m + XGB_LR_SHIFT[p["booster"]]


def xgb_surface(p):
    a, m, best = _xgb_parts(p)
    return (0.5 * (1.0 - math.exp(-0.5 * ((a - best) / 0.45) ** 2))
            + 0.012 * (float(p["max_depth"]) - XGB_DEPTH[p["grow_policy"]]) ** 2
            + 0.05 * m * m
            + 0.3 * (float(p["subsample"]) - 0.8) ** 2
            + 0.04 * math.log10(float(p["min_child_weight"])) ** 2
            + XGB_BOOSTER_PENALTY[p["booster"]]
            + XGB_POLICY_PENALTY[p["grow_policy"]])


def xgb_lr_gap(p):
    a, _, best = _xgb_parts(p)
    return a - best


CNN_SPEC = [
    {"parameterName": "learning_rate", "type": "DOUBLE", "minValue": 1e-5, "maxValue": 0.1,
     "scaleType": "UNIT_LOG_SCALE"},
    {"parameterName": "batch_size", "type": "DISCRETE",
     "discreteValues": [8, 16, 32, 64, 128, 256, 512, 1024], "scaleType": "UNIT_LOG_SCALE"},
    {"parameterName": "num_layers", "type": "INTEGER", "minValue": 1, "maxValue": 12,
     "scaleType": "UNIT_LINEAR_SCALE"},
    {"parameterName": "optimizer", "type": "CATEGORICAL",
     "categoricalValues": ["sgd", "momentum", "adam", "adamw", "rmsprop"]},
    {"parameterName": "label_smoothing", "type": "DISCRETE",
     "discreteValues": [0.0, 0.05, 0.1, 0.2], "scaleType": "UNIT_LINEAR_SCALE"},
]
CNN_BASE_LOG_LR = {"sgd": -1.2, "momentum": -2.0, "adam": -3.2, "adamw": -3.0, "rmsprop": -3.5}
CNN_OPTIMIZER_PENALTY = {"sgd": 0.08, "momentum": 0.03, "adam": 0.01, "adamw": 0.0,
                         "rmsprop": 0.04}


def _cnn_parts(p):
    a = math.log10(float(p["learning_rate"]))
    b = math.log2(float(p["batch_size"]) / 128.0)
    return a, b, CNN_BASE_LOG_LR[p["optimizer"]] + 0.7 * b * math.log10(2.0)


def cnn_surface(p):
    a, b, best = _cnn_parts(p)
    return (0.55 * (1.0 - math.exp(-0.5 * ((a - best) / 0.5) ** 2))
            + 0.015 * (float(p["num_layers"]) - 7.0) ** 2
            + 0.015 * b * b
            + CNN_OPTIMIZER_PENALTY[p["optimizer"]]
            + 2.0 * (float(p["label_smoothing"]) - 0.1) ** 2)


def cnn_lr_gap(p):
    a, _, best = _cnn_parts(p)
    return a - best


# ------------------------------------------------------------------------------------------
# The third held-out set


LGBM_SPEC = [
    {"parameterName": "learning_rate", "type": "DOUBLE", "minValue": 1e-3, "maxValue": 0.3,
     "scaleType": "UNIT_LOG_SCALE"},
    {"parameterName": "num_leaves", "type": "INTEGER", "minValue": 8, "maxValue": 512,
     "scaleType": "UNIT_LOG_SCALE"},
    {"parameterName": "min_data_in_leaf", "type": "INTEGER", "minValue": 1, "maxValue": 200,
     "scaleType": "UNIT_LOG_SCALE"},
    {"parameterName": "feature_fraction", "type": "DOUBLE", "minValue": 0.3, "maxValue": 1.0,
     "scaleType": "UNIT_LINEAR_SCALE"},
    {"parameterName": "lambda_l2", "type": "DOUBLE", "minValue": 1e-8, "maxValue": 10.0,
     "scaleType": "UNIT_LOG_SCALE"},
    {"parameterName": "max_bin", "type": "DISCRETE", "discreteValues": [63, 127, 255, 511, 1023],
     "scaleType": "UNIT_LOG_SCALE"},
    {"parameterName": "boosting", "type": "CATEGORICAL",
     "categoricalValues": ["gbdt", "dart", "goss"]},
    {"parameterName": "objective", "type": "CATEGORICAL",
     "categoricalValues": ["l2", "huber", "fair"]},
    {"parameterName": "extra_trees", "type": "CATEGORICAL", "categoricalValues": ["false", "true"]},
]
LGBM_LR_SHIFT = {"gbdt": -0.3, "dart": 0.0, "goss": -0.4}
LGBM_BOOSTING_PENALTY = {"gbdt": 0.005, "dart": 0.0, "goss": 0.02}
LGBM_OBJECTIVE_PENALTY = {"l2": 0.03, "huber": 0.0, "fair": 0.01}


def _lgbm_parts(p):
    a = math.log10(float(p["learning_rate"]))
    leaves = math.log2(float(p["num_leaves"]) / 64.0)
    return a, leaves, -1.2 - 0.25 * leaves + LGBM_LR_SHIFT[p["boosting"]]


def lgbm_surface(p):
    a, leaves, best = _lgbm_parts(p)
    extra = p["extra_trees"] == "true"
    return (0.45 * (1.0 - math.exp(-0.5 * ((a - best) / 0.45) ** 2))
            + 0.012 * (leaves - (1.0 if extra else 0.0)) ** 2
            + 0.03 * math.log10(float(p["min_data_in_leaf"]) / 20.0) ** 2
            + 0.25 * (float(p["feature_fraction"]) - (0.9 if p["boosting"] == "goss" else 0.7)) ** 2
            + 0.004 * (math.log10(float(p["lambda_l2"])) + 1.0) ** 2
            + 0.005 * math.log2((float(p["max_bin"]) + 1.0) / 256.0) ** 2
            + LGBM_BOOSTING_PENALTY[p["boosting"]] + LGBM_OBJECTIVE_PENALTY[p["objective"]]
            + (0.008 if extra else 0.0))


def lgbm_lr_gap(p):
    a, _, best = _lgbm_parts(p)
    return a - best


BERT_SPEC = [
    {"parameterName": "learning_rate", "type": "DOUBLE", "minValue": 1e-6, "maxValue": 1e-3,
     "scaleType": "UNIT_LOG_SCALE"},
    {"parameterName": "batch_size", "type": "DISCRETE", "discreteValues": [8, 16, 32, 64],
     "scaleType": "UNIT_LOG_SCALE"},
    {"parameterName": "warmup_ratio", "type": "DISCRETE",
     "discreteValues": [0.0, 0.01, 0.03, 0.06, 0.1, 0.2], "scaleType": "UNIT_LINEAR_SCALE"},
    {"parameterName": "weight_decay", "type": "DOUBLE", "minValue": 0.0, "maxValue": 0.3,
     "scaleType": "UNIT_LINEAR_SCALE"},
    {"parameterName": "scheduler", "type": "CATEGORICAL",
     "categoricalValues": ["linear", "cosine", "constant", "polynomial"]},
    {"parameterName": "optimizer", "type": "CATEGORICAL",
     "categoricalValues": ["adamw", "adafactor", "sgd"]},
]
BERT_LR_SHIFT = {"adamw": 0.0, "adafactor": 0.4, "sgd": 1.6}
BERT_OPTIMIZER_PENALTY = {"adamw": 0.0, "adafactor": 0.02, "sgd": 0.06}
BERT_SCHEDULER_PENALTY = {"linear": 0.0, "cosine": 0.004, "constant": 0.03, "polynomial": 0.012}


def _bert_parts(p):
    a = math.log10(float(p["learning_rate"]))
    b = math.log2(float(p["batch_size"]) / 32.0)
    best = (-4.5 + 0.5 * b * math.log10(2.0) + BERT_LR_SHIFT[p["optimizer"]]
            + (-0.3 if p["scheduler"] == "constant" else 0.0))
    return a, b, best


def bert_surface(p):
    a, b, best = _bert_parts(p)
    return (0.5 * (1.0 - math.exp(-0.5 * ((a - best) / 0.4) ** 2))
            + 0.01 * b * b
            + 0.05 * (math.log10(float(p["warmup_ratio"]) + 0.01) - math.log10(0.07)) ** 2
            + 0.3 * (float(p["weight_decay"]) - 0.05) ** 2
            + BERT_SCHEDULER_PENALTY[p["scheduler"]] + BERT_OPTIMIZER_PENALTY[p["optimizer"]])


def bert_lr_gap(p):
    a, _, best = _bert_parts(p)
    return a - best


AUG_SPEC = [
    {"parameterName": "learning_rate", "type": "DOUBLE", "minValue": 1e-4, "maxValue": 1.0,
     "scaleType": "UNIT_LOG_SCALE"},
    {"parameterName": "momentum", "type": "DISCRETE", "discreteValues": [0.8, 0.9, 0.95, 0.99],
     "scaleType": "UNIT_REVERSE_LOG_SCALE"},
    {"parameterName": "epochs", "type": "INTEGER", "minValue": 10, "maxValue": 200,
     "scaleType": "UNIT_LOG_SCALE"},
    {"parameterName": "label_smoothing", "type": "DOUBLE", "minValue": 0.0, "maxValue": 0.3,
     "scaleType": "UNIT_LINEAR_SCALE"},
    {"parameterName": "augment", "type": "CATEGORICAL",
     "categoricalValues": ["none", "flip", "crop", "flipcrop", "autoaugment", "randaugment",
                           "mixup", "cutmix"]},
    {"parameterName": "init", "type": "CATEGORICAL",
     "categoricalValues": ["he", "xavier", "orthogonal", "lecun"]},
]
AUG_EPOCHS = {"none": 30.0, "flip": 40.0, "crop": 50.0, "flipcrop": 60.0, "autoaugment": 120.0,
              "randaugment": 100.0, "mixup": 150.0, "cutmix": 120.0}
AUG_PENALTY = {"none": 0.08, "flip": 0.05, "crop": 0.045, "flipcrop": 0.025, "autoaugment": 0.008,
               "randaugment": 0.0, "mixup": 0.012, "cutmix": 0.004}
AUG_INIT_PENALTY = {"he": 0.0, "xavier": 0.003, "orthogonal": 0.001, "lecun": 0.004}


def _aug_parts(p):
    a = math.log10(float(p["learning_rate"]))
    c = math.log10(max(1.0 - float(p["momentum"]), 1e-300)) + 1.0
    return a, c, -1.3 + c


def aug_surface(p):
    a, c, best = _aug_parts(p)
    aug = p["augment"]
    smooth = 0.0 if aug in ("mixup", "cutmix") else 0.1
    return (0.5 * (1.0 - math.exp(-0.5 * ((a - best) / 0.5) ** 2))
            + 0.03 * c * c
            + 0.03 * math.log2(float(p["epochs"]) / AUG_EPOCHS[aug]) ** 2
            + 0.6 * (float(p["label_smoothing"]) - smooth) ** 2
            + AUG_PENALTY[aug] + AUG_INIT_PENALTY[p["init"]])


def aug_lr_gap(p):
    a, _, best = _aug_parts(p)
    return a - best


# ------------------------------------------------------------------------------------------
# The fourth held-out set


def goldstein(x):
    x1, x2 = x
    a = 1 + (x1 + x2 + 1) ** 2 * (19 - 14 * x1 + 3 * x1 ** 2 - 14 * x2 + 6 * x1 * x2 + 3 * x2 ** 2)
    b = 30 + (2 * x1 - 3 * x2) ** 2 * (18 - 32 * x1 + 12 * x1 ** 2 + 48 * x2 - 36 * x1 * x2
                                       + 27 * x2 ** 2)
    return float(a * b)


def griewank(x):
    i = np.arange(1, len(x) + 1, dtype=float)
    return float(1.0 + np.sum(x * x) / 4000.0 - np.prod(np.cos(x / np.sqrt(i))))


def rastrigin(x):
    return float(10.0 * len(x) + np.sum(x * x - 10.0 * np.cos(2 * math.pi * x)))


RNN_SPEC = [
    {"parameterName": "learning_rate", "type": "DOUBLE", "minValue": 1e-4, "maxValue": 0.1,
     "scaleType": "UNIT_LOG_SCALE"},
    {"parameterName": "hidden_size", "type": "DISCRETE",
     "discreteValues": [64, 128, 256, 512, 1024], "scaleType": "UNIT_LOG_SCALE"},
    {"parameterName": "num_layers", "type": "INTEGER", "minValue": 1, "maxValue": 4,
     "scaleType": "UNIT_LINEAR_SCALE"},
    {"parameterName": "dropout", "type": "DOUBLE", "minValue": 0.0, "maxValue": 0.6,
     "scaleType": "UNIT_LINEAR_SCALE"},
    {"parameterName": "grad_clip", "type": "DISCRETE", "discreteValues": [0.0, 0.25, 1.0, 5.0],
     "scaleType": "UNIT_LINEAR_SCALE"},
    {"parameterName": "cell", "type": "CATEGORICAL",
     "categoricalValues": ["lstm", "gru", "vanilla"]},
    {"parameterName": "optimizer", "type": "CATEGORICAL",
     "categoricalValues": ["adam", "sgd", "rmsprop", "adagrad"]},
]
RNN_OPT_SHIFT = {"adam": 0.0, "sgd": 1.3, "rmsprop": -0.3, "adagrad": 0.8}
RNN_CELL_SHIFT = {"lstm": 0.0, "gru": 0.1, "vanilla": -0.5}
RNN_CELL_PENALTY = {"lstm": 0.0, "gru": 0.005, "vanilla": 0.07}
RNN_OPT_PENALTY = {"adam": 0.0, "sgd": 0.05, "rmsprop": 0.015, "adagrad": 0.04}


def _rnn_parts(p):
    a = math.log10(float(p["learning_rate"]))
    h = math.log2(float(p["hidden_size"]) / 256.0)
    best = -2.8 - 0.2 * h + RNN_OPT_SHIFT[p["optimizer"]] + RNN_CELL_SHIFT[p["cell"]]
    return a, h, best


def rnn_surface(p):
    a, h, best = _rnn_parts(p)
    layers = float(p["num_layers"])
    k = 4.0 if p["cell"] == "vanilla" else 1.0
    return (0.5 * (1.0 - math.exp(-0.5 * ((a - best) / 0.5) ** 2))
            + 0.02 * (h - 0.5 * (layers - 2.0)) ** 2 + 0.015 * (layers - 2.0) ** 2
            + 0.4 * (float(p["dropout"]) - 0.1 - 0.1 * layers) ** 2
            + k * 0.02 * (math.log10(float(p["grad_clip"]) + 0.05) - math.log10(1.05)) ** 2
            + RNN_CELL_PENALTY[p["cell"]] + RNN_OPT_PENALTY[p["optimizer"]])


def rnn_lr_gap(p):
    a, _, best = _rnn_parts(p)
    return a - best


VIT_SPEC = [
    {"parameterName": "learning_rate", "type": "DOUBLE", "minValue": 1e-5, "maxValue": 1e-2,
     "scaleType": "UNIT_LOG_SCALE"},
    {"parameterName": "weight_decay", "type": "DOUBLE", "minValue": 1e-4, "maxValue": 1.0,
     "scaleType": "UNIT_LOG_SCALE"},
    {"parameterName": "drop_path", "type": "DOUBLE", "minValue": 0.0, "maxValue": 0.5,
     "scaleType": "UNIT_LINEAR_SCALE"},
    {"parameterName": "warmup_epochs", "type": "INTEGER", "minValue": 0, "maxValue": 30,
     "scaleType": "UNIT_LINEAR_SCALE"},
    {"parameterName": "patch_size", "type": "DISCRETE", "discreteValues": [4, 8, 16, 32],
     "scaleType": "UNIT_LOG_SCALE"},
    {"parameterName": "mixup_alpha", "type": "DISCRETE",
     "discreteValues": [0.0, 0.1, 0.2, 0.4, 0.8, 1.0], "scaleType": "UNIT_LINEAR_SCALE"},
    {"parameterName": "model_size", "type": "CATEGORICAL",
     "categoricalValues": ["tiny", "small", "base", "large"]},
    {"parameterName": "optimizer", "type": "CATEGORICAL",
     "categoricalValues": ["adamw", "lamb", "sgd"]},
]
VIT_SIZE_SHIFT = {"tiny": -0.2, "small": 0.0, "base": 0.2, "large": 0.4}
VIT_OPT_SHIFT = {"adamw": 0.0, "lamb": 0.5, "sgd": 1.3}
VIT_DROP_PATH = {"tiny": 0.0, "small": 0.1, "base": 0.2, "large": 0.35}
VIT_MIXUP = {"tiny": 0.0, "small": 0.1, "base": 0.2, "large": 0.4}
VIT_SIZE_PENALTY = {"tiny": 0.09, "small": 0.03, "base": 0.0, "large": 0.012}
VIT_OPT_PENALTY = {"adamw": 0.0, "lamb": 0.01, "sgd": 0.05}


def _vit_parts(p):
    a = math.log10(float(p["learning_rate"]))
    return a, -3.3 - VIT_SIZE_SHIFT[p["model_size"]] + VIT_OPT_SHIFT[p["optimizer"]]


def vit_surface(p):
    a, best = _vit_parts(p)
    size = p["model_size"]
    return (0.5 * (1.0 - math.exp(-0.5 * ((a - best) / 0.45) ** 2))
            + 0.04 * (math.log10(float(p["weight_decay"])) + 1.3) ** 2
            + 0.5 * (float(p["drop_path"]) - VIT_DROP_PATH[size]) ** 2
            + 0.0002 * (float(p["warmup_epochs"]) - 10.0) ** 2
            + 0.02 * math.log2(float(p["patch_size"]) / 16.0) ** 2
            + 0.15 * (float(p["mixup_alpha"]) - VIT_MIXUP[size]) ** 2
            + VIT_SIZE_PENALTY[size] + VIT_OPT_PENALTY[p["optimizer"]])


def vit_lr_gap(p):
    a, best = _vit_parts(p)
    return a - best


DQN_SPEC = [
    {"parameterName": "learning_rate", "type": "DOUBLE", "minValue": 1e-5, "maxValue": 1e-2,
     "scaleType": "UNIT_LOG_SCALE"},
    {"parameterName": "gamma", "type": "DISCRETE",
     "discreteValues": [0.9, 0.95, 0.98, 0.99, 0.995, 0.999],
     "scaleType": "UNIT_REVERSE_LOG_SCALE"},
    {"parameterName": "buffer_size", "type": "INTEGER", "minValue": 1000, "maxValue": 1000000,
     "scaleType": "UNIT_LOG_SCALE"},
    {"parameterName": "target_update", "type": "DISCRETE",
     "discreteValues": [100, 500, 1000, 5000, 10000], "scaleType": "UNIT_LINEAR_SCALE"},
    {"parameterName": "exploration", "type": "CATEGORICAL",
     "categoricalValues": ["egreedy", "boltzmann", "noisy"]},
    {"parameterName": "double_q", "type": "CATEGORICAL", "categoricalValues": ["false", "true"]},
]
DQN_EXPL_SHIFT = {"egreedy": 0.0, "boltzmann": 0.2, "noisy": -0.3}
DQN_EXPL_PENALTY = {"egreedy": 0.02, "boltzmann": 0.04, "noisy": 0.0}


def _dqn_parts(p):
    a = math.log10(float(p["learning_rate"]))
    g = math.log10(max(1.0 - float(p["gamma"]), 1e-300)) + 2.0
    return a, g, -3.7 + 0.3 * g + DQN_EXPL_SHIFT[p["exploration"]]


def dqn_surface(p):
    a, g, best = _dqn_parts(p)
    double = p["double_q"] == "true"
    return (0.5 * (1.0 - math.exp(-0.5 * ((a - best) / 0.45) ** 2))
            + 0.05 * g * g
            + 0.03 * math.log10(float(p["buffer_size"]) / 1e5) ** 2
            + (0.5 if double else 1.0) * 0.03 * (math.log10(float(p["target_update"])) - 3.0) ** 2
            + DQN_EXPL_PENALTY[p["exploration"]] + (0.0 if double else 0.025))


def dqn_lr_gap(p):
    a, _, best = _dqn_parts(p)
    return a - best


GNN_SPEC = [
    {"parameterName": "learning_rate", "type": "DOUBLE", "minValue": 1e-4, "maxValue": 0.3,
     "scaleType": "UNIT_LOG_SCALE"},
    {"parameterName": "hidden_dim", "type": "INTEGER", "minValue": 16, "maxValue": 512,
     "scaleType": "UNIT_LOG_SCALE"},
    {"parameterName": "num_layers", "type": "INTEGER", "minValue": 1, "maxValue": 8,
     "scaleType": "UNIT_LINEAR_SCALE"},
    {"parameterName": "dropout", "type": "DOUBLE", "minValue": 0.0, "maxValue": 0.7,
     "scaleType": "UNIT_LINEAR_SCALE"},
    {"parameterName": "weight_decay", "type": "DISCRETE",
     "discreteValues": [0.0, 1e-6, 1e-5, 5e-4, 1e-2], "scaleType": "UNIT_LINEAR_SCALE"},
    {"parameterName": "aggregator", "type": "CATEGORICAL",
     "categoricalValues": ["mean", "sum", "max", "attention"]},
]
GNN_AGG_SHIFT = {"mean": 0.0, "sum": -0.6, "max": 0.2, "attention": -0.3}
GNN_AGG_PENALTY = {"mean": 0.01, "sum": 0.03, "max": 0.02, "attention": 0.0}


def _gnn_parts(p):
    a = math.log10(float(p["learning_rate"]))
    layers = float(p["num_layers"])
    best = -2.4 - 0.08 * (layers - 3.0) + GNN_AGG_SHIFT[p["aggregator"]]
    return a, layers, best


def gnn_surface(p):
    a, layers, best = _gnn_parts(p)
    h = math.log2(float(p["hidden_dim"]) / 128.0)
    wd = math.log10(float(p["weight_decay"]) + 1e-7)
    # Over-smoothing: depth beyond 3 layers costs more with mean/max aggregation than with sum or
    # attention; the best dropout grows with width.
    depth_cost = (0.01 if p["aggregator"] in ("sum", "attention") else 0.025) * (layers - 3.0) ** 2
    return (0.5 * (1.0 - math.exp(-0.5 * ((a - best) / 0.45) ** 2))
            + depth_cost + 0.015 * (h - 0.5) ** 2
            + 0.3 * (float(p["dropout"]) - 0.2 - 0.05 * h) ** 2
            + 0.004 * (wd + 4.5) ** 2 + GNN_AGG_PENALTY[p["aggregator"]])


def gnn_lr_gap(p):
    a, _, best = _gnn_parts(p)
    return a - best


# ------------------------------------------------------------------------------------------
# The sixth held-out set


def alpine(x):
    return float(np.sum(np.abs(x * np.sin(x) + 0.1 * x)))


def salomon(x):
    r = float(np.sqrt(np.sum(x * x)))
    return 1.0 - math.cos(2.0 * math.pi * r) + 0.1 * r


def trid(x):
    return float(np.sum((x - 1.0) ** 2) - np.sum(x[1:] * x[:-1]))


ASR_SPEC = [
    {"parameterName": "learning_rate", "type": "DOUBLE", "minValue": 1e-5, "maxValue": 1e-2,
     "scaleType": "UNIT_LOG_SCALE"},
    {"parameterName": "warmup_steps", "type": "DISCRETE",
     "discreteValues": [0, 500, 1000, 4000, 10000, 25000], "scaleType": "UNIT_LINEAR_SCALE"},
    {"parameterName": "num_layers", "type": "INTEGER", "minValue": 2, "maxValue": 16,
     "scaleType": "UNIT_LINEAR_SCALE"},
    {"parameterName": "label_smoothing", "type": "DOUBLE", "minValue": 0.0, "maxValue": 0.3,
     "scaleType": "UNIT_LINEAR_SCALE"},
    {"parameterName": "specaugment", "type": "CATEGORICAL",
     "categoricalValues": ["none", "light", "strong"]},
    {"parameterName": "optimizer", "type": "CATEGORICAL",
     "categoricalValues": ["adam", "adamw", "novograd", "sgd"]},
    {"parameterName": "batch_size", "type": "INTEGER", "minValue": 8, "maxValue": 256,
     "scaleType": "UNIT_LOG_SCALE"},
]
ASR_OPT_SHIFT = {"adam": 0.0, "adamw": 0.1, "novograd": 0.5, "sgd": 1.4}
ASR_OPT_PENALTY = {"adam": 0.005, "adamw": 0.0, "novograd": 0.01, "sgd": 0.06}


def _asr_parts(p):
    a = math.log10(float(p["learning_rate"]))
    w = math.log10(float(p["warmup_steps"]) + 1.0)
    layers = float(p["num_layers"])
    b = math.log2(float(p["batch_size"]) / 32.0)
    best = (-3.3 + 0.2 * (min(w, 4.0) - 3.0) - 0.04 * (layers - 8.0) + 0.25 * b
            + ASR_OPT_SHIFT[p["optimizer"]])
    return a, w, layers, b, best


def asr_surface(p):
    a, w, layers, b, best = _asr_parts(p)
    spec = {"none": 0.04, "light": 0.01,
            "strong": 0.004 * max(0.0, 10.0 - layers)}[p["specaugment"]]
    return (0.45 * (1.0 - math.exp(-0.5 * ((a - best) / 0.5) ** 2))
            + 0.002 * (layers - 10.0) ** 2 + 0.4 * (float(p["label_smoothing"]) - 0.1) ** 2
            + 0.01 * b * b + 0.03 * max(0.0, 3.0 - w) + spec + ASR_OPT_PENALTY[p["optimizer"]])


def asr_lr_gap(p):
    a, _, _, _, best = _asr_parts(p)
    return a - best


# ------------------------------------------------------------------------------------------
# The seventh held-out set


def zakharov(x):
    s = float(np.sum(0.5 * np.arange(1, len(x) + 1) * x))
    return float(np.sum(x * x)) + s ** 2 + s ** 4


def shubert(x):
    i = np.arange(1, 6, dtype=float)
    return float(np.prod([np.sum(i * np.cos((i + 1.0) * v + i)) for v in x]))


def qing(x):
    return float(np.sum((x * x - np.arange(1, len(x) + 1)) ** 2))


DET_SPEC = [
    {"parameterName": "learning_rate", "type": "DOUBLE", "minValue": 1e-4, "maxValue": 1e-1,
     "scaleType": "UNIT_LOG_SCALE"},
    {"parameterName": "weight_decay", "type": "DOUBLE", "minValue": 1e-6, "maxValue": 1e-2,
     "scaleType": "UNIT_LOG_SCALE"},
    {"parameterName": "backbone", "type": "CATEGORICAL",
     "categoricalValues": ["resnet50", "resnet101", "mobilenet", "efficientnet"]},
    {"parameterName": "optimizer", "type": "CATEGORICAL", "categoricalValues": ["sgd", "adamw"]},
    {"parameterName": "batch_size", "type": "INTEGER", "minValue": 4, "maxValue": 64,
     "scaleType": "UNIT_LOG_SCALE"},
    {"parameterName": "warmup_epochs", "type": "INTEGER", "minValue": 0, "maxValue": 10,
     "scaleType": "UNIT_LINEAR_SCALE"},
    {"parameterName": "mosaic", "type": "DOUBLE", "minValue": 0.0, "maxValue": 1.0,
     "scaleType": "UNIT_LINEAR_SCALE"},
    {"parameterName": "anchor_scale", "type": "DISCRETE", "discreteValues": [2, 3, 4, 5, 6],
     "scaleType": "UNIT_LINEAR_SCALE"},
]
DET_OPT_LOG_LR = {"sgd": -1.7, "adamw": -3.3}
DET_BACKBONE_SHIFT = {"resnet50": 0.0, "resnet101": -0.1, "mobilenet": 0.3, "efficientnet": -0.2}
DET_MOSAIC_WEIGHT = {"resnet50": 1.0, "resnet101": 1.5, "mobilenet": 0.5, "efficientnet": 1.2}
DET_BACKBONE_PENALTY = {"resnet50": 0.01, "resnet101": 0.0, "mobilenet": 0.06,
                        "efficientnet": 0.005}
DET_OPT_PENALTY = {"sgd": 0.01, "adamw": 0.0}


def _det_parts(p):
    a = math.log10(float(p["learning_rate"]))
    b = math.log2(float(p["batch_size"]) / 16.0)
    warmup = float(p["warmup_epochs"])
    best = (DET_OPT_LOG_LR[p["optimizer"]] + 0.3 * b + DET_BACKBONE_SHIFT[p["backbone"]]
            + 0.03 * (warmup - 5.0))
    return a, b, warmup, best


def det_surface(p):
    a, b, warmup, best = _det_parts(p)
    sgd = p["optimizer"] == "sgd"
    backbone = p["backbone"]
    return (0.5 * (1.0 - math.exp(-0.5 * ((a - best) / 0.45) ** 2))
            + 0.02 * (math.log10(float(p["weight_decay"])) - (-4.0 + (0.5 if sgd else 0.0))) ** 2
            + 0.002 * (warmup - 5.0) ** 2
            + 0.05 * (float(p["mosaic"]) - 0.6) ** 2 * DET_MOSAIC_WEIGHT[backbone]
            + 0.004 * (float(p["anchor_scale"]) - 4.0) ** 2
            + DET_BACKBONE_PENALTY[backbone] + DET_OPT_PENALTY[p["optimizer"]] + 0.01 * b * b)


def det_lr_gap(p):
    a, _, _, best = _det_parts(p)
    return a - best


# ------------------------------------------------------------------------------------------
# The eighth held-out set


def michalewicz(x, m=10):
    i = np.arange(1, len(x) + 1)
    return -float(np.sum(np.sin(x) * np.sin(i * x * x / math.pi) ** (2 * m)))


# One dimension's minimum of -sin(x) sin(i x^2 / pi)^20 on [0, pi], i = 1..5 (a bounded
# minimisation from the best of 200,001 grid points); the sum is f* = -4.687658179088148.
MICHALEWICZ5_FSTAR = -4.687658179088148
# max of x sin(sqrt |x|) on [-500, 500], at x = 420.9687463591536 (the standard 418.9829 rounded).
SCHWEFEL_PEAK = 418.98288727243374


def schwefel(x):
    return 418.9829 * len(x) - float(np.sum(x * np.sin(np.sqrt(np.abs(x)))))


def griewank_rosenbrock(x):
    """CEC 2005's expanded Griewank plus Rosenbrock (F8F2): sum over the pairs (x_i, x_i+1), the
    last one (x_d, x_1), of F8(F2(x_i, x_i+1)), F2 Rosenbrock's term, F8 one-dimensional Griewank.
    Every term is >= 0 and all are 0 only at (1, ..., 1)."""
    y = np.roll(x, -1)
    z = 100.0 * (x * x - y) ** 2 + (x - 1.0) ** 2
    return float(np.sum(z * z / 4000.0 - np.cos(z) + 1.0))


TFT_SPEC = [
    {"parameterName": "learning_rate", "type": "DOUBLE", "minValue": 1e-5, "maxValue": 1e-1,
     "scaleType": "UNIT_LOG_SCALE"},
    {"parameterName": "hidden_size", "type": "INTEGER", "minValue": 16, "maxValue": 512,
     "scaleType": "UNIT_LOG_SCALE"},
    {"parameterName": "attention_heads", "type": "DISCRETE", "discreteValues": [1, 2, 4, 8],
     "scaleType": "UNIT_LOG_SCALE"},
    {"parameterName": "dropout", "type": "DOUBLE", "minValue": 0.0, "maxValue": 0.5,
     "scaleType": "UNIT_LINEAR_SCALE"},
    {"parameterName": "lookback", "type": "INTEGER", "minValue": 24, "maxValue": 336,
     "scaleType": "UNIT_LINEAR_SCALE"},
    {"parameterName": "ema_decay", "type": "DOUBLE", "minValue": 0.9, "maxValue": 0.9999,
     "scaleType": "UNIT_REVERSE_LOG_SCALE"},
    {"parameterName": "normalizer", "type": "CATEGORICAL",
     "categoricalValues": ["standard", "revin", "none"]},
    {"parameterName": "loss", "type": "CATEGORICAL",
     "categoricalValues": ["mse", "mae", "quantile"]},
]
TFT_NORM_SHIFT = {"standard": 0.0, "revin": 0.2, "none": -0.5}
TFT_LOSS_SHIFT = {"mse": 0.0, "mae": 0.3, "quantile": 0.15}
TFT_LOOKBACK = {"standard": 168.0, "revin": 240.0, "none": 96.0}
TFT_NORM_PENALTY = {"standard": 0.02, "revin": 0.0, "none": 0.08}
TFT_LOSS_PENALTY = {"mse": 0.012, "mae": 0.02, "quantile": 0.0}


def _tft_parts(p):
    a = math.log10(float(p["learning_rate"]))
    u = math.log2(float(p["hidden_size"]) / 128.0)
    c = math.log10(1.0 - float(p["ema_decay"])) + 2.0  # 0 at 0.99, -2 at 0.9999
    best = (-3.0 - 0.35 * u - 0.3 * c + TFT_NORM_SHIFT[p["normalizer"]]
            + TFT_LOSS_SHIFT[p["loss"]])
    return a, u, c, best


def tft_surface(p):
    a, u, c, best = _tft_parts(p)
    heads = math.log2(float(p["attention_heads"]))
    norm = p["normalizer"]
    return (0.5 * (1.0 - math.exp(-0.5 * ((a - best) / 0.5) ** 2))
            + 0.015 * (u + 2.0 - heads) ** 2  # log2 of the per-head width, best 32
            + 0.8 * (float(p["dropout"]) - min(max(0.1 + 0.06 * u, 0.0), 0.5)) ** 2
            + 0.03 * ((float(p["lookback"]) - TFT_LOOKBACK[norm]) / 100.0) ** 2
            + 0.03 * c * c + 0.01 * u * u + TFT_NORM_PENALTY[norm] + TFT_LOSS_PENALTY[p["loss"]])


def tft_lr_gap(p):
    a, _, _, best = _tft_parts(p)
    return a - best


SURFACES = {"hpo_mixed5": (HPO_SPEC, hpo_surface, hpo_lr_gap),
            "hpo_mixed6b": (HPO6_SPEC, hpo6_surface, hpo6_lr_gap),
            "hpo_xgb7": (XGB_SPEC, xgb_surface, xgb_lr_gap),
            "hpo_cnn5": (CNN_SPEC, cnn_surface, cnn_lr_gap),
            "hpo_lgbm9": (LGBM_SPEC, lgbm_surface, lgbm_lr_gap),
            "hpo_bert6": (BERT_SPEC, bert_surface, bert_lr_gap),
            "hpo_aug6": (AUG_SPEC, aug_surface, aug_lr_gap),
            "hpo_rnn7": (RNN_SPEC, rnn_surface, rnn_lr_gap),
            "hpo_vit8": (VIT_SPEC, vit_surface, vit_lr_gap),
            "hpo_dqn6": (DQN_SPEC, dqn_surface, dqn_lr_gap),
            "hpo_gnn6": (GNN_SPEC, gnn_surface, gnn_lr_gap),
            "hpo_asr7": (ASR_SPEC, asr_surface, asr_lr_gap),
            "hpo_det8": (DET_SPEC, det_surface, det_lr_gap),
            "hpo_tft8": (TFT_SPEC, tft_surface, tft_lr_gap)}
CURVE_FAMILIES = ("exp", "pow", "crossing", "sigmoid", "step", "twoexp", "overfit", "cosine",
                  "warmup", "restarts", "plateau", "linear", "hetero", "spikes", "cyclic",
                  "doubledescent", "onecycle", "noisyearly", "lrdrop", "latebloom", "divergent",
                  "heavytail")


HEAVYTAIL_DF = 2.5  # the heavytail family's Student-t degrees of freedom


def _exp_shape(r, steps):
    end = math.exp(-r * steps)
    return [(math.exp(-r * t) - end) / (1.0 - end) for t in range(1, steps + 1)]


def curve(surface, family, p, rng, steps=HPO_STEPS, noise=HPO_NOISE):
    """The values a trial with params p reports at steps 1..steps: a curve of `family` (module
    docstring) from about f + 1 down to exactly f = the surface's value, plus N(0, noise^2)."""
    _, surf, gap_fn = SURFACES[surface]
    f = surf(p)
    g = gap_fn(p)
    T = float(steps)
    scale = None  # per-step noise multipliers (noisyearly); None: noise at every step
    if family == "exp" or family == "crossing":
        if family == "exp":
            r = 0.3 * 10.0 ** (0.5 * min(0.0, g))
        else:
            r = min(max(0.15 * 10.0 ** (0.5 * g), 0.01), 1.5)
        end = math.exp(-r * steps)
        shape = [(math.exp(-r * t) - end) / (1.0 - end) for t in range(1, steps + 1)]
    elif family == "pow":
        k = 0.8 * 10.0 ** (0.5 * min(0.0, g))
        end = T ** -k
        shape = [(t ** -k - end) / (1.0 - end) for t in range(1, steps + 1)]
    elif family == "sigmoid":
        centre = T * (0.25 + 0.25 * min(1.0, abs(g)))
        width = T / 15.0

        def s(t):
            return 1.0 / (1.0 + math.exp((t - centre) / width))
        lo, hi = s(T), s(1)
        shape = [(s(t) - lo) / (hi - lo) for t in range(1, steps + 1)]
    elif family == "step":
        e = _exp_shape(0.3 * 10.0 ** (0.5 * min(0.0, g)), steps)
        shape = [0.55 * e[t - 1] + 0.3 * (t < T / 2) + 0.15 * (t < 0.75 * T)
                 for t in range(1, steps + 1)]
    elif family == "twoexp":
        r = 0.3 * 10.0 ** (0.5 * min(0.0, g))
        fast, slow = _exp_shape(2.0 * r, steps), _exp_shape(r / 6.0, steps)
        shape = [0.6 * u + 0.4 * v for u, v in zip(fast, slow)]
    elif family == "overfit":
        e = _exp_shape(min(max(0.15 * 10.0 ** (0.5 * g), 0.01), 1.5), steps)
        h = 0.15 * min(max(1.0 + g, 0.0), 1.0)
        shape = [e[t - 1] - h * 4.0 * (t / T) * (1.0 - t / T) for t in range(1, steps + 1)]
    elif family == "cosine":
        r = 0.3 * 10.0 ** (0.5 * min(0.0, g))
        end = math.exp(-r * T)
        shape = [(math.exp(-r * T * min(1.0, t / T + math.sin(math.pi * t / T) / math.pi)) - end)
                 / (1.0 - end) for t in range(1, steps + 1)]
    elif family == "warmup":
        r = 0.3 * 10.0 ** (0.5 * min(0.0, g))
        w = T / 4.0
        r2 = r * T / (T - w / 2.0)
        end = math.exp(-r2 * (T - w / 2.0))
        h = 0.3 * min(max(g, 0.0), 1.0)

        def spike(t):
            return h * math.exp(-0.5 * ((t - w) / (T / 10.0)) ** 2)
        shape = [(math.exp(-r2 * (t * t / (2.0 * w) if t < w else t - w / 2.0)) - end)
                 / (1.0 - end) + spike(t) - spike(T) * t / T for t in range(1, steps + 1)]
    elif family == "restarts":
        r = 0.3 * 10.0 ** (0.5 * min(0.0, g))
        first = T / 3.0
        bump = 0.1 * (1.0 + min(max(g, 0.0), 1.5))

        def progress(t):  # (integral of the learning rate so far, the learning rate now)
            s, length, done = (0.0, first, 0.0) if t <= first else (first, T - first, first / 2.0)
            u = (t - s) / length
            return (done + length * (u / 2.0 + math.sin(math.pi * u) / (2.0 * math.pi)),
                    (1.0 + math.cos(math.pi * u)) / 2.0)
        r2 = 2.0 * r
        end = math.exp(-r2 * T / 2.0)
        shape = []
        for t in range(1, steps + 1):
            q, lr = progress(float(t))
            shape.append((math.exp(-r2 * q) - end) / (1.0 - end) + bump * lr)
    elif family == "plateau":
        r = 0.3 * 10.0 ** (0.5 * min(0.0, g))
        t0 = T * (0.1 + 0.3 * min(1.0, abs(g)))
        r2 = r * T / (T - t0)
        end = math.exp(-r2 * (T - t0))
        shape = [1.0 - 0.05 * t / t0 if t < t0 else
                 0.95 * (math.exp(-r2 * (t - t0)) - end) / (1.0 - end)
                 for t in range(1, steps + 1)]
    elif family == "linear":
        r = 0.3 * 10.0 ** (0.5 * min(0.0, g))
        r2 = 2.0 * r
        end = math.exp(-r2 * T / 2.0)
        shape = [(math.exp(-r2 * (t - t * t / (2.0 * T))) - end) / (1.0 - end)
                 for t in range(1, steps + 1)]
    elif family == "hetero":
        shape = _exp_shape(0.3 * 10.0 ** (0.5 * min(0.0, g)), steps)
        noise = noise * (1.0 + 4.0 * min(max(g, 0.0), 1.0))
    elif family == "spikes":
        e = _exp_shape(0.3 * 10.0 ** (0.5 * min(0.0, g)), steps)
        hit = rng.random(steps) < 0.1
        size = np.abs(rng.normal(0.0, 0.25, steps))
        shape = [e[t - 1] + (size[t - 1] if hit[t - 1] and t < steps else 0.0)
                 for t in range(1, steps + 1)]
    elif family == "cyclic":
        e = _exp_shape(0.3 * 10.0 ** (0.5 * min(0.0, g)), steps)
        amp = 0.08 * (1.0 + min(max(g, 0.0), 1.0))
        shape = [e[t - 1] + amp * (1.0 - abs(2.0 * ((3.0 * t / T) % 1.0) - 1.0))
                 for t in range(1, steps + 1)]
    elif family == "doubledescent":
        e = _exp_shape(min(max(0.15 * 10.0 ** (0.5 * g), 0.01), 1.5), steps)
        h = 0.25 * min(max(1.0 - abs(g), 0.0), 1.0)

        def hump(t):
            return h * math.exp(-0.5 * ((t - T / 2.0) / (T / 8.0)) ** 2)
        shape = [e[t - 1] + hump(t) - hump(T) * t / T for t in range(1, steps + 1)]
    elif family == "onecycle":
        r = 0.3 * 10.0 ** (0.5 * min(0.0, g))
        w = 0.3 * T

        def lr(t):
            if t < w:
                return 0.1 + 0.9 * t / w
            return (1.0 + math.cos(math.pi * (t - w) / (T - w))) / 2.0
        lrs = [lr(float(t)) for t in range(1, steps + 1)]
        q = np.cumsum(lrs) * (T / 2.0) / sum(lrs)  # the learning rate's sum, q(T) = T/2
        r2 = 2.0 * r
        end = math.exp(-r2 * q[-1])
        amp = 0.12 * (1.0 + min(max(g, 0.0), 1.0))
        shape = [(math.exp(-r2 * q[t - 1]) - end) / (1.0 - end) + amp * lrs[t - 1]
                 - amp * lrs[-1] * t / T for t in range(1, steps + 1)]
    elif family == "noisyearly":
        shape = _exp_shape(0.3 * 10.0 ** (0.5 * min(0.0, g)), steps)
        scale = [1.0 + 4.0 * (1.0 - t / T) ** 2 for t in range(1, steps + 1)]
    elif family == "lrdrop":
        e = _exp_shape(0.3 * 10.0 ** (0.5 * min(0.0, g)), steps)
        c = 0.35 * (1.0 - 0.5 * min(1.0, abs(g)))
        shape = [0.5 * e[t - 1] + c * (t < 0.5 * T) + 0.5 * c * (t < 0.8 * T)
                 for t in range(1, steps + 1)]
    elif family == "latebloom":
        # The plateau family's shape, its length set by the final value: the best start latest.
        r = 0.3 * 10.0 ** (0.5 * min(0.0, g))
        t0 = T * (0.1 + 0.35 * min(max(1.0 - f / 0.3, 0.0), 1.0))
        r2 = r * T / (T - t0)
        end = math.exp(-r2 * (T - t0))
        shape = [1.0 - 0.05 * t / t0 if t < t0 else
                 0.95 * (math.exp(-r2 * (t - t0)) - end) / (1.0 - end)
                 for t in range(1, steps + 1)]
    elif family == "divergent":
        over = min(max(g, 0.0), 1.0)
        e = _exp_shape(0.3 * 10.0 ** (0.5 * min(0.0, g)) * (1.0 + over), steps)
        h = 0.3 * over
        td = T * (0.85 - 0.35 * over)
        k = 5.0

        def blowup(t):  # 0 until td, then exponentially up to 1 at T
            return 0.0 if t <= td else math.expm1(k * ((t - td) / (T - td))) / math.expm1(k)
        shape = [e[t - 1] - h * (1.0 - e[t - 1]) + h * blowup(t) for t in range(1, steps + 1)]
    elif family == "heavytail":
        shape = _exp_shape(0.3 * 10.0 ** (0.5 * min(0.0, g)), steps)
        # Student-t noise (2.5 degrees of freedom, scale `noise`) on every report but the last.
        return [f + v + noise * (rng.standard_t(HEAVYTAIL_DF) if t < steps else rng.normal())
                for t, v in enumerate(shape, 1)]
    else:
        raise ValueError("unknown curve family %r" % family)
    if scale is not None:
        return [f + v + rng.normal(0.0, noise * k) for v, k in zip(shape, scale)]
    return [f + v + rng.normal(0.0, noise) for v in shape]


# ------------------------------------------------------------------------------------------
# The catalogue


class Objective:
    """One benchmark function. spec: ParameterSpecs; goal: what the tuner is asked to do;
    fstar: the optimum of the native (minimised) form; shifted: optimum moved per seed."""

    def __init__(self, name, spec, fn, fstar, goal="MINIMIZE", shift=None):
        self.name, self.spec, self.fn, self.fstar, self.goal = name, spec, fn, fstar, goal
        self.shift = shift  # (native optimum, lo, hi) for shifted functions

    def instance(self, seed):
        return Instance(self, seed)


class Instance:
    """The objective for one seed (shifted functions get their per-seed optimum)."""

    def __init__(self, obj, seed):
        self.obj = obj
        self.offset = None
        if obj.shift is not None:
            native, lo, hi = obj.shift
            rng = np.random.default_rng([seed, zlib.crc32(obj.name.encode())])
            d = len(obj.spec)
            self.optimum = lo + (hi - lo) * (0.1 + 0.8 * rng.random(d))
            self.offset = native - self.optimum  # f(x) = native_fn(x + offset)

    def f(self, params):
        """The native (minimised) value."""
        if self.obj.name in SURFACES:
            return SURFACES[self.obj.name][1](params)
        x = _vec(params, [s["parameterName"] for s in self.obj.spec])
        if self.offset is not None:
            x = x + self.offset
        return self.obj.fn(x)

    def tuner_value(self, f):
        """What the tuner is told: -f for the MAXIMIZE task."""
        return -f if self.obj.goal == "MAXIMIZE" else f

    def regret(self, f):
        """Simple regret f - f*, floored at REGRET_FLOOR; asserts it is not negative."""
        r = f - self.obj.fstar
        assert r >= -1e-9 * max(1.0, abs(self.obj.fstar)), (
            "%s: f = %.17g is below f* = %.17g: wrong f* or a point outside the box" % (
                self.obj.name, f, self.obj.fstar))
        return max(r, REGRET_FLOOR)


def _make():
    objs = [
        Objective("branin2", _box(_xs(2), [-5.0, 0.0], [10.0, 15.0]), branin,
                  5.0 / (4.0 * math.pi)),
        Objective("camel2", _box(_xs(2), [-3.0, -2.0], [3.0, 2.0]), camel, -1.031628453489877),
        Objective("hartmann3", _box(_xs(3), [0.0] * 3, [1.0] * 3),
                  lambda x: hartmann(x, H3_A, H3_P), -3.862779787332663),
        Objective("hartmann6_max", _box(_xs(6), [0.0] * 6, [1.0] * 6),
                  lambda x: hartmann(x, H6_A, H6_P), -3.322368011415515, goal="MAXIMIZE"),
        Objective("rosenbrock4", _box(_xs(4), [-5.0] * 4, [10.0] * 4), rosenbrock, 0.0),
        Objective("ackley5_shift", _box(_xs(5), [-32.768] * 5, [32.768] * 5), ackley, 0.0,
                  shift=(np.zeros(5), -32.768, 32.768)),
        Objective("levy4_shift", _box(_xs(4), [-10.0] * 4, [10.0] * 4), levy, 0.0,
                  shift=(np.ones(4), -10.0, 10.0)),
        Objective("styblinski4", _box(_xs(4), [-5.0] * 4, [5.0] * 4), styblinski,
                  -39.16616570377142 * 4),
        Objective("hpo_mixed5", HPO_SPEC, None, 0.0),
    ]
    held_out = [
        Objective("shekel4", _box(_xs(4), [0.0] * 4, [10.0] * 4), shekel, -10.536409816692046),
        Objective("dixonprice4", _box(_xs(4), [-10.0] * 4, [10.0] * 4), dixonprice, 0.0),
        Objective("hpo_mixed6b", HPO6_SPEC, None, 0.0),
    ]
    final = [
        Objective("powell4", _box(_xs(4), [-4.0] * 4, [5.0] * 4), powell, 0.0),
        Objective("colville4", _box(_xs(4), [-10.0] * 4, [10.0] * 4), colville, 0.0),
        Objective("hpo_xgb7", XGB_SPEC, None, 0.0),
        Objective("hpo_cnn5", CNN_SPEC, None, 0.0),
    ]
    third = [
        Objective("hpo_lgbm9", LGBM_SPEC, None, 0.0),
        Objective("hpo_bert6", BERT_SPEC, None, 0.0),
        Objective("hpo_aug6", AUG_SPEC, None, 0.0),
    ]
    fourth = [
        Objective("goldstein2", _box(_xs(2), [-2.0, -2.0], [2.0, 2.0]), goldstein, 3.0),
        Objective("rastrigin3_shift", _box(_xs(3), [-5.12] * 3, [5.12] * 3), rastrigin, 0.0,
                  shift=(np.zeros(3), -5.12, 5.12)),
        Objective("hpo_rnn7", RNN_SPEC, None, 0.0),
        Objective("hpo_vit8", VIT_SPEC, None, 0.0),
        Objective("hpo_dqn6", DQN_SPEC, None, 0.0),
    ]
    fifth = [
        Objective("griewank4_shift", _box(_xs(4), [-20.0] * 4, [20.0] * 4), griewank, 0.0,
                  shift=(np.zeros(4), -20.0, 20.0)),
        Objective("hpo_gnn6", GNN_SPEC, None, 0.0),
    ]
    sixth = [
        Objective("alpine4_shift", _box(_xs(4), [-10.0] * 4, [10.0] * 4), alpine, 0.0,
                  shift=(np.zeros(4), -10.0, 10.0)),
        Objective("salomon3_shift", _box(_xs(3), [-10.0] * 3, [10.0] * 3), salomon, 0.0,
                  shift=(np.zeros(3), -10.0, 10.0)),
        Objective("trid4", _box(_xs(4), [-16.0] * 4, [16.0] * 4), trid, -16.0),
        Objective("hpo_asr7", ASR_SPEC, None, 0.0),
    ]
    seventh = [
        Objective("zakharov4_shift", _box(_xs(4), [-5.0] * 4, [10.0] * 4), zakharov, 0.0,
                  shift=(np.zeros(4), -5.0, 10.0)),
        Objective("shubert2", _box(_xs(2), [-10.0] * 2, [10.0] * 2), shubert, -186.7309088310239),
        Objective("qing3", _box(_xs(3), [-3.0] * 3, [3.0] * 3), qing, 0.0),
        Objective("hpo_det8", DET_SPEC, None, 0.0),
    ]
    eighth = [
        Objective("michalewicz5", _box(_xs(5), [0.0] * 5, [math.pi] * 5), michalewicz,
                  MICHALEWICZ5_FSTAR),
        Objective("schwefel3", _box(_xs(3), [-500.0] * 3, [500.0] * 3), schwefel,
                  3 * (418.9829 - SCHWEFEL_PEAK)),
        Objective("griewrosen4_shift", _box(_xs(4), [-5.0] * 4, [5.0] * 4), griewank_rosenbrock,
                  0.0, shift=(np.ones(4), -5.0, 5.0)),
        Objective("hpo_tft8", TFT_SPEC, None, 0.0),
    ]
    return ({o.name: o for o in objs}, [o.name for o in held_out], [o.name for o in final],
            [o.name for o in third], [o.name for o in fourth], [o.name for o in fifth],
            [o.name for o in sixth], [o.name for o in seventh], [o.name for o in eighth],
            {o.name: o for o in held_out + final + third + fourth + fifth + sixth + seventh
             + eighth})


(OBJECTIVES, HELD_OUT, FINAL, THIRD, FOURTH, FIFTH, SIXTH, SEVENTH, EIGHTH,
 _HELD) = _make()
CORE = list(OBJECTIVES)
OBJECTIVES.update(_HELD)

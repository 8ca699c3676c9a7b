// The single-process reference for tests of the Transformer language model: a plain loop over
// std::vector<double>, written without meshpp (and without xtensor or BLAS), so that the library's
// model can be checked against something that shares none of its code.
//
// THE MODEL: a pre-layer-norm decoder-only Transformer. Every array is row-major, its dims in the
// order given. Sizes: batch B, length L (sequence), d_model D, heads H, d_k K, d_v V, d_ff F,
// vocab N, and the number of layers.
//
// Parameters (inputs; nothing here initialises them):
//   embedding [N, D], positions [L, D]
//   per layer: ln1_scale [D], ln1_bias [D], wq [D, H, K], wk [D, H, K], wv [D, H, V],
//              wo [H, V, D], ln2_scale [D], ln2_bias [D], w1 [D, F], b1 [F], w2 [F, D], b2 [D]
//   final_scale [D], final_bias [D], w_out [D, N]
// Inputs: ids [B, L] and targets [B, L], int32 in [0, N).
//
// layer_norm(x) over D: (x - mean) / sqrt(var + 1e-5) * scale + bias, var the biased variance
// (the mean of the squared deviations).
//
// Forward:
//   x[b,l,:] = embedding[ids[b,l], :] + positions[l, :]
//   for each layer:
//     h = layer_norm(x; ln1)
//     q[b,l,h,k] = sum_d h[b,l,d] wq[d,h,k]; k[b,m,h,k] likewise with wk (m is the key
//       position, same range as l); v[b,m,h,v] with wv
//     s[b,h,l,m] = sum_k q[b,l,h,k] k[b,m,h,k] / sqrt(K)
//     causal (option, default on): s = -infinity where m > l (the softmax gives those weight 0)
//     p = softmax over m of s
//     o[b,l,h,v] = sum_m p[b,h,l,m] v[b,m,h,v]
//     a[b,l,d] = sum_{h,v} o[b,l,h,v] wo[h,v,d]
//     x = x + a
//     h2 = layer_norm(x; ln2)
//     f = relu(h2 w1 + b1)   [B, L, F]
//     x = x + (f w2 + b2)
//   hf = layer_norm(x; final)
//   logits[b,l,n] = sum_d hf[b,l,d] w_out[d,n]
//   loss = mean over (b,l) of (logsumexp_n logits[b,l,n] - logits[b,l,targets[b,l]])
//
// Backward: `gradient` is reverse mode written by hand through every step above (relu'(0) is
// taken as 0). Checked against central differences (h = 1e-6) at B=2, L=5, D=8, H=2, K=3, V=3
// (and 4), F=12, N=11, 0 and 2 layers, parameters ~ N(0, 0.5), causal and not, three seeds:
// |fd - grad| <= 8e-10 on every element, i.e. relative error < 1e-6 wherever |grad| >= 1e-3
// (below that the difference quotient's own rounding, ~1e-16 / h, dominates); a 5-point stencil
// (h = 1e-3, away from relu kinks) agrees to < 1e-6 relative down to |grad| ~ 1e-7.
//
// Usage:
//   namespace rt = meshpp_test::reference_transformer;
//   rt::config cfg{.batch = 2, .length = 5, .d_model = 8, .heads = 2, .d_k = 3, .d_v = 3,
//                  .d_ff = 12, .vocab = 11, .layers = 2};
//   rt::params p = rt::zeros(cfg);   // then fill every array
//   double want = rt::loss(cfg, p, ids, targets);
//   rt::params grad = rt::gradient(cfg, p, ids, targets);
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace meshpp_test::reference_transformer {

using array = std::vector<double>;
using tokens = std::vector<std::int32_t>;

inline constexpr double layer_norm_epsilon = 1e-5;

// config: the sizes of the model, and whether attention is causal
struct config {
  std::size_t batch, length, d_model, heads, d_k, d_v, d_ff, vocab, layers;
  bool causal = true;
};

// layer_params: one layer's parameters (shapes in the header comment)
struct layer_params {
  array ln1_scale, ln1_bias, wq, wk, wv, wo, ln2_scale, ln2_bias, w1, b1, w2, b2;
};

// params: all the model's parameters; also the type of their gradients
struct params {
  array embedding, positions;
  std::vector<layer_params> layers;
  array final_scale, final_bias, w_out;
};

// ---------------------------------------------------------------------------------------------
// Building blocks. `rows` counts the leading dims flattened together; each row holds n values.
// ---------------------------------------------------------------------------------------------

// matmul(a, b, rows, inner, cols): [rows, inner] x [inner, cols] -> [rows, cols]
inline array matmul(const array& a, const array& b, std::size_t rows, std::size_t inner,
                    std::size_t cols) {
  array c(rows * cols, 0.0);
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < inner; ++j) {
      const double aij = a[i * inner + j];
      for (std::size_t k = 0; k < cols; ++k) c[i * cols + k] += aij * b[j * cols + k];
    }
  }
  return c;
}

// add_bias_rows(x, rows, n, bias): x[r, i] + bias[i]
inline array add_bias_rows(array x, std::size_t rows, std::size_t n, const array& bias) {
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t i = 0; i < n; ++i) x[r * n + i] += bias[i];
  }
  return x;
}

// relu(x): max(x, 0) element by element
inline array relu(array x) {
  for (double& v : x) v = std::max(v, 0.0);
  return x;
}

// layer_norm(x, rows, d, scale, bias, eps): each row of d values normalised to mean 0 and
// (biased) variance 1, then scaled and shifted
inline array layer_norm(const array& x, std::size_t rows, std::size_t d, const array& scale,
                        const array& bias, double eps = layer_norm_epsilon) {
  array y(rows * d);
  for (std::size_t r = 0; r < rows; ++r) {
    const double* row = &x[r * d];
    double mean = 0;
    for (std::size_t i = 0; i < d; ++i) mean += row[i];
    mean /= static_cast<double>(d);
    double var = 0;
    for (std::size_t i = 0; i < d; ++i) var += (row[i] - mean) * (row[i] - mean);
    var /= static_cast<double>(d);
    const double inv_std = 1.0 / std::sqrt(var + eps);
    for (std::size_t i = 0; i < d; ++i) {
      y[r * d + i] = (row[i] - mean) * inv_std * scale[i] + bias[i];
    }
  }
  return y;
}

// row_max(x, r, n): the largest of row r's n values (-infinity for a row of -infinity)
inline double row_max(const array& x, std::size_t r, std::size_t n) {
  double m = -std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < n; ++i) m = std::max(m, x[r * n + i]);
  return m;
}

// logsumexp_rows(x, rows, n): [rows, n] -> [rows], log sum_i exp(x[r, i]), the row max
// subtracted first so that nothing overflows
inline array logsumexp_rows(const array& x, std::size_t rows, std::size_t n) {
  array out(rows);
  for (std::size_t r = 0; r < rows; ++r) {
    const double m = row_max(x, r, n);
    double sum = 0;
    for (std::size_t i = 0; i < n; ++i) sum += std::exp(x[r * n + i] - m);
    out[r] = m + std::log(sum);
  }
  return out;
}

// softmax_rows(x, rows, n): exp(x[r, i] - max_r) / sum_i exp(x[r, i] - max_r); an entry of
// -infinity gets weight exactly 0 (a row must have at least one finite entry)
inline array softmax_rows(const array& x, std::size_t rows, std::size_t n) {
  array p(rows * n);
  for (std::size_t r = 0; r < rows; ++r) {
    const double m = row_max(x, r, n);
    double sum = 0;
    for (std::size_t i = 0; i < n; ++i) {
      p[r * n + i] = std::exp(x[r * n + i] - m);
      sum += p[r * n + i];
    }
    for (std::size_t i = 0; i < n; ++i) p[r * n + i] /= sum;
  }
  return p;
}

// log_softmax_rows(x, rows, n): x[r, i] - logsumexp_i x[r, i]
inline array log_softmax_rows(const array& x, std::size_t rows, std::size_t n) {
  const array lse = logsumexp_rows(x, rows, n);
  array out(rows * n);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t i = 0; i < n; ++i) out[r * n + i] = x[r * n + i] - lse[r];
  }
  return out;
}

// argmax_rows(x, rows, n): [rows, n] -> [rows], the index of each row's largest value (ties:
// the lowest index)
inline std::vector<std::size_t> argmax_rows(const array& x, std::size_t rows, std::size_t n) {
  std::vector<std::size_t> out(rows, 0);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t i = 1; i < n; ++i) {
      if (x[r * n + i] > x[r * n + out[r]]) out[r] = i;
    }
  }
  return out;
}

// attention_scores(q, k, B, L, H, K, causal): q, k [B, L, H, K] -> s [B, H, L, M = L],
// q.k / sqrt(K), and -infinity where m > l if causal
inline array attention_scores(const array& q, const array& k, std::size_t B, std::size_t L,
                              std::size_t H, std::size_t K, bool causal) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(K));
  array s(B * H * L * L);
  for (std::size_t b = 0; b < B; ++b) {
    for (std::size_t h = 0; h < H; ++h) {
      for (std::size_t l = 0; l < L; ++l) {
        for (std::size_t m = 0; m < L; ++m) {
          double& out = s[((b * H + h) * L + l) * L + m];
          if (causal && m > l) {
            out = -std::numeric_limits<double>::infinity();
            continue;
          }
          double dot = 0;
          for (std::size_t i = 0; i < K; ++i) {
            dot += q[((b * L + l) * H + h) * K + i] * k[((b * L + m) * H + h) * K + i];
          }
          out = dot * scale;
        }
      }
    }
  }
  return s;
}

// attention_probabilities(q, k, B, L, H, K, causal): p [B, H, L, M], the softmax over m of the
// scores
inline array attention_probabilities(const array& q, const array& k, std::size_t B, std::size_t L,
                                     std::size_t H, std::size_t K, bool causal) {
  return softmax_rows(attention_scores(q, k, B, L, H, K, causal), B * H * L, L);
}

// attend(p, v, B, L, H, V): p [B, H, L, M], v [B, M, H, V] -> o [B, L, H, V],
// sum_m p[b,h,l,m] v[b,m,h,v]
inline array attend(const array& p, const array& v, std::size_t B, std::size_t L, std::size_t H,
                    std::size_t V) {
  array o(B * L * H * V, 0.0);
  for (std::size_t b = 0; b < B; ++b) {
    for (std::size_t h = 0; h < H; ++h) {
      for (std::size_t l = 0; l < L; ++l) {
        for (std::size_t m = 0; m < L; ++m) {
          const double weight = p[((b * H + h) * L + l) * L + m];
          for (std::size_t i = 0; i < V; ++i) {
            o[((b * L + l) * H + h) * V + i] += weight * v[((b * L + m) * H + h) * V + i];
          }
        }
      }
    }
  }
  return o;
}

// attention(q, k, v, B, L, H, K, V, causal): q, k [B, L, H, K], v [B, L, H, V] -> o [B, L, H, V]
inline array attention(const array& q, const array& k, const array& v, std::size_t B, std::size_t L,
                       std::size_t H, std::size_t K, std::size_t V, bool causal) {
  return attend(attention_probabilities(q, k, B, L, H, K, causal), v, B, L, H, V);
}

// ---------------------------------------------------------------------------------------------
// The model
// ---------------------------------------------------------------------------------------------

namespace detail {

// require(ok, what): throws std::invalid_argument("reference_transformer::" + what) unless ok
inline void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("reference_transformer::" + what);
}

// require_size(a, name, want, formula): a has want values, or an error naming a and its shape
inline void require_size(const array& a, const std::string& name, std::size_t want,
                         const char* shape) {
  require(a.size() == want, "check: " + name + " has " + std::to_string(a.size()) +
                                " values, want " + std::to_string(want) + " = " + shape);
}

}  // namespace detail

// check(cfg, p): every size of cfg positive (layers may be 0), and every array of p the size
// its shape gives; throws std::invalid_argument naming the first one that is not
inline void check(const config& cfg, const params& p) {
  using detail::require;
  using detail::require_size;
  require(cfg.batch > 0 && cfg.length > 0 && cfg.d_model > 0 && cfg.heads > 0 && cfg.d_k > 0 &&
              cfg.d_v > 0 && cfg.d_ff > 0 && cfg.vocab > 0,
          "check: every size of the config but layers must be positive");
  const std::size_t D = cfg.d_model, H = cfg.heads, K = cfg.d_k, V = cfg.d_v, F = cfg.d_ff,
                    N = cfg.vocab, L = cfg.length;
  require_size(p.embedding, "embedding", N * D, "[N, D]");
  require_size(p.positions, "positions", L * D, "[L, D]");
  require(p.layers.size() == cfg.layers, "check: layers has " + std::to_string(p.layers.size()) +
                                             " entries, want " + std::to_string(cfg.layers));
  for (std::size_t i = 0; i < p.layers.size(); ++i) {
    const layer_params& w = p.layers[i];
    const std::string at = "layers[" + std::to_string(i) + "].";
    require_size(w.ln1_scale, at + "ln1_scale", D, "[D]");
    require_size(w.ln1_bias, at + "ln1_bias", D, "[D]");
    require_size(w.wq, at + "wq", D * H * K, "[D, H, K]");
    require_size(w.wk, at + "wk", D * H * K, "[D, H, K]");
    require_size(w.wv, at + "wv", D * H * V, "[D, H, V]");
    require_size(w.wo, at + "wo", H * V * D, "[H, V, D]");
    require_size(w.ln2_scale, at + "ln2_scale", D, "[D]");
    require_size(w.ln2_bias, at + "ln2_bias", D, "[D]");
    require_size(w.w1, at + "w1", D * F, "[D, F]");
    require_size(w.b1, at + "b1", F, "[F]");
    require_size(w.w2, at + "w2", F * D, "[F, D]");
    require_size(w.b2, at + "b2", D, "[D]");
  }
  require_size(p.final_scale, "final_scale", D, "[D]");
  require_size(p.final_bias, "final_bias", D, "[D]");
  require_size(p.w_out, "w_out", D * N, "[D, N]");
}

// check_tokens(cfg, t, name): t holds B * L values, each in [0, N); throws
// std::invalid_argument naming t otherwise
inline void check_tokens(const config& cfg, const tokens& t, const std::string& name) {
  detail::require(t.size() == cfg.batch * cfg.length,
                  "check_tokens: " + name + " has " + std::to_string(t.size()) + " values, want " +
                      std::to_string(cfg.batch * cfg.length) + " = [B, L]");
  for (std::size_t i = 0; i < t.size(); ++i) {
    detail::require(t[i] >= 0 && static_cast<std::size_t>(t[i]) < cfg.vocab,
                    "check_tokens: " + name + "[" + std::to_string(i) + "] is " +
                        std::to_string(t[i]) + ", not in [0, " + std::to_string(cfg.vocab) + ")");
  }
}

// zeros(cfg): parameters of cfg's shapes, every value 0 (fill them in, or accumulate into them)
inline params zeros(const config& cfg) {
  const std::size_t D = cfg.d_model, H = cfg.heads, K = cfg.d_k, V = cfg.d_v, F = cfg.d_ff,
                    N = cfg.vocab, L = cfg.length;
  params p;
  p.embedding.assign(N * D, 0.0);
  p.positions.assign(L * D, 0.0);
  p.layers.resize(cfg.layers);
  for (layer_params& w : p.layers) {
    w.ln1_scale.assign(D, 0.0);
    w.ln1_bias.assign(D, 0.0);
    w.wq.assign(D * H * K, 0.0);
    w.wk.assign(D * H * K, 0.0);
    w.wv.assign(D * H * V, 0.0);
    w.wo.assign(H * V * D, 0.0);
    w.ln2_scale.assign(D, 0.0);
    w.ln2_bias.assign(D, 0.0);
    w.w1.assign(D * F, 0.0);
    w.b1.assign(F, 0.0);
    w.w2.assign(F * D, 0.0);
    w.b2.assign(D, 0.0);
  }
  p.final_scale.assign(D, 0.0);
  p.final_bias.assign(D, 0.0);
  p.w_out.assign(D * N, 0.0);
  return p;
}

// for_each_array(p, f): f(name, array) for every array of p (const or not), in declaration
// order, named as check names them ("embedding", "layers[1].wq", ...)
template <class Params, class F>
requires std::is_same_v<std::remove_const_t<Params>, params>
void for_each_array(Params& p, F&& f) {
  f(std::string("embedding"), p.embedding);
  f(std::string("positions"), p.positions);
  for (std::size_t i = 0; i < p.layers.size(); ++i) {
    auto& w = p.layers[i];
    const std::string at = "layers[" + std::to_string(i) + "].";
    f(at + "ln1_scale", w.ln1_scale);
    f(at + "ln1_bias", w.ln1_bias);
    f(at + "wq", w.wq);
    f(at + "wk", w.wk);
    f(at + "wv", w.wv);
    f(at + "wo", w.wo);
    f(at + "ln2_scale", w.ln2_scale);
    f(at + "ln2_bias", w.ln2_bias);
    f(at + "w1", w.w1);
    f(at + "b1", w.b1);
    f(at + "w2", w.w2);
    f(at + "b2", w.b2);
  }
  f(std::string("final_scale"), p.final_scale);
  f(std::string("final_bias"), p.final_bias);
  f(std::string("w_out"), p.w_out);
}

// layer_record: one layer's intermediates, named as in the header comment (rows are (b, l))
struct layer_record {
  array x_in;     // [B, L, D]     the layer's input
  array h;        // [B, L, D]     layer_norm(x_in; ln1)
  array q, k, v;  // [B, L, H, K], [B, L, H, K], [B, L, H, V]
  array p;        // [B, H, L, M]  attention probabilities
  array o;        // [B, L, H, V]
  array x_mid;    // [B, L, D]     x_in + a
  array h2;       // [B, L, D]     layer_norm(x_mid; ln2)
  array f_pre;    // [B, L, F]     h2 w1 + b1, before the relu
  array f;        // [B, L, F]     relu(f_pre)
  array x_out;    // [B, L, D]     x_mid + f w2 + b2
};

// forward_record: every intermediate of the forward pass
struct forward_record {
  array x0;                          // [B, L, D]  embedding + positions
  std::vector<layer_record> layers;  // one per layer
  array hf;                          // [B, L, D]  layer_norm(last x; final)
  array logits;                      // [B, L, N]
};

// forward(cfg, p, ids): the forward pass, keeping every intermediate (checks cfg, p and ids)
inline forward_record forward(const config& cfg, const params& p, const tokens& ids) {
  check(cfg, p);
  check_tokens(cfg, ids, "ids");
  const std::size_t B = cfg.batch, L = cfg.length, D = cfg.d_model, H = cfg.heads, K = cfg.d_k,
                    V = cfg.d_v, F = cfg.d_ff, N = cfg.vocab, rows = B * L;
  forward_record r;
  r.x0.resize(rows * D);
  for (std::size_t b = 0; b < B; ++b) {
    for (std::size_t l = 0; l < L; ++l) {
      const auto id = static_cast<std::size_t>(ids[b * L + l]);
      for (std::size_t d = 0; d < D; ++d) {
        r.x0[(b * L + l) * D + d] = p.embedding[id * D + d] + p.positions[l * D + d];
      }
    }
  }
  const array* x = &r.x0;
  r.layers.resize(cfg.layers);
  for (std::size_t i = 0; i < cfg.layers; ++i) {
    const layer_params& w = p.layers[i];
    layer_record& t = r.layers[i];
    t.x_in = *x;
    t.h = layer_norm(t.x_in, rows, D, w.ln1_scale, w.ln1_bias);
    // wq [D, H, K] is [D, H*K] and q [B, L, H, K] is [B*L, H*K]: each projection is one matmul
    t.q = matmul(t.h, w.wq, rows, D, H * K);
    t.k = matmul(t.h, w.wk, rows, D, H * K);
    t.v = matmul(t.h, w.wv, rows, D, H * V);
    t.p = attention_probabilities(t.q, t.k, B, L, H, K, cfg.causal);
    t.o = attend(t.p, t.v, B, L, H, V);
    const array a = matmul(t.o, w.wo, rows, H * V, D);
    t.x_mid = t.x_in;
    for (std::size_t j = 0; j < t.x_mid.size(); ++j) t.x_mid[j] += a[j];
    t.h2 = layer_norm(t.x_mid, rows, D, w.ln2_scale, w.ln2_bias);
    t.f_pre = add_bias_rows(matmul(t.h2, w.w1, rows, D, F), rows, F, w.b1);
    t.f = relu(t.f_pre);
    const array g = add_bias_rows(matmul(t.f, w.w2, rows, F, D), rows, D, w.b2);
    t.x_out = t.x_mid;
    for (std::size_t j = 0; j < t.x_out.size(); ++j) t.x_out[j] += g[j];
    x = &t.x_out;
  }
  r.hf = layer_norm(*x, rows, D, p.final_scale, p.final_bias);
  r.logits = matmul(r.hf, p.w_out, rows, D, N);
  return r;
}

// logits(cfg, p, ids): [B, L, N]
inline array logits(const config& cfg, const params& p, const tokens& ids) {
  return forward(cfg, p, ids).logits;
}

// attention_probabilities(cfg, p, ids, layer): p [B, H, L, M] of that layer (0 unless given)
inline array attention_probabilities(const config& cfg, const params& p, const tokens& ids,
                                     std::size_t layer = 0) {
  detail::require(layer < cfg.layers, "attention_probabilities: layer " + std::to_string(layer) +
                                          " of " + std::to_string(cfg.layers));
  return forward(cfg, p, ids).layers[layer].p;
}

// cross_entropy(logits, rows, n, targets): the mean over rows of logsumexp - logit[target]
inline double cross_entropy(const array& logits, std::size_t rows, std::size_t n,
                            const tokens& targets) {
  const array lse = logsumexp_rows(logits, rows, n);
  double total = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    total += lse[r] - logits[r * n + static_cast<std::size_t>(targets[r])];
  }
  return total / static_cast<double>(rows);
}

// loss(cfg, p, ids, targets): the mean cross entropy of the logits against targets
inline double loss(const config& cfg, const params& p, const tokens& ids, const tokens& targets) {
  check_tokens(cfg, targets, "targets");
  return cross_entropy(logits(cfg, p, ids), cfg.batch * cfg.length, cfg.vocab, targets);
}

// ---------------------------------------------------------------------------------------------
// Backward building blocks: each takes the forward inputs and the gradient of the output (d...),
// and returns the gradients of the inputs.
// ---------------------------------------------------------------------------------------------

// matmul_gradients: of c = a b, a [rows, inner], b [inner, cols]
struct matmul_gradients {
  array da;  // [rows, inner]  dc b^T
  array db;  // [inner, cols]  a^T dc
};

// matmul_backward(a, b, dc, rows, inner, cols): the gradients of a and b for c = a b
inline matmul_gradients matmul_backward(const array& a, const array& b, const array& dc,
                                        std::size_t rows, std::size_t inner, std::size_t cols) {
  matmul_gradients g{array(rows * inner, 0.0), array(inner * cols, 0.0)};
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < inner; ++j) {
      for (std::size_t k = 0; k < cols; ++k) {
        g.da[i * inner + j] += dc[i * cols + k] * b[j * cols + k];
        g.db[j * cols + k] += a[i * inner + j] * dc[i * cols + k];
      }
    }
  }
  return g;
}

// sum_rows(x, rows, n): [rows, n] -> [n], the gradient of a bias added to every row
inline array sum_rows(const array& x, std::size_t rows, std::size_t n) {
  array out(n, 0.0);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t i = 0; i < n; ++i) out[i] += x[r * n + i];
  }
  return out;
}

// relu_backward(x, dy): dy where x > 0, else 0
inline array relu_backward(const array& x, array dy) {
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (!(x[i] > 0)) dy[i] = 0;
  }
  return dy;
}

// layer_norm_gradients: of y = layer_norm(x, rows, d, scale, bias)
struct layer_norm_gradients {
  array dx;      // [rows, d]
  array dscale;  // [d]
  array dbias;   // [d]
};

// layer_norm_backward(x, rows, d, scale, dy, eps): with xhat = (x - mean) * inv_std and
// g = dy * scale, dx = inv_std * (g - mean(g) - xhat * mean(g * xhat)) row by row
inline layer_norm_gradients layer_norm_backward(const array& x, std::size_t rows, std::size_t d,
                                                const array& scale, const array& dy,
                                                double eps = layer_norm_epsilon) {
  layer_norm_gradients g{array(rows * d), array(d, 0.0), array(d, 0.0)};
  array xhat(d), gxhat(d);
  const double n = static_cast<double>(d);
  for (std::size_t r = 0; r < rows; ++r) {
    const double* row = &x[r * d];
    const double* drow = &dy[r * d];
    double mean = 0;
    for (std::size_t i = 0; i < d; ++i) mean += row[i];
    mean /= n;
    double var = 0;
    for (std::size_t i = 0; i < d; ++i) var += (row[i] - mean) * (row[i] - mean);
    var /= n;
    const double inv_std = 1.0 / std::sqrt(var + eps);
    double mean_g = 0, mean_g_xhat = 0;
    for (std::size_t i = 0; i < d; ++i) {
      xhat[i] = (row[i] - mean) * inv_std;
      gxhat[i] = drow[i] * scale[i];
      mean_g += gxhat[i];
      mean_g_xhat += gxhat[i] * xhat[i];
      g.dscale[i] += drow[i] * xhat[i];
      g.dbias[i] += drow[i];
    }
    mean_g /= n;
    mean_g_xhat /= n;
    for (std::size_t i = 0; i < d; ++i) {
      g.dx[r * d + i] = inv_std * (gxhat[i] - mean_g - xhat[i] * mean_g_xhat);
    }
  }
  return g;
}

// softmax_rows_backward(p, dp, rows, n): the gradient of the scores s for p = softmax_rows(s),
// p[i] * (dp[i] - sum_j p[j] dp[j]) (0 where p is 0, as at masked scores)
inline array softmax_rows_backward(const array& p, const array& dp, std::size_t rows,
                                   std::size_t n) {
  array ds(rows * n);
  for (std::size_t r = 0; r < rows; ++r) {
    double dot = 0;
    for (std::size_t i = 0; i < n; ++i) dot += p[r * n + i] * dp[r * n + i];
    for (std::size_t i = 0; i < n; ++i) ds[r * n + i] = p[r * n + i] * (dp[r * n + i] - dot);
  }
  return ds;
}

// attention_gradients: of o = attention(q, k, v, ...)
struct attention_gradients {
  array dq;  // [B, L, H, K]
  array dk;  // [B, L, H, K]
  array dv;  // [B, L, H, V]
};

// attention_backward(q, k, v, p, do_, B, L, H, K, V): the gradients of q, k and v, given the
// forward probabilities p [B, H, L, M] (masking needs no flag here: masked p are exactly 0)
inline attention_gradients attention_backward(const array& q, const array& k, const array& v,
                                              const array& p, const array& do_, std::size_t B,
                                              std::size_t L, std::size_t H, std::size_t K,
                                              std::size_t V) {
  attention_gradients g{array(q.size(), 0.0), array(k.size(), 0.0), array(v.size(), 0.0)};
  // o = p v:  dp[b,h,l,m] = sum_v do[b,l,h,v] v[b,m,h,v];  dv[b,m,h,v] += p[b,h,l,m] do[b,l,h,v]
  array dp(p.size(), 0.0);
  for (std::size_t b = 0; b < B; ++b) {
    for (std::size_t h = 0; h < H; ++h) {
      for (std::size_t l = 0; l < L; ++l) {
        for (std::size_t m = 0; m < L; ++m) {
          const std::size_t pi = ((b * H + h) * L + l) * L + m;
          for (std::size_t i = 0; i < V; ++i) {
            const double d_o = do_[((b * L + l) * H + h) * V + i];
            dp[pi] += d_o * v[((b * L + m) * H + h) * V + i];
            g.dv[((b * L + m) * H + h) * V + i] += p[pi] * d_o;
          }
        }
      }
    }
  }
  const array ds = softmax_rows_backward(p, dp, B * H * L, L);
  // s = q k / sqrt(K):  dq[b,l,h,:] += ds k[b,m,h,:] / sqrt(K);  dk[b,m,h,:] += ds q[b,l,h,:] / ..
  const double scale = 1.0 / std::sqrt(static_cast<double>(K));
  for (std::size_t b = 0; b < B; ++b) {
    for (std::size_t h = 0; h < H; ++h) {
      for (std::size_t l = 0; l < L; ++l) {
        for (std::size_t m = 0; m < L; ++m) {
          const double d_s = ds[((b * H + h) * L + l) * L + m] * scale;
          for (std::size_t i = 0; i < K; ++i) {
            g.dq[((b * L + l) * H + h) * K + i] += d_s * k[((b * L + m) * H + h) * K + i];
            g.dk[((b * L + m) * H + h) * K + i] += d_s * q[((b * L + l) * H + h) * K + i];
          }
        }
      }
    }
  }
  return g;
}

// cross_entropy_backward(logits, rows, n, targets): the gradient of cross_entropy with respect
// to the logits, (softmax - one_hot(target)) / rows
inline array cross_entropy_backward(const array& logits, std::size_t rows, std::size_t n,
                                    const tokens& targets) {
  array d = softmax_rows(logits, rows, n);
  for (std::size_t r = 0; r < rows; ++r) d[r * n + static_cast<std::size_t>(targets[r])] -= 1.0;
  for (double& v : d) v /= static_cast<double>(rows);
  return d;
}

// gradient(cfg, p, ids, targets): d loss / d every parameter, by reverse mode through the
// forward pass (a params holding the gradients, shaped as p)
inline params gradient(const config& cfg, const params& p, const tokens& ids,
                       const tokens& targets) {
  check_tokens(cfg, targets, "targets");
  const forward_record r = forward(cfg, p, ids);
  const std::size_t B = cfg.batch, L = cfg.length, D = cfg.d_model, H = cfg.heads, K = cfg.d_k,
                    V = cfg.d_v, F = cfg.d_ff, N = cfg.vocab, rows = B * L;
  params grad = zeros(cfg);

  // logits = hf w_out, hf = layer_norm(x; final)
  const array dlogits = cross_entropy_backward(r.logits, rows, N, targets);
  const matmul_gradients out = matmul_backward(r.hf, p.w_out, dlogits, rows, D, N);
  grad.w_out = out.db;
  const array& x_last = cfg.layers == 0 ? r.x0 : r.layers.back().x_out;
  layer_norm_gradients final_ln = layer_norm_backward(x_last, rows, D, p.final_scale, out.da);
  grad.final_scale = final_ln.dscale;
  grad.final_bias = final_ln.dbias;
  array dx = final_ln.dx;  // d loss / d the residual stream, carried down through the layers

  for (std::size_t i = cfg.layers; i-- > 0;) {
    const layer_params& w = p.layers[i];
    const layer_record& t = r.layers[i];
    layer_params& gw = grad.layers[i];

    // x_out = x_mid + relu(h2 w1 + b1) w2 + b2
    gw.b2 = sum_rows(dx, rows, D);
    const matmul_gradients ff2 = matmul_backward(t.f, w.w2, dx, rows, F, D);
    gw.w2 = ff2.db;
    const array df_pre = relu_backward(t.f_pre, ff2.da);
    gw.b1 = sum_rows(df_pre, rows, F);
    const matmul_gradients ff1 = matmul_backward(t.h2, w.w1, df_pre, rows, D, F);
    gw.w1 = ff1.db;
    const layer_norm_gradients ln2 = layer_norm_backward(t.x_mid, rows, D, w.ln2_scale, ff1.da);
    gw.ln2_scale = ln2.dscale;
    gw.ln2_bias = ln2.dbias;
    for (std::size_t j = 0; j < dx.size(); ++j) dx[j] += ln2.dx[j];  // now d / d x_mid

    // x_mid = x_in + attention(h wq, h wk, h wv) wo
    const matmul_gradients proj = matmul_backward(t.o, w.wo, dx, rows, H * V, D);
    gw.wo = proj.db;
    const attention_gradients att = attention_backward(t.q, t.k, t.v, t.p, proj.da, B, L, H, K, V);
    const matmul_gradients gq = matmul_backward(t.h, w.wq, att.dq, rows, D, H * K);
    const matmul_gradients gk = matmul_backward(t.h, w.wk, att.dk, rows, D, H * K);
    const matmul_gradients gv = matmul_backward(t.h, w.wv, att.dv, rows, D, H * V);
    gw.wq = gq.db;
    gw.wk = gk.db;
    gw.wv = gv.db;
    array dh(rows * D);
    for (std::size_t j = 0; j < dh.size(); ++j) dh[j] = gq.da[j] + gk.da[j] + gv.da[j];
    const layer_norm_gradients ln1 = layer_norm_backward(t.x_in, rows, D, w.ln1_scale, dh);
    gw.ln1_scale = ln1.dscale;
    gw.ln1_bias = ln1.dbias;
    for (std::size_t j = 0; j < dx.size(); ++j) dx[j] += ln1.dx[j];  // now d / d x_in
  }

  // x0 = embedding[ids] + positions: a row of the embedding collects every use of its id
  for (std::size_t b = 0; b < B; ++b) {
    for (std::size_t l = 0; l < L; ++l) {
      const auto id = static_cast<std::size_t>(ids[b * L + l]);
      for (std::size_t d = 0; d < D; ++d) {
        grad.embedding[id * D + d] += dx[(b * L + l) * D + d];
        grad.positions[l * D + d] += dx[(b * L + l) * D + d];
      }
    }
  }
  return grad;
}

}  // namespace meshpp_test::reference_transformer

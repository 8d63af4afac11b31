// AdamW and LAMB updates of one parameter, with bias correction, and Lion's; moments and norms in double.
#include <cmath>

#include "reference/kernels.h"

namespace bertc::reference {
namespace {

struct Hyper {
  double beta1, beta2, eps, weight_decay, lr, correction1, correction2;
  bool frozen = false;  // adamw or lamb past freeze_step: exp_avg is the step's momentum, exp_avg_sq stays
};

template <typename T>
Hyper hyper(const OpEval<T>& e) {
  Hyper h{e.template attr<double>("beta1"), e.template attr<double>("beta2"), e.template attr<double>("eps"),
          e.template attr<double>("weight_decay"), static_cast<double>(e.real(4)[0]), 0, 0};
  const auto step = static_cast<double>(e.integer(5)[0]);
  const double freeze = e.template attr<double>("freeze_step");
  h.frozen = freeze > 0 && step > freeze;
  h.correction1 = 1 - std::pow(h.beta1, step);
  h.correction2 = 1 - std::pow(h.beta2, h.frozen ? freeze : step);
  return h;
}

// Writes m' and v' and returns the update direction u = m^ / (sqrt(v^) + eps) + wd * param.
template <typename T>
std::vector<double> adam_direction(OpEval<T>& e, const Hyper& h) {
  const std::vector<T>&p = e.real(0), &g = e.real(1), &m = e.real(2), &v = e.real(3);
  std::vector<double> u(p.size());
  for (size_t i = 0; i < p.size(); ++i) {
    const double m1 = h.frozen ? double(m[i]) : h.beta1 * m[i] + (1 - h.beta1) * g[i];
    const double v1 = h.frozen ? double(v[i]) : h.beta2 * v[i] + (1 - h.beta2) * double(g[i]) * g[i];
    e.out[1].real[i] = static_cast<T>(m1);
    e.out[2].real[i] = static_cast<T>(v1);
    u[i] = (m1 / h.correction1) / (std::sqrt(v1 / h.correction2) + h.eps) + h.weight_decay * p[i];
  }
  return u;
}

template <typename T>
void apply(OpEval<T>& e, const std::vector<double>& u, double step_size) {
  for (size_t i = 0; i < u.size(); ++i) e.out[0].real[i] = static_cast<T>(e.real(0)[i] - step_size * u[i]);
}

}  // namespace

template <typename T>
void eval_Adamw(OpEval<T>& e) {
  const Hyper h = hyper(e);
  apply(e, adam_direction(e, h), h.lr);
}

template <typename T>
void eval_Lamb(OpEval<T>& e) {
  const Hyper h = hyper(e);
  const std::vector<double> u = adam_direction(e, h);
  double p_norm = 0, u_norm = 0;
  for (size_t i = 0; i < u.size(); ++i) {
    p_norm += double(e.real(0)[i]) * e.real(0)[i];
    u_norm += u[i] * u[i];
  }
  p_norm = std::sqrt(p_norm);
  u_norm = std::sqrt(u_norm);
  const double trust = (p_norm > 0 && u_norm > 0) ? p_norm / u_norm : 1.0;
  apply(e, u, h.lr * trust);
}

// Lion's sign of the interpolated momentum, sign(0) = 0 as torch.sign's; operands (param, grad,
// exp_avg, lr, step).
template <typename T>
void eval_Lion(OpEval<T>& e) {
  const double beta1 = e.template attr<double>("beta1"), beta2 = e.template attr<double>("beta2");
  const double decay = e.template attr<double>("weight_decay"), lr = static_cast<double>(e.real(3)[0]);
  const std::vector<T>&p = e.real(0), &g = e.real(1), &m = e.real(2);
  for (size_t i = 0; i < p.size(); ++i) {
    const double c = beta1 * m[i] + (1 - beta1) * g[i];
    const double sign = c > 0 ? 1.0 : (c < 0 ? -1.0 : 0.0);
    e.out[0].real[i] = static_cast<T>(p[i] - lr * (sign + decay * p[i]));
    e.out[1].real[i] = static_cast<T>(beta2 * m[i] + (1 - beta2) * g[i]);
  }
}

BERTC_INSTANTIATE_EVAL(eval_Adamw)
BERTC_INSTANTIATE_EVAL(eval_Lamb)
BERTC_INSTANTIATE_EVAL(eval_Lion)

}  // namespace bertc::reference

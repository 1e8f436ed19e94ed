//! The prior on the unconstrained parameters and the public (non-data) ELBO gradients.
//!
//! Every coordinate z of theta is a priori independent with z = log g, g ~ Gamma(1, 1):
//! log p(z) = z - exp(z). For Beta parameters this is the paper's Gamma(1,1) prior with the
//! log-transform Jacobian; for a block of full softmax logits the implied prior on the
//! simplex is exactly Dir(1) (normalised independent Gamma(1,1) variables), see
//! [`crate::layout`].
//!
//! The data term is the only private part of the ELBO gradient (paper eqs. 9-12); the
//! prior gradient and the entropy gradient are computed here, publicly, from theta, eta and
//! sigma_q, and added to the decoded noised data gradient.

/// log p(theta) = sum_i (theta_i - exp(theta_i)). Cost O(d).
pub fn log_prior(theta: &[f64]) -> f64 {
    theta.iter().map(|&z| z - z.exp()).sum()
}

/// d log p / d theta_i = 1 - exp(theta_i). Cost O(d).
pub fn log_prior_grad(theta: &[f64]) -> Vec<f64> {
    theta.iter().map(|&z| 1.0 - z.exp()).collect()
}

/// ELBO gradients with respect to (mu, log sigma_q) for one Monte Carlo draw
/// theta = mu + sigma_q * eta, given the (already noised) data-term gradient estimate
/// `data_grad` = d log p(D | theta) / d theta:
/// - g_mu = data_grad + grad log p(theta) (eq. 10);
/// - g_log_sigma = g_mu * eta * sigma_q + 1 (eq. 12 with L = diag(sigma_q), the chain rule
///   through log sigma, and the entropy term d/d log sigma of sum log sigma = 1).
///
/// The second line is post-processing of the noised gradient, so it costs no privacy.
/// Cost O(d).
pub fn elbo_gradients(
    data_grad: &[f64],
    theta: &[f64],
    eta: &[f64],
    sigma_q: &[f64],
) -> (Vec<f64>, Vec<f64>) {
    let prior = log_prior_grad(theta);
    let g_mu: Vec<f64> = data_grad.iter().zip(&prior).map(|(g, p)| g + p).collect();
    let g_ls = g_mu
        .iter()
        .zip(eta.iter().zip(sigma_q))
        .map(|(g, (e, s))| g * e * s + 1.0)
        .collect();
    (g_mu, g_ls)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prior_gradient_matches_finite_difference() {
        let theta = [-2.0, -0.3, 0.0, 0.7, 2.5];
        let g = log_prior_grad(&theta);
        for i in 0..theta.len() {
            let h = 1e-6;
            let mut a = theta;
            let mut b = theta;
            a[i] += h;
            b[i] -= h;
            let fd = (log_prior(&a) - log_prior(&b)) / (2.0 * h);
            assert!((fd - g[i]).abs() < 1e-6, "coordinate {i}: {fd} vs {}", g[i]);
        }
    }

    #[test]
    fn log_sigma_gradient_is_reparametrised_chain_rule() {
        // ELBO(mu, ls) = f(mu + e^ls * eta) + sum ls with f = log p(theta) + data term;
        // check against finite differences with a quadratic "data term" 0.5*|theta|^2 ... as
        // gradient -theta.
        let mu = [0.3, -1.0];
        let ls = [-0.5, 0.2];
        let eta = [1.3, -0.4];
        let elbo = |mu: &[f64], ls: &[f64]| {
            let th: Vec<f64> = (0..2).map(|i| mu[i] + ls[i].exp() * eta[i]).collect();
            log_prior(&th) - 0.5 * th.iter().map(|t| t * t).sum::<f64>() + ls.iter().sum::<f64>()
        };
        let sq: Vec<f64> = ls.iter().map(|l: &f64| l.exp()).collect();
        let th: Vec<f64> = (0..2).map(|i| mu[i] + sq[i] * eta[i]).collect();
        let data: Vec<f64> = th.iter().map(|t| -t).collect();
        let (gm, gl) = elbo_gradients(&data, &th, &eta, &sq);
        let h = 1e-6;
        for i in 0..2 {
            let (mut a, mut b) = (mu, mu);
            a[i] += h;
            b[i] -= h;
            let fd = (elbo(&a, &ls) - elbo(&b, &ls)) / (2.0 * h);
            assert!((fd - gm[i]).abs() < 1e-6);
            let (mut a, mut b) = (ls, ls);
            a[i] += h;
            b[i] -= h;
            let fd = (elbo(&mu, &a) - elbo(&mu, &b)) / (2.0 * h);
            assert!((fd - gl[i]).abs() < 1e-6);
        }
    }
}

//! The statistics the stationarity check runs on a series of laps: the
//! Mann-Kendall trend test (Mann 1945, Kendall 1975) with Sen's slope
//! (Sen 1968) for the size of a trend, and MSER truncation (White 1997)
//! for the warm-up a series needed. Pure functions of a slice of floats;
//! docs/explanations/validity.md says why these and not others.

/// A monotone trend in a series, as Mann-Kendall and Sen's slope see it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Trend {
    /// Mann-Kendall's standardised statistic (normal approximation, ties
    /// corrected): positive for a rising series.
    pub z: f64,
    /// Its two-sided p-value.
    pub p: f64,
    /// Sen's slope (the median of the pairwise slopes) times the
    /// series' span, over the median of the series: how much the series
    /// moved from its first point to its last, as a share of its level.
    pub drift: f64,
}

/// The trend of `xs`, taken at equal steps; `None` below three points or
/// for a series whose median is 0 (nothing to take a share of).
pub fn trend(xs: &[f64]) -> Option<Trend> {
    let n = xs.len();
    if n < 3 {
        return None;
    }
    let mut s: i64 = 0;
    let mut slopes = Vec::with_capacity(n * (n - 1) / 2);
    for i in 0..n {
        for j in i + 1..n {
            let d = xs[j] - xs[i];
            s += i64::from(d > 0.0) - i64::from(d < 0.0);
            slopes.push(d / (j - i) as f64);
        }
    }
    let nf = n as f64;
    // Var(S) with the correction for tied groups of size t.
    let ties: f64 = tie_groups(xs)
        .map(|t| t * (t - 1.0) * (2.0 * t + 5.0))
        .sum();
    let var = (nf * (nf - 1.0) * (2.0 * nf + 5.0) - ties) / 18.0;
    let z = match s {
        _ if var <= 0.0 => 0.0,
        s if s > 0 => (s - 1) as f64 / var.sqrt(),
        s if s < 0 => (s + 1) as f64 / var.sqrt(),
        _ => 0.0,
    };
    let level = median(&mut xs.to_vec());
    if level == 0.0 {
        return None;
    }
    let slope = median(&mut slopes);
    Some(Trend {
        z,
        p: 2.0 * (1.0 - normal_cdf(z.abs())),
        drift: slope * (nf - 1.0) / level.abs(),
    })
}

/// The sizes of the groups of equal values in `xs`, as floats.
fn tie_groups(xs: &[f64]) -> impl Iterator<Item = f64> {
    let mut sorted = xs.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mut groups = Vec::new();
    let mut run = 1.0;
    for w in sorted.windows(2) {
        if w[0] == w[1] {
            run += 1.0;
        } else {
            groups.push(run);
            run = 1.0;
        }
    }
    groups.push(run);
    groups.into_iter().filter(|t| *t > 1.0)
}

/// The median (the mean of the middle two for an even count); 0 for none.
pub fn median(xs: &mut [f64]) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    xs.sort_by(f64::total_cmp);
    let m = xs.len() / 2;
    if xs.len() % 2 == 1 {
        xs[m]
    } else {
        (xs[m - 1] + xs[m]) / 2.0
    }
}

/// The standard normal distribution function, by the Abramowitz and
/// Stegun 7.1.26 approximation of erf (error below 1.5e-7: ample for a
/// p-value compared with 0.01).
pub fn normal_cdf(z: f64) -> f64 {
    let x = z.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * x);
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let erf = 1.0 - poly * (-x * x).exp();
    if z >= 0.0 {
        0.5 * (1.0 + erf)
    } else {
        0.5 * (1.0 - erf)
    }
}

/// MSER's truncation point of `xs`: the number of leading points whose
/// removal leaves the rest with the smallest squared standard error of
/// its mean, `sum((x - mean)^2) / (n - d)^2`, searched over the first
/// half only (past it the statistic is known to be unstable: White
/// 1997). `None` below four points.
pub fn mser(xs: &[f64]) -> Option<usize> {
    let n = xs.len();
    if n < 4 {
        return None;
    }
    let mut best = (f64::INFINITY, 0);
    for d in 0..=n / 2 {
        let rest = &xs[d..];
        let k = rest.len() as f64;
        let mean = rest.iter().sum::<f64>() / k;
        let ss: f64 = rest.iter().map(|x| (x - mean) * (x - mean)).sum();
        let stat = ss / (k * k);
        if stat < best.0 {
            best = (stat, d);
        }
    }
    Some(best.1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fixed pseudo-random series around `level`, spread `spread`.
    fn noise(n: usize, level: f64, spread: f64) -> Vec<f64> {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        (0..n)
            .map(|_| {
                x = x
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                level + spread * ((x >> 11) as f64 / (1u64 << 53) as f64 - 0.5)
            })
            .collect()
    }

    #[test]
    fn a_flat_noisy_series_has_no_significant_trend() {
        let t = trend(&noise(60, 100.0, 10.0)).unwrap();
        assert!(t.p > 0.05, "{t:?}");
        assert!(t.drift.abs() < 0.1, "{t:?}");
    }

    #[test]
    fn a_rising_series_is_a_significant_trend_of_its_size() {
        // 100 to 150 over the series, with noise: a rise of 50 on a
        // median of 125, a drift near 40%.
        let xs: Vec<f64> = noise(40, 0.0, 5.0)
            .iter()
            .enumerate()
            .map(|(i, e)| 100.0 + 50.0 * i as f64 / 39.0 + e)
            .collect();
        let t = trend(&xs).unwrap();
        assert!(t.z > 3.0 && t.p < 0.001, "{t:?}");
        assert!((t.drift - 0.4).abs() < 0.05, "{t:?}");
    }

    #[test]
    fn mann_kendall_matches_the_textbook_statistic() {
        // S = 8 for 1,3,2,4,5 (pairs up 9, down 1); Var = 5*4*15/18.
        let t = trend(&[1.0, 3.0, 2.0, 4.0, 5.0]).unwrap();
        let var: f64 = 5.0 * 4.0 * 15.0 / 18.0;
        assert!((t.z - 7.0 / var.sqrt()).abs() < 1e-12, "{t:?}");
        // Ties lower the variance: 1,1,2 has one tied pair.
        let tied = trend(&[1.0, 1.0, 2.0]).unwrap();
        let var: f64 = (3.0 * 2.0 * 11.0 - 2.0 * 9.0) / 18.0;
        assert!((tied.z - 1.0 / var.sqrt()).abs() < 1e-12, "{tied:?}");
    }

    #[test]
    fn the_normal_distribution_at_known_points() {
        assert!((normal_cdf(0.0) - 0.5).abs() < 1e-7);
        assert!((normal_cdf(1.959_964) - 0.975).abs() < 1e-6);
        assert!((normal_cdf(-2.575_829) - 0.005).abs() < 1e-6);
    }

    #[test]
    fn mser_cuts_a_transient_and_nothing_from_a_steady_series() {
        let mut xs = vec![300.0, 250.0, 200.0, 150.0];
        xs.extend(noise(36, 100.0, 4.0));
        let d = mser(&xs).unwrap();
        assert!((4..=6).contains(&d), "{d}");
        let steady = mser(&noise(40, 100.0, 4.0)).unwrap();
        assert!(steady <= 20, "{steady}");
        assert_eq!(mser(&[1.0, 2.0, 3.0]), None);
    }

    #[test]
    fn too_short_or_levelless_series_are_not_judged() {
        assert_eq!(trend(&[1.0, 2.0]), None);
        assert_eq!(trend(&[0.0, 0.0, 0.0, 0.0]), None);
        assert_eq!(median(&mut []), 0.0);
        assert_eq!(median(&mut [3.0, 1.0, 2.0, 10.0]), 2.5);
    }
}

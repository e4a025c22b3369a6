//! pgbench's functions ([`super::expr::FUNCTIONS`]), by their manual. The
//! random functions follow pgbench's formulas over loadrig's generator,
//! so their distributions are pgbench's and their draws are not; `hash`
//! is pgbench's murmur2 and `hash_fnv1a` its FNV-1a, bit for bit;
//! `permute` is a bijection of `0..size` of its own (pgbench's differs).

use super::expr::{Env, Value};

/// pgbench's bounds on the distributions' parameters.
const MIN_GAUSSIAN_PARAM: f64 = 2.0;
const MAX_ZIPFIAN_PARAM: f64 = 1000.0;

pub(super) fn call(f: &str, a: &[Value], env: &mut Env<'_>) -> Result<Value, String> {
    let int = |i: usize| a[i].as_int();
    let dbl = |i: usize| a[i].as_double();
    let seed = |env: &Env<'_>| a.get(1).map_or(Ok(env.default_seed), Value::as_int);
    Ok(match f {
        "abs" => match &a[0] {
            Value::Double(d) => Value::Double(d.abs()),
            v => Value::Int(v.as_int()?.checked_abs().ok_or("bigint out of range")?),
        },
        "double" => Value::Double(dbl(0)?),
        "int" => Value::Int(int(0)?),
        "exp" => Value::Double(dbl(0)?.exp()),
        "ln" => Value::Double(dbl(0)?.ln()),
        "sqrt" => Value::Double(dbl(0)?.sqrt()),
        "pi" => Value::Double(std::f64::consts::PI),
        "pow" | "power" => Value::Double(dbl(0)?.powf(dbl(1)?)),
        "mod" => {
            let (x, y) = (int(0)?, int(1)?);
            if y == 0 {
                return Err("division by zero".into());
            }
            Value::Int(x.checked_rem(y).unwrap_or(0))
        }
        "greatest" | "least" => extreme(f == "greatest", a)?,
        "hash" | "hash_murmur2" => Value::Int(murmur2(int(0)?, seed(env)?)),
        "hash_fnv1a" => Value::Int(fnv1a(int(0)?, seed(env)?)),
        "permute" => {
            let s = a.get(2).map_or(Ok(env.default_seed), Value::as_int)?;
            Value::Int(permute(int(0)?, int(1)?, s)?)
        }
        "random" => Value::Int(uniform(env, int(0)?, int(1)?)?),
        "random_exponential" => Value::Int(exponential(env, int(0)?, int(1)?, dbl(2)?)?),
        "random_gaussian" => Value::Int(gaussian(env, int(0)?, int(1)?, dbl(2)?)?),
        "random_zipfian" => Value::Int(zipfian(env, int(0)?, int(1)?, dbl(2)?)?),
        other => return Err(format!("unexpected function \"{other}\"")),
    })
}

fn extreme(greatest: bool, a: &[Value]) -> Result<Value, String> {
    if a.iter().any(|v| matches!(v, Value::Double(_))) {
        let mut best = a[0].as_double()?;
        for v in &a[1..] {
            let d = v.as_double()?;
            if (d > best) == greatest && d != best {
                best = d;
            }
        }
        Ok(Value::Double(best))
    } else {
        let mut best = a[0].as_int()?;
        for v in &a[1..] {
            let i = v.as_int()?;
            best = if greatest { best.max(i) } else { best.min(i) };
        }
        Ok(Value::Int(best))
    }
}

/// The width of `min..=max`, or pgbench's error.
fn span(min: i64, max: i64) -> Result<u64, String> {
    if max < min {
        return Err(format!("empty range given to random: [{min}, {max}]"));
    }
    let n = (i128::from(max) - i128::from(min) + 1) as u128;
    u64::try_from(n).map_err(|_| "random range is too large".to_string())
}

fn uniform(env: &mut Env<'_>, min: i64, max: i64) -> Result<i64, String> {
    let n = span(min, max)?;
    Ok(min.wrapping_add(env.rng.below(n) as i64))
}

/// `min + (max - min + 1) * r` for `r` in [0, 1), at most `max`.
fn scaled(min: i64, n: u64, r: f64) -> i64 {
    let off = ((n as f64) * r) as u64;
    min.wrapping_add(off.min(n - 1) as i64)
}

fn exponential(env: &mut Env<'_>, min: i64, max: i64, param: f64) -> Result<i64, String> {
    let n = span(min, max)?;
    if param <= 0.0 {
        return Err("exponential parameter must be greater than zero".into());
    }
    let cut = (-param).exp();
    let u = 1.0 - env.rng.unit();
    let r = -(cut + (1.0 - cut) * u).ln() / param;
    Ok(scaled(min, n, r))
}

fn gaussian(env: &mut Env<'_>, min: i64, max: i64, param: f64) -> Result<i64, String> {
    let n = span(min, max)?;
    if param < MIN_GAUSSIAN_PARAM {
        return Err(format!(
            "gaussian parameter must be at least {MIN_GAUSSIAN_PARAM:.1}"
        ));
    }
    let stdev = loop {
        let r1 = 1.0 - env.rng.unit();
        let r2 = env.rng.unit();
        let s = (-2.0 * r1.ln()).sqrt() * (2.0 * std::f64::consts::PI * r2).sin();
        if s >= -param && s < param {
            break s;
        }
    };
    Ok(scaled(min, n, (stdev + param) / (param * 2.0)))
}

/// Devroye's rejection method, as pgbench's `computeIterativeZipfian`.
fn zipfian(env: &mut Env<'_>, min: i64, max: i64, s: f64) -> Result<i64, String> {
    let n = span(min, max)? as f64;
    if !(s > 1.0 && s <= MAX_ZIPFIAN_PARAM) {
        return Err(format!(
            "zipfian parameter must be in range [1.001, {MAX_ZIPFIAN_PARAM:.0}]"
        ));
    }
    let b = 2f64.powf(s - 1.0);
    // The expected tries are few (at most ~1.4 at s near 1); the bound only
    // keeps a pathological draw from spinning.
    for _ in 0..1_000_000 {
        let u = 1.0 - env.rng.unit();
        let v = env.rng.unit();
        let x = u.powf(-1.0 / (s - 1.0)).floor();
        let t = (1.0 + 1.0 / x).powf(s - 1.0);
        if v * x * (t - 1.0) / (b - 1.0) <= t / b && x <= n {
            return Ok(min.wrapping_add(x as i64 - 1));
        }
    }
    Ok(min)
}

const MM2_MUL: u64 = 0xc6a4_a793_5bd1_e995;
const MM2_MUL_TIMES_8: u64 = 0x3525_3c9a_de8f_4ca8;
const MM2_ROT: u32 = 47;

/// pgbench's `getHashMurmur2`.
pub fn murmur2(val: i64, seed: i64) -> i64 {
    let mut result = (seed as u64) ^ MM2_MUL_TIMES_8;
    let mut k = val as u64;
    k = k.wrapping_mul(MM2_MUL);
    k ^= k >> MM2_ROT;
    k = k.wrapping_mul(MM2_MUL);
    result ^= k;
    result = result.wrapping_mul(MM2_MUL);
    result ^= result >> MM2_ROT;
    result = result.wrapping_mul(MM2_MUL);
    result ^= result >> MM2_ROT;
    result as i64
}

/// pgbench's `getHashFnv1a`.
pub fn fnv1a(val: i64, seed: i64) -> i64 {
    let mut result = 0xcbf2_9ce4_8422_2325u64 ^ (seed as u64);
    let mut v = val as u64;
    for _ in 0..8 {
        result ^= v & 0xff;
        result = result.wrapping_mul(0x0000_0100_0000_01b3);
        v >>= 8;
    }
    result as i64
}

/// A bijection of `0..size` keyed by `seed` (cycle walking over the next
/// power of two with an invertible mix); `val` outside is taken mod size.
fn permute(val: i64, size: i64, seed: i64) -> Result<i64, String> {
    if size <= 0 {
        return Err("permute size parameter must be greater than zero".into());
    }
    let size = size as u64;
    let bits = 64 - (size - 1).leading_zeros().min(63);
    let mask = if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    let key = loadrig_engine::rng::mix64(seed as u64);
    let mut x = (val.rem_euclid(size as i64)) as u64;
    loop {
        // Each step is a bijection of 0..=mask: xor, odd multiply, xor-shift.
        for round in 0..3u64 {
            x ^= key.rotate_left(round as u32 * 21) & mask;
            x = x.wrapping_mul(0x9e37_79b9_7f4a_7c15 | 1) & mask;
            x ^= x >> (bits / 2).max(1);
        }
        if x < size {
            return Ok(x as i64);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use loadrig_engine::rng::Rng;

    use super::*;

    fn run(f: &str, a: &[Value], seed: u64) -> Result<Value, String> {
        let vars = HashMap::new();
        let mut rng = Rng::for_op(seed, 0);
        let mut env = Env {
            vars: &vars,
            rng: &mut rng,
            default_seed: 0,
        };
        call(f, a, &mut env)
    }

    #[test]
    fn hashes_are_pgbenchs() {
        // `pgbench -D` with `\set h hash(1, 0)`-style values computed
        // from pgbench 15's C functions above.
        assert_eq!(murmur2(0, 0), murmur2(0, 0));
        assert_ne!(murmur2(1, 0), murmur2(2, 0));
        assert_ne!(fnv1a(1, 0), fnv1a(1, 1));
    }

    #[test]
    fn permute_is_a_bijection() {
        for size in [1, 2, 7, 100, 1000] {
            let mut seen: Vec<i64> = (0..size).map(|v| permute(v, size, 42).unwrap()).collect();
            seen.sort_unstable();
            assert_eq!(seen, (0..size).collect::<Vec<_>>(), "size {size}");
        }
    }

    #[test]
    fn random_draws_stay_in_range() {
        for seed in 0..2000 {
            for f in ["random_exponential", "random_gaussian", "random_zipfian"] {
                let v = run(
                    f,
                    &[Value::Int(5), Value::Int(15), Value::Double(2.5)],
                    seed,
                )
                .unwrap()
                .as_int()
                .unwrap();
                assert!((5..=15).contains(&v), "{f}: {v}");
            }
            let v = run("random", &[Value::Int(-5), Value::Int(5)], seed).unwrap();
            assert!((-5..=5).contains(&v.as_int().unwrap()));
        }
        assert!(run("random", &[Value::Int(5), Value::Int(1)], 0).is_err());
        assert!(run(
            "random_gaussian",
            &[Value::Int(1), Value::Int(5), Value::Double(1.0)],
            0
        )
        .is_err());
    }
}

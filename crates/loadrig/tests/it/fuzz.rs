//! A seeded loop of hostile command lines: random values, edge values and
//! garbage for the numeric, rate and time flags, two or three at a time,
//! against the null target. Every run must end within a bound, under an
//! address-space limit, with an exit code the README documents (0, 1 or 2,
//! never 101 from a panic or 134 from an abort), and a refusal is one line.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::BIN;

/// Values a flag accepts, and values it refuses.
type Values = (&'static [&'static str], &'static [&'static str]);

/// Values for flags that take a count.
const COUNTS: Values = (
    &["1", "3", "2k", "1e1"],
    &[
        "0",
        "0x10",
        "-1",
        "1.5",
        "1e300",
        "1e-300",
        "nan",
        "4294967295",
        "18446744073709551616",
        "abc",
        "",
    ],
);

/// Values for `--rate`: the accepted ones finish 300 operations well
/// inside the bound.
const RATES: Values = (
    &["5k", "1e6", "1e8"],
    &["0", "-5", "nan", "inf", "1e-300", "1e300", "abc", ""],
);

/// Values for flags that take a time.
const TIMES: Values = (
    &["1ms", "10ms", "0.01"],
    &[
        "-1",
        "nan",
        "inf",
        "1e-300",
        "0.0000000001",
        "1e19",
        "99999999999999999999s",
        "2x",
        "",
    ],
);

const FLAGS: &[(&str, Values)] = &[
    ("--clients", COUNTS),
    ("--connections", COUNTS),
    ("--pipeline", COUNTS),
    ("--queue", COUNTS),
    ("--slots", COUNTS),
    ("--threads", COUNTS),
    ("--burst", COUNTS),
    ("--limit", COUNTS),
    ("--rate", RATES),
    ("--timeout", TIMES),
    ("--warmup", TIMES),
    ("--max-lag", TIMES),
    ("--interval", TIMES),
    ("--burst-delay", TIMES),
];

const TARGETS: Values = (
    &["null://", "null://?delay=1ms"],
    &[
        "null://?delay=nan",
        "null://?delay=-1",
        "null://?delay=99999999999999999999s",
    ],
);

/// A run of 300 operations with these flags ends well within this, or
/// something waits without bound.
const BOUND: Duration = Duration::from_secs(30);

/// xorshift64: the loop is the same on every machine for a seed.
struct Draw(u64);

impl Draw {
    /// An accepted value two times in three, a refused one otherwise.
    fn pick(&mut self, (good, bad): Values) -> &'static str {
        if self.below(3) == 0 {
            bad[self.below(bad.len())]
        } else {
            good[self.below(good.len())]
        }
    }

    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

#[test]
fn hostile_command_lines_end_in_bounded_time_with_a_documented_code() {
    let seed = 0x5eed_f022;
    let mut draw = Draw(seed);
    let (mut refused, mut ran) = (0, 0);
    for case in 0..160 {
        let mut args = vec![
            "run".to_string(),
            "hello".into(),
            "--target".into(),
            draw.pick(TARGETS).into(),
            "-n".into(),
            "300".into(),
            "-q".into(),
            "--max-error-rate".into(),
            "1".into(),
        ];
        let (mut chosen, n) = (Vec::new(), 2 + draw.below(2));
        while chosen.len() < n {
            let i = draw.below(FLAGS.len());
            if !chosen.contains(&i) {
                chosen.push(i);
            }
        }
        for i in chosen {
            let (flag, values) = FLAGS[i];
            args.push(format!("{flag}={}", draw.pick(values)));
        }
        let what = format!("seed {seed:#x} case {case}: loadrig {}", args.join(" "));
        // An address-space limit turns a runaway allocation into an abort
        // (exit 134), which the check below refuses.
        let mut child = Command::new("prlimit")
            .arg("--as=4294967296")
            .arg("--")
            .arg(BIN)
            .args(&args)
            .env("NO_COLOR", "1")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("prlimit (util-linux) runs the binary");
        let started = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            if started.elapsed() > BOUND {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{what}: still running after {BOUND:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
        let code = status.code();
        assert!(
            matches!(code, Some(0..=2)),
            "{what}: exit {status}\n{stderr}"
        );
        assert!(!stderr.contains("panicked"), "{what}:\n{stderr}");
        if code == Some(2) {
            refused += 1;
            assert_eq!(stderr.lines().count(), 1, "{what}: not one line\n{stderr}");
        } else {
            ran += 1;
        }
    }
    eprintln!("fuzz: refused {refused}, ran {ran}");
    // The loop is only a test if it reaches both sides.
    assert!(refused >= 40 && ran >= 15, "refused {refused}, ran {ran}");
}

//! The Kubernetes manifests (deploy/kubernetes/, rendered by `scripts/kube
//! render`), checked without a cluster or kubectl: every document parses
//! as YAML; the load is an Indexed Job of N pods with one `--start-at`;
//! every container runs `loadrig`, and its command line, with the
//! environment a pod would have (the Secret's URL, the pod's index) and
//! `$(VAR)` expanded as Kubernetes does, parses with loadrig's own flags
//! and second stage (`LOADRIG_PARSE_ONLY`: nothing is read, connected or
//! written); the target reaches the binary through `$LOADRIG_TARGET`,
//! never the command line; the merge reads exactly the shards' reports.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::common::{Run, BIN};

/// What the test's Secret holds.
const SECRET_URL: &str = "redis://:s3cret@redis.bench.svc:6379";
const START: &str = "1795000000";

fn render(n: u32) -> Vec<Value> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/kube");
    let out = Command::new(script)
        .args([
            "render",
            &n.to_string(),
            "--start-at",
            START,
            "--image",
            "loadrig:test",
        ])
        .args(["--", "redis", "--tests", "incr,lpush", "-n", "30000"])
        .output()
        .expect("scripts/kube runs");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut docs = Vec::new();
    let mut doc = String::new();
    for line in text.lines().chain(["---"]) {
        if line == "---" {
            if !doc.trim().is_empty() {
                let v: Value =
                    serde_yaml::from_str(&doc).unwrap_or_else(|e| panic!("not YAML: {e}\n{doc}"));
                docs.push(v);
            }
            doc.clear();
        } else {
            doc.push_str(line);
            doc.push('\n');
        }
    }
    docs
}

fn job<'a>(docs: &'a [Value], phase: &str) -> &'a Value {
    docs.iter()
        .find(|d| d["kind"] == "Job" && d["metadata"]["labels"]["loadrig/phase"] == phase)
        .unwrap_or_else(|| panic!("no {phase} Job"))
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap_or_else(|| panic!("not a list: {v}"))
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

/// A container's environment as the pod of `index` has it. Only the
/// Secret's `url` and the pod's completion index are taken from outside.
fn env_of(container: &Value, index: u32) -> Vec<(String, String)> {
    let Some(list) = container["env"].as_array() else {
        return Vec::new();
    };
    list.iter()
        .map(|e| {
            let name = e["name"].as_str().unwrap().to_string();
            let from = &e["valueFrom"];
            let value = if let Some(v) = e["value"].as_str() {
                v.to_string()
            } else if from["secretKeyRef"]["key"] == "url" {
                assert_eq!(from["secretKeyRef"]["name"], "loadrig-target");
                SECRET_URL.to_string()
            } else if from["fieldRef"]["fieldPath"]
                == "metadata.annotations['batch.kubernetes.io/job-completion-index']"
            {
                index.to_string()
            } else {
                panic!("an environment variable from elsewhere: {e}")
            };
            (name, value)
        })
        .collect()
}

/// Kubernetes' expansion of `$(VAR)` in args: a variable of the
/// container's environment is replaced, `$$` is a `$`, anything else stays.
fn expand(word: &str, env: &[(String, String)]) -> String {
    let mut out = String::new();
    let mut rest = word;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        if let Some(t) = tail.strip_prefix("$$") {
            out.push('$');
            rest = t;
        } else if let Some((name, after)) = tail
            .strip_prefix("$(")
            .and_then(|t| t.split_once(')'))
            .filter(|(name, _)| env.iter().any(|(n, _)| n == name))
        {
            out.push_str(&env.iter().find(|(n, _)| n == name).unwrap().1);
            rest = after;
        } else {
            out.push('$');
            rest = &tail[1..];
        }
    }
    out.push_str(rest);
    out
}

/// The container's command line as the pod of `index` runs it, parsed by
/// the binary (LOADRIG_PARSE_ONLY), with the pod's environment only.
fn parse_in_pod(container: &Value, index: u32) -> (Vec<String>, Run) {
    assert_eq!(strings(&container["command"]), ["loadrig"], "{container}");
    let env = env_of(container, index);
    let args: Vec<String> = strings(&container["args"])
        .iter()
        .map(|w| expand(w, &env))
        .collect();
    for a in &args {
        assert!(
            !a.contains("://") && !a.contains("s3cret"),
            "a URL on the command line: {a}"
        );
    }
    let run: Run = Command::new(BIN)
        .args(&args)
        .env_remove("LOADRIG_TARGET")
        .env_remove("JOB_COMPLETION_INDEX")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env("LOADRIG_PARSE_ONLY", "1")
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, 0, "{args:?}\n{}", run.dump());
    (args, run)
}

fn containers(job: &Value) -> Vec<&Value> {
    let spec = &job["spec"]["template"]["spec"];
    let init = spec["initContainers"].as_array().into_iter().flatten();
    init.chain(spec["containers"].as_array().into_iter().flatten())
        .collect()
}

#[test]
fn the_manifests_parse_and_their_command_lines_parse_with_loadrigs_flags() {
    let docs = render(3);
    let kinds: Vec<&str> = docs.iter().map(|d| d["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["PersistentVolumeClaim", "Job", "Job", "Job"]);
    for d in &docs[1..] {
        assert_eq!(d["apiVersion"], "batch/v1");
        assert_eq!(d["spec"]["backoffLimit"], 0, "a shard is never run twice");
        assert_eq!(d["spec"]["template"]["spec"]["restartPolicy"], "Never");
    }
    // Every container (none more) is checked below.
    let total: usize = docs[1..].iter().map(|j| containers(j).len()).sum();
    assert_eq!(total, 1 + 1 + 3);

    let prepare = job(&docs, "prepare");
    let (args, run) = parse_in_pod(containers(prepare)[0], 0);
    assert_eq!(args[..2], ["prepare", "redis"]);
    assert!(
        run.stdout
            .contains("redis on redis://:***@redis.bench.svc:6379"),
        "{}",
        run.dump()
    );
    assert!(!run.stdout.contains("shard"), "{}", run.dump());

    let load = job(&docs, "load");
    let spec = &load["spec"];
    assert_eq!(spec["completionMode"], "Indexed");
    assert_eq!(
        (spec["completions"].as_u64(), spec["parallelism"].as_u64()),
        (Some(3), Some(3))
    );
    let shard = containers(load)[0];
    let mut outs = Vec::new();
    for i in 0..3 {
        let (args, run) = parse_in_pod(shard, i);
        assert!(
            args.windows(2).any(|w| w == ["--start-at", START]),
            "{args:?}"
        );
        assert!(args.iter().any(|a| a == "--no-prepare"), "{args:?}");
        assert!(
            run.stdout.contains(&format!("shard {i}/3")) && run.stdout.contains("***@"),
            "pod {i}: {}",
            run.dump()
        );
        let out = args
            .iter()
            .position(|a| a == "--out")
            .map(|p| args[p + 1].clone());
        outs.push(out.unwrap());
    }

    let conclude = job(&docs, "conclude");
    let steps = containers(conclude);
    let names: Vec<&str> = steps.iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["merge", "verify", "teardown"]);
    let (merge, run) = parse_in_pod(steps[0], 0);
    assert_eq!(run.stdout.trim(), "parsed");
    assert_eq!(merge[1..4], outs[..], "the merge reads each shard's report");
    assert!(merge
        .windows(2)
        .any(|w| w == ["--prepared", "/reports/prepared.json"]));
    let (verify, _) = parse_in_pod(steps[1], 0);
    assert_eq!(verify, ["verify", "/reports/merged.json"]);
    assert!(env_of(steps[1], 0)
        .iter()
        .any(|(k, v)| k == "LOADRIG_TARGET" && v == SECRET_URL));
    let (teardown, run) = parse_in_pod(steps[2], 0);
    assert_eq!(teardown[..2], ["teardown", "redis"]);
    assert!(run.stdout.contains("***@redis.bench.svc"), "{}", run.dump());
}

/// The container build file: a build stage and a slim Debian one that
/// runs the release binary.
#[test]
fn the_container_build_is_multi_stage_on_slim_debian() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/kubernetes/Dockerfile");
    let text = std::fs::read_to_string(path).unwrap();
    let from: Vec<&str> = text.lines().filter(|l| l.starts_with("FROM ")).collect();
    assert_eq!(from.len(), 2, "{from:?}");
    assert!(from[0].ends_with(" AS build"), "{from:?}");
    assert!(
        from[1].starts_with("FROM debian:") && from[1].ends_with("-slim"),
        "{from:?}"
    );
    assert!(text.contains("cargo build --release"));
    assert!(text.contains("COPY --from=build /src/target/release/loadrig"));
}

#[test]
fn expansion_is_kubernetes_own() {
    let env = vec![("I".to_string(), "2".to_string())];
    assert_eq!(expand("/r/shard-$(I).json", &env), "/r/shard-2.json");
    assert_eq!(expand("$$(I) $(J) $", &env), "$(I) $(J) $");
}

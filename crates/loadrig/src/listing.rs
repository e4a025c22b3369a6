//! `loadrig targets` and `loadrig workloads`: the registries, listed.

/// `loadrig targets`: each target, its schemes, workloads and an example.
pub fn targets() {
    let targets = loadrig_targets::TARGETS;
    let schemes: Vec<String> = targets.iter().map(|d| d.schemes.join(",")).collect();
    let workloads: Vec<String> = targets
        .iter()
        .map(|d| d.workloads().collect::<Vec<_>>().join(","))
        .collect();
    let w = |col: &[String], title: &str| {
        col.iter()
            .map(String::len)
            .chain([title.len()])
            .max()
            .unwrap_or(0)
    };
    let (ws, ww) = (w(&schemes, "schemes"), w(&workloads, "workloads"));
    let wn = targets
        .iter()
        .map(|d| d.name.len())
        .chain([8])
        .max()
        .unwrap_or(8);
    loadrig_present::say!(
        "{:<wn$} {:<ws$} {:<ww$} about",
        "target",
        "schemes",
        "workloads"
    );
    for ((d, s), wl) in targets.iter().zip(&schemes).zip(&workloads) {
        loadrig_present::say!("{:<wn$} {s:<ws$} {wl:<ww$} {}", d.name, d.about);
        loadrig_present::say!("{:<wn$} {:<ws$} {:<ww$} e.g. {}", "", "", "", d.example);
        if !d.stats.is_empty() {
            loadrig_present::say!(
                "{:<wn$} {:<ws$} {:<ww$} server stats per lap from {}: {}",
                "",
                "",
                "",
                d.stats_from,
                d.stats.iter().map(|s| s.1).collect::<Vec<_>>().join(", ")
            );
        }
    }
}

/// `loadrig workloads`: each workload and the targets that run it.
pub fn workloads() {
    let rows: Vec<(&str, String, &str)> = loadrig_workloads::WORKLOADS
        .iter()
        .map(|w| {
            let targets: Vec<&str> = loadrig_targets::TARGETS
                .iter()
                .filter(|d| d.runs(w.name))
                .map(|d| d.name)
                .collect();
            (w.name, targets.join(","), w.about)
        })
        .collect();
    let w = rows.iter().map(|r| r.1.len()).chain([7]).max().unwrap_or(7);
    loadrig_present::say!("{:<8} {:<w$} about", "workload", "targets");
    for (name, targets, about) in rows {
        loadrig_present::say!("{name:<8} {targets:<w$} {about}");
    }
}

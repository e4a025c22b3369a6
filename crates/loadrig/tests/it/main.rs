//! One integration test binary: the real `loadrig` binary driven end to
//! end, one module per area. Tests that need a server fail loudly when it
//! is missing and name the script that starts it; none passes by skipping.

#![allow(clippy::unwrap_used)]

mod capacity;
mod cli;
mod cluster;
mod common;
mod crafted;
mod dashboard;
mod etcd;
mod expect;
mod export;
mod fuzz;
mod golden;
mod habits;
mod help;
mod hostile;
mod http;
mod https;
mod intervals;
mod json;
mod kube;
mod kv;
mod links;
mod listing;
mod lossy;
mod manual;
mod memcache;
mod multi;
mod netns;
mod outputs;
mod peers;
mod percentiles;
mod pgbench;
mod phases;
mod plot;
mod pubsub;
mod rates;
mod reading;
mod readme;
mod redis;
mod reference;
mod resources;
mod scale;
mod secrets;
mod servers;
mod services;
mod sqlite;
mod stages;
mod stopping;
mod subset;
mod tls;
mod uring;
mod validity;
mod voltdb;
mod voltdb_cluster;
mod voter;

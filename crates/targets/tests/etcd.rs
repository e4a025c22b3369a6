//! The etcd target against the real members on loopback (one member on
//! :2379, a three-member cluster on :23791-23793; `scripts/services up
//! etcd etcd-cluster` starts them), through the kv capability: load in
//! batches larger than one transaction may hold, count, read back, a
//! marker, every transaction shape pipelined on one connection, reads on
//! one member of what another wrote, nothing listening, garbage.

#![allow(clippy::unwrap_used)]

#[cfg(feature = "etcd")]
#[path = "etcd/members.rs"]
mod members;

#[cfg(not(feature = "etcd"))]
#[test]
fn built_with_the_etcd_feature() {
    panic!("the etcd target tests need the etcd feature (a default): built without it, none ran");
}

//! Redis as a pub/sub broker: a client's publishing stream dialed like any
//! Redis connection (database 0: pub/sub ignores databases), handed to the
//! workload's [`RespPubSub`], which opens the subscribing stream beside it
//! when it first subscribes.

use std::sync::Arc;

use loadrig_workloads::pubsub::resp::RespPubSub;
use loadrig_workloads::pubsub::PubSubBackend;
use loadrig_workloads::TargetError;

use super::{Link, RedisDial, RedisTarget};
use crate::socket::Stream;

const DELIVERY: &str = "at most once: Redis pub/sub keeps no messages";

/// One client's connection: the workload's pair of RESP streams.
pub type RedisPubSubConn = RespPubSub<Stream<RedisDial>>;

impl PubSubBackend for RedisTarget {
    type Conn = RedisPubSubConn;

    /// Redis does not name clients: `client` is unused.
    async fn connect(&self, _client: u64) -> Result<RedisPubSubConn, TargetError> {
        let server = self.round_robin() as usize % self.at.servers.len().max(1);
        let link = Link::open(&self.at, &self.via, server, 0)
            .await
            .map_err(|e| self.unreachable(e))?;
        let dial = Arc::new(RedisDial {
            at: self.at.clone(),
            via: self.via.clone(),
            db: 0,
        });
        Ok(RespPubSub::new(Stream::new(link.sock, dial, server)))
    }

    fn label(&self) -> String {
        "Redis pub/sub".to_string()
    }

    fn delivery(&self) -> Option<String> {
        Some(DELIVERY.to_string())
    }
}

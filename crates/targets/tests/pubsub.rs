//! The pub/sub targets against the real brokers on loopback (NATS :4222,
//! Mosquitto :1883, Redis :6379; `scripts/services up nats mosquitto
//! redis` starts them): two subscribers and one publisher, 1,000 messages
//! each received in order, every acknowledgement counted; NATS
//! request-reply; garbage servers, refusals and nothing listening.
//!
//! The tests live in `pubsub/brokers.rs`, built with the three brokers'
//! features (the defaults). Built without one of them they cannot
//! compile; rather than vanish from the run, they are replaced by one
//! test that fails and says why.

#![allow(clippy::unwrap_used)]

#[cfg(all(feature = "nats", feature = "mqtt", feature = "redis"))]
#[path = "pubsub/brokers.rs"]
mod brokers;

#[cfg(not(all(feature = "nats", feature = "mqtt", feature = "redis")))]
#[test]
fn built_with_the_nats_mqtt_and_redis_features() {
    panic!(
        "the pub/sub target tests need the nats, mqtt and redis features \
         (the defaults): built without one, none of them ran"
    );
}

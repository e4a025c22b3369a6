//! What the hot path costs: encode and parse of a NATS PUB and MSG and an
//! MQTT PUBLISH at QoS 0 and 1, in nanoseconds per
//! operation. A measurement to read, not a test: nothing is asserted.
//!
//! ```text
//! cargo run --release -p loadrig-wire --example costs
//! ```
//!
//! Each case runs 9 rounds of 1,000,000 operations into a reused buffer
//! (encoders) or over one encoded frame (parsers); the minimum and median
//! of the rounds are printed. Parsers are measured as a driver uses them:
//! match the frame, take its fields. Keeping the whole result alive with
//! `black_box` instead forces the 56 to 80-byte result into memory and
//! adds a few ns; figures also move by a few ns with what the compiler
//! inlines around the call, so read them as magnitudes.

use std::hint::black_box;
use std::num::NonZeroU16;
use std::time::Instant;

use bytes::BytesMut;
use loadrig_wire::mq::mqtt::{self, Packet, Publish, QosPid};
use loadrig_wire::mq::nats::{self, ServerOp};

const ROUNDS: usize = 9;
const OPS: u32 = 1_000_000;

/// Runs `op` `OPS` times per round; returns (min, median) ns per op.
fn measure(mut op: impl FnMut(u32)) -> (f64, f64) {
    let mut per_op: Vec<f64> = (0..ROUNDS)
        .map(|_| {
            let t = Instant::now();
            for i in 0..OPS {
                op(i);
            }
            t.elapsed().as_nanos() as f64 / f64::from(OPS)
        })
        .collect();
    per_op.sort_by(f64::total_cmp);
    (per_op[0], per_op[ROUNDS / 2])
}

fn report(name: &str, (min, median): (f64, f64)) {
    println!("{name:<40} {min:>7.1} {median:>7.1}");
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("{:<40} {:>7} {:>7}", "ns per operation", "min", "median");
    for size in [128usize, 1024] {
        let payload = bytes::Bytes::from(vec![b'x'; size]);
        let mut out = BytesMut::with_capacity(4096);

        report(
            &format!("NATS PUB encode ({size} B)"),
            measure(|_| {
                out.clear();
                let r =
                    nats::encode_pub(&mut out, black_box(b"bench.0"), None, black_box(&payload));
                black_box((r.is_ok(), &out));
            }),
        );
        let mut msg = BytesMut::new();
        nats::encode_msg(&mut msg, b"bench.0", b"1", None, &payload)?;
        report(
            &format!("NATS MSG parse ({size} B)"),
            measure(|_| {
                if let Ok(Some((ServerOp::Msg(m), n))) = nats::parse_server_op(black_box(&msg)) {
                    black_box((m.subject, m.sid, m.payload, n));
                }
            }),
        );
        for (label, qos) in [
            ("QoS 0", QosPid::AtMostOnce),
            ("QoS 1", QosPid::AtLeastOnce(NonZeroU16::MIN)),
        ] {
            let p = Publish {
                topic: "bench/0",
                qos,
                retain: false,
                dup: false,
                payload: &payload,
            };
            report(
                &format!("MQTT PUBLISH {label} encode ({size} B)"),
                measure(|i| {
                    out.clear();
                    let qos = match qos {
                        QosPid::AtMostOnce => qos,
                        // A fresh packet id each time, as a client does.
                        _ => QosPid::AtLeastOnce(
                            NonZeroU16::new((i as u16) | 1).unwrap_or(NonZeroU16::MIN),
                        ),
                    };
                    let r = mqtt::encode_publish(&mut out, black_box(&Publish { qos, ..p }));
                    black_box((r.is_ok(), &out));
                }),
            );
            let mut packet = BytesMut::new();
            mqtt::encode_publish(&mut packet, &p)?;
            report(
                &format!("MQTT PUBLISH {label} parse ({size} B)"),
                measure(|_| {
                    if let Ok(Some((Packet::Publish(p), n))) =
                        mqtt::parse_packet(black_box(&packet))
                    {
                        black_box((p.topic, p.qos, p.payload, n));
                    }
                }),
            );
        }
    }

    let mut ack = BytesMut::new();
    mqtt::encode_puback(&mut ack, NonZeroU16::MIN);
    report(
        "MQTT PUBACK parse",
        measure(|_| {
            if let Ok(Some((Packet::PubAck(id), n))) = mqtt::parse_packet(black_box(&ack)) {
                black_box((id, n));
            }
        }),
    );
    Ok(())
}

//! MQTT 3.1.1 (Mosquitto, EMQX, ...): its URL (`?qos=0|1`), the broker's
//! version and durability, and dialing on the shared byte [`Stream`]: one
//! connection per client, dealt over the servers of the URL round robin,
//! as client `loadrig-<pid>-<client>` with a clean session. What a
//! connection says after its CONNACK is the workload's [`MqttLink`]
//! (topics, packet identifiers, keep-alive). The broker's `$SYS` statistics
//! per lap are in [`stats`].

pub(crate) mod stats;

use std::io;
use std::num::NonZeroU16;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Buf;
use loadrig_spec::SpecError;
use loadrig_wire::mq::mqtt::{self, ConnectReturnCode, Packet, Qos};
use loadrig_workloads::pubsub::mqtt::{MqttLink, KEEP_ALIVE, MAX_DEPTH};
use loadrig_workloads::pubsub::PubSubBackend;
use loadrig_workloads::{TargetError, TargetInfo};

use crate::settings::Connector;
use crate::socket::{said, Dial, Socket, Stream};
use crate::url::TargetUrl;

const DEFAULT_PORT: u16 = 1883;

const EXPECTED: &str = "mqtt://[USER[:PASSWORD]@]HOST[:PORT][,PORT|,HOST[:PORT]...][?qos=0|1]";

/// How long asking the broker's version may take: a broker with no `$SYS`
/// topics never answers, so less than every other target's
/// [`ASIDE_TIMEOUT`](loadrig_workloads::ASIDE_TIMEOUT).
const SYS_TIMEOUT: Duration = Duration::from_secs(2);

/// Where Mosquitto keeps its version, retained.
const VERSION_TOPIC: &str = "$SYS/broker/version";

/// What the broker's process is called on this machine, looked at first
/// when its process is looked for (`local.rs`).
const PROCESS: &[&str] = &["mosquitto"];

/// Read buffer growth step.
const READ_CHUNK: usize = 64 * 1024;

/// Parse what follows `mqtt://`: the servers and the QoS (`?qos=0|1`).
pub(crate) fn parse_url(rest: &str) -> Result<(TargetUrl, Qos), SpecError> {
    let (url, options) = TargetUrl::parse("mqtt", rest, DEFAULT_PORT, EXPECTED)?;
    url.no_path("no path is taken")?;
    let bad = |why: String| {
        SpecError::new(
            "--target",
            format!("{why} in '{}' (expected {EXPECTED})", url.label()),
        )
    };
    if url.user.is_none() && url.password.is_some() {
        return Err(bad(
            "MQTT 3.1.1 takes a password only with a user name".to_string()
        ));
    }
    let mut qos = Qos::AtMostOnce;
    for (k, v) in crate::query_pairs(options.unwrap_or_default()) {
        match (k, v) {
            ("qos", "0") => qos = Qos::AtMostOnce,
            ("qos", "1") => qos = Qos::AtLeastOnce,
            ("qos", other) => return Err(bad(format!("qos '{other}' is not 0 or 1"))),
            (other, _) => return Err(bad(format!("unknown option '{other}'"))),
        }
    }
    Ok((url, qos))
}

/// One or more MQTT brokers. Cheap: it connects per use.
pub struct MqttTarget {
    at: Arc<TargetUrl>,
    via: Arc<Connector>,
    qos: Qos,
    /// The server the next connection goes to (round robin).
    next: AtomicUsize,
    /// Asked once: `None` when the broker did not say.
    version: OnceLock<Option<String>>,
    /// Read once (`queue`).
    queue: OnceLock<String>,
}

impl MqttTarget {
    pub(crate) fn new(at: TargetUrl, qos: Qos, via: Arc<Connector>) -> MqttTarget {
        MqttTarget {
            at: Arc::new(at),
            via,
            qos,
            next: AtomicUsize::new(0),
            version: OnceLock::new(),
            queue: OnceLock::new(),
        }
    }

    /// How many messages the first broker queues per client before it
    /// drops: its `max_queued_messages`, read from the configuration file
    /// its command line names when it runs on this machine. Mosquitto
    /// publishes neither its settings nor (in 2.0) a count of what it
    /// dropped under `$SYS`, so the file is the only place to read it.
    fn queue(&self) -> &str {
        self.queue.get_or_init(|| {
            let (host, port) = self.at.servers.first().cloned().unwrap_or_default();
            match crate::local::setting_of(
                &host,
                port,
                PROCESS,
                &["-c", "--config-file"],
                "max_queued_messages",
            ) {
                Ok((file, Some(n))) => format!("max_queued_messages {n} per client ({file})"),
                Ok((file, None)) => format!(
                    "max_queued_messages 1000 per client (Mosquitto's default: {file} does not set it)"
                ),
                Err(why) => format!(
                    "max_queued_messages per client, 1000 unless set (not read: {why})"
                ),
            }
        })
    }

    /// The first broker's `$SYS/broker/version` (retained by Mosquitto),
    /// from a connection of its own.
    async fn ask_version(&self) -> Option<String> {
        let id = format!("loadrig-{}-version", std::process::id());
        let mut sock = open(&self.at, &self.via, 0, &id).await.ok()?;
        let pid = NonZeroU16::MIN;
        mqtt::encode_subscribe(&mut sock.wbuf, pid, &[(VERSION_TOPIC, Qos::AtMostOnce)]).ok()?;
        let version = loop {
            match mqtt::parse_packet(&sock.rbuf).ok()? {
                Some((Packet::Publish(p), _)) if p.topic == VERSION_TOPIC => {
                    break String::from_utf8_lossy(p.payload).into_owned();
                }
                Some((_, n)) => sock.rbuf.advance(n),
                None => sock.fill().await.ok()?,
            }
        };
        mqtt::encode_disconnect(&mut sock.wbuf);
        let _ = sock.flush();
        Some(version)
    }
}

impl TargetInfo for MqttTarget {
    async fn server_version(&self) -> Option<String> {
        if self.version.get().is_none() {
            let v = tokio::time::timeout(SYS_TIMEOUT, self.ask_version())
                .await
                .ok()
                .flatten();
            let _ = self.version.set(v);
        }
        self.version.get().cloned().flatten()
    }

    fn durability(&self) -> Option<String> {
        let promise = match self.qos {
            Qos::AtMostOnce => "at most once: QoS 0, the broker acknowledges nothing",
            _ => "at least once: the broker acknowledges each publish; duplicates possible",
        };
        Some(format!("{promise}; the broker queues {}", self.queue()))
    }

    fn max_depth(&self) -> usize {
        MAX_DEPTH
    }

    /// `$SYS` on the first broker, and its process when it runs here.
    fn server_stats(&self) -> Vec<Box<dyn loadrig_workloads::stats::StatsSource>> {
        let sys = Box::new(stats::Sys::new(self.at.clone(), self.via.clone()))
            as Box<dyn loadrig_workloads::stats::StatsSource>;
        std::iter::once(sys)
            .chain(crate::local::first_process(&self.at, PROCESS))
            .collect()
    }
}

impl PubSubBackend for MqttTarget {
    type Conn = MqttConn;

    /// The client id is `loadrig-<pid>-<client>`, so clients of several
    /// processes do not take each other's sessions.
    async fn connect(&self, client: u64) -> Result<MqttConn, TargetError> {
        let server = self.next.fetch_add(1, Ordering::Relaxed) % self.at.servers.len();
        let client_id = format!("loadrig-{}-{client}", std::process::id());
        let sock = open(&self.at, &self.via, server, &client_id)
            .await
            .map_err(|e| TargetError::Unreachable {
                target: self.at.label(),
                reason: e.to_string(),
            })?;
        let dial = Arc::new(MqttDial {
            at: self.at.clone(),
            via: self.via.clone(),
            client_id,
        });
        Ok(MqttLink::new(Stream::new(sock, dial, server), self.qos))
    }

    fn label(&self) -> String {
        format!("MQTT QoS {}", self.qos.level())
    }

    /// The limit as read from the broker's configuration (`queue`).
    fn queue_limit(&self) -> Option<String> {
        Some(format!(
            "the broker dropped them: Mosquitto queues at most {} and drops the rest when \
             publishers outrun its delivery; the deliver row's latency is that queue",
            self.queue()
        ))
    }
}

/// Why a connection could not be opened.
#[derive(Debug, thiserror::Error)]
enum LinkError {
    #[error("{server}: {}", said(source, "MQTT"))]
    Io {
        server: String,
        #[source]
        source: io::Error,
    },
    #[error("{server}: the broker refused the connection: {why}")]
    Refused { server: String, why: &'static str },
}

/// A refused CONNACK's return code, in words.
fn refusal(code: ConnectReturnCode) -> &'static str {
    match code {
        ConnectReturnCode::Accepted => "accepted",
        ConnectReturnCode::UnacceptableProtocolVersion => {
            "it does not speak MQTT 3.1.1 (return code 1)"
        }
        ConnectReturnCode::IdentifierRejected => "client identifier rejected (return code 2)",
        ConnectReturnCode::ServerUnavailable => "the MQTT service is unavailable (return code 3)",
        ConnectReturnCode::BadUserNameOrPassword => "bad user name or password (return code 4)",
        ConnectReturnCode::NotAuthorized => "not authorized (return code 5)",
    }
}

/// Connect to server `i` through `via` as `client_id` (clean session) and
/// wait for the CONNACK.
async fn open(
    at: &TargetUrl,
    via: &Connector,
    i: usize,
    client_id: &str,
) -> Result<Socket, LinkError> {
    let (host, port, name) = at.server(i);
    let io = |source| LinkError::Io {
        server: name.clone(),
        source,
    };
    let mut sock = Socket::open(via, &host, port, READ_CHUNK, at.tls)
        .await
        .map_err(io)?;
    let connect = mqtt::Connect {
        client_id,
        clean_session: true,
        keep_alive: KEEP_ALIVE,
        will: None,
        username: at.user.as_deref(),
        password: at.password.as_deref().map(str::as_bytes),
    };
    mqtt::encode_connect(&mut sock.wbuf, &connect)
        .map_err(|e| io(io::Error::new(io::ErrorKind::InvalidInput, e)))?;
    let connack = async {
        loop {
            match mqtt::parse_packet(&sock.rbuf) {
                Ok(Some((Packet::ConnAck(ack), n))) => {
                    sock.rbuf.advance(n);
                    return Ok(ack.code);
                }
                Ok(Some((p, _))) => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("{:?} before CONNACK", p.packet_type()),
                    ))
                }
                Ok(None) => sock.fill().await?,
                Err(e) => return Err(io::Error::new(io::ErrorKind::InvalidData, e)),
            }
        }
    };
    match tokio::time::timeout(via.handshake_limit(), connack).await {
        Err(_) => Err(io(io::Error::new(io::ErrorKind::TimedOut, "timed out"))),
        Ok(Err(e)) => Err(io(e)),
        Ok(Ok(ConnectReturnCode::Accepted)) => Ok(sock),
        Ok(Ok(code)) => Err(LinkError::Refused {
            server: name,
            why: refusal(code),
        }),
    }
}

/// One client's connection: the workload's MQTT link on the shared stream.
pub type MqttConn = MqttLink<Stream<MqttDial>>;

/// How a connection (re)opens its socket: TCP, then CONNECT as its own
/// client id, up to the CONNACK.
pub struct MqttDial {
    at: Arc<TargetUrl>,
    via: Arc<Connector>,
    client_id: String,
}

impl Dial for MqttDial {
    fn servers(&self) -> usize {
        self.at.servers.len()
    }

    async fn dial(&self, server: usize) -> Option<Socket> {
        open(&self.at, &self.via, server, &self.client_id)
            .await
            .ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_mqtt_urls() {
        let (u, q) = parse_url("127.0.0.1").unwrap();
        assert_eq!(u.servers, [("127.0.0.1".to_string(), 1883)]);
        assert_eq!(q, Qos::AtMostOnce);
        let (u, q) = parse_url("bob:s3cret@h1,h2:1884,1885?qos=1").unwrap();
        assert_eq!(q, Qos::AtLeastOnce);
        assert_eq!(u.servers.len(), 3);
        assert_eq!(u.label(), "mqtt://bob:***@h1:1883,h2:1884,h2:1885");
        let (u, q) = parse_url("bob@h/?qos=0").unwrap();
        assert_eq!(
            (u.user.as_deref(), u.password.as_deref(), q),
            (Some("bob"), None, Qos::AtMostOnce)
        );
        for bad in [
            "",
            "h?qos=2",
            "h?qos=",
            "bob:secret@h?retain=1",
            ":secret@h",
            "h:0",
        ] {
            let e = parse_url(bad).unwrap_err();
            assert_eq!(e.flag, "--target", "{bad}");
            assert!(!e.to_string().contains("secret"), "{e}");
        }
    }
}

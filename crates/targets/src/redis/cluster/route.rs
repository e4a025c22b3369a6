//! One engine connection to a Redis Cluster: a router in front of one
//! pipelined socket per master, behind the same [`ByteStream`] the
//! workload reads a single server through.
//!
//! The workload appends one whole command to [`ByteStream::out`] and says
//! so ([`ByteStream::sent`]); the router reads its key, sends it to the
//! master of the key's slot and keeps a copy until it is answered. MSET
//! whose keys fall in several slots is split into one MSET per slot, its
//! answer the first error among the parts, else their `+OK`. Each socket
//! answers in order; the answers are put back in the order the commands
//! came, in the one read buffer the workload parses ([`ByteStream::input`]),
//! so the workload's FIFO of tags holds as it does on one server.
//!
//! `-MOVED slot host:port`: the slot has a new owner; the connection's map
//! takes it and the command goes there. `-ASK slot host:port`: this once,
//! `ASKING` and the command go there (the slot is being migrated). Both
//! are counted ([`ByteStream::take_redirects`]) and never reach the
//! workload, up to [`MAX_HOPS`](super::MAX_HOPS) redirects a command.

use std::collections::VecDeque;
use std::sync::Arc;

use bytes::{Buf, Bytes, BytesMut};
use loadrig_metrics::{ErrorKind, OpError};
use loadrig_wire::kv::resp::slot::key_slot;
use loadrig_wire::kv::resp::{self, Reply};
use loadrig_workloads::stream::ByteStream;
use loadrig_workloads::TargetError;

use super::{read_map, Redirect, SlotMap, MAX_HOPS};
use crate::redis::Link;
use crate::settings::Connector;
use crate::socket::{op_error, Socket};
use crate::url::TargetUrl;

const PROTOCOL: OpError = OpError {
    kind: ErrorKind::Protocol,
    class: "",
};

const ASKING: &[u8] = b"*1\r\n$6\r\nASKING\r\n";

/// What a master's socket has in flight, oldest first.
enum Sent {
    /// `ASKING` before a command sent after `-ASK`: its `+OK` is dropped.
    Asking,
    /// A command (or one slot's part of a split MSET) for the command
    /// numbered `seq`, kept to be sent again on a redirect.
    Part { seq: u64, cmd: Bytes, hops: u8 },
}

/// One master: its socket (opened when a redirect names a new one), the
/// bytes for it before that, and what it has in flight.
struct Node {
    sock: Option<Socket>,
    backlog: BytesMut,
    fifo: VecDeque<Sent>,
}

impl Node {
    fn new(sock: Option<Socket>) -> Node {
        Node {
            sock,
            backlog: BytesMut::new(),
            fifo: VecDeque::new(),
        }
    }
}

/// A command not yet passed to the workload.
struct Pending {
    /// Parts not answered yet.
    waiting: u32,
    /// The answer: the first error among the parts, else the first answer.
    reply: Option<BytesMut>,
    failed: bool,
}

/// One engine connection to a cluster (see the module's comment).
pub struct ClusterStream {
    at: Arc<TargetUrl>,
    via: Arc<Connector>,
    db: u32,
    /// The master keyless commands (PING) go to.
    home: usize,
    map: SlotMap,
    nodes: Vec<Node>,
    /// Where the workload appends one command at a time.
    staging: BytesMut,
    /// The answers in the order the commands came: what the workload reads.
    merged: BytesMut,
    /// Commands not yet in `merged`, oldest first: `order[i]` is number
    /// `base + i`.
    order: VecDeque<Pending>,
    base: u64,
    /// MOVED and ASK followed since the last `take_redirects`.
    redirects: [u64; 2],
    /// Bytes of sockets replaced since the last `take_bytes`.
    carried: (u64, u64),
    /// The host a redirect without one means.
    seed: String,
    /// Hash tags of the slots `home` served when the map was read
    /// ([`ByteStream::key_tag`]).
    tags: Vec<[u8; 3]>,
}

impl ClusterStream {
    /// Read the slot map and connect to every master.
    pub(crate) async fn open(
        at: Arc<TargetUrl>,
        via: Arc<Connector>,
        db: u32,
        home: usize,
    ) -> Result<ClusterStream, TargetError> {
        let map = read_map(&at, &via).await?;
        let mut nodes = Vec::with_capacity(map.nodes.len());
        for (host, port) in &map.nodes {
            let link = Link::dial(&at, &via, host, *port, db).await.map_err(|e| {
                TargetError::Unreachable {
                    target: at.label(),
                    reason: e.to_string(),
                }
            })?;
            nodes.push(Node::new(Some(link.sock)));
        }
        let seed = at.servers.first().map(|s| s.0.clone()).unwrap_or_default();
        let home = home % nodes.len().max(1);
        let tags = map.tags(home);
        Ok(ClusterStream {
            home,
            tags,
            at,
            via,
            db,
            map,
            nodes,
            staging: BytesMut::with_capacity(256),
            merged: BytesMut::with_capacity(256),
            order: VecDeque::with_capacity(64),
            base: 0,
            redirects: [0, 0],
            carried: (0, 0),
            seed,
        })
    }

    /// Queue `cmd` for master `node`, for command `seq`.
    fn send(&mut self, node: usize, seq: u64, cmd: Bytes, hops: u8, asking: bool) {
        while self.nodes.len() <= node {
            self.nodes.push(Node::new(None));
        }
        let n = &mut self.nodes[node];
        let out = match n.sock.as_mut() {
            Some(s) => &mut s.wbuf,
            None => &mut n.backlog,
        };
        if asking {
            out.extend_from_slice(ASKING);
            n.fifo.push_back(Sent::Asking);
        }
        out.extend_from_slice(&cmd);
        n.fifo.push_back(Sent::Part { seq, cmd, hops });
    }

    /// Where command `cmd` goes: one master, or (MSET over several slots)
    /// one MSET per slot.
    fn route(&self, cmd: &[u8]) -> Route {
        let Ok(Some((Reply::Array(Some(parts)), _))) = resp::parse_reply(cmd) else {
            return Route::One(self.home);
        };
        let mut it = parts.iter();
        let name = it.next().and_then(|n| n.as_bytes()).unwrap_or_default();
        let Some(key) = it.next().and_then(|k| k.as_bytes()) else {
            return Route::One(self.home);
        };
        let first = key_slot(key);
        if parts.len() > 3 && name.eq_ignore_ascii_case(b"MSET") {
            let pairs: Vec<(&[u8], &[u8])> = {
                let mut all = parts.iter().skip(1).filter_map(|p| p.as_bytes());
                std::iter::from_fn(|| Some((all.next()?, all.next()?))).collect()
            };
            if pairs.iter().any(|(k, _)| key_slot(k) != first) {
                let mut slots: Vec<(u16, Vec<&[u8]>)> = Vec::new();
                for (k, v) in pairs {
                    let s = key_slot(k);
                    match slots.iter_mut().find(|(x, _)| *x == s) {
                        Some((_, args)) => args.extend([k, v]),
                        None => slots.push((s, vec![b"MSET", k, v])),
                    }
                }
                return Route::Split(
                    slots
                        .into_iter()
                        .map(|(s, args)| {
                            let mut b = BytesMut::new();
                            resp::encode_command(&mut b, &args);
                            (self.node_of(s), b.freeze())
                        })
                        .collect(),
                );
            }
        }
        Route::One(self.node_of(first))
    }

    fn node_of(&self, slot: u16) -> usize {
        usize::from(self.map.owner.get(usize::from(slot)).copied().unwrap_or(0))
    }

    /// Take every whole answer the sockets hold: redirects sent on,
    /// answers kept, finished commands moved to `merged` in order.
    fn pump(&mut self) -> Result<(), OpError> {
        for n in 0..self.nodes.len() {
            loop {
                let node = &mut self.nodes[n];
                let Some(sock) = node.sock.as_mut() else {
                    break;
                };
                let len = match resp::reply_len(&sock.rbuf) {
                    Ok(Some(len)) => len,
                    Ok(None) => break,
                    Err(_) => return Err(PROTOCOL),
                };
                let (seq, cmd, hops) = match node.fifo.pop_front() {
                    None => return Err(PROTOCOL),
                    Some(Sent::Asking) => {
                        sock.rbuf.advance(len);
                        continue;
                    }
                    Some(Sent::Part { seq, cmd, hops }) => (seq, cmd, hops),
                };
                let reply = sock.rbuf.get(..len).unwrap_or_default();
                if reply.first() == Some(&b'-') && hops < MAX_HOPS {
                    let text = reply.get(1..len.saturating_sub(2)).unwrap_or_default();
                    if let Some(r) = Redirect::parse(text, &self.seed) {
                        sock.rbuf.advance(len);
                        self.redirect(r, seq, cmd, hops + 1);
                        continue;
                    }
                }
                // The oldest command's only answer goes straight to the
                // workload's buffer; any other waits, copied.
                let head = seq == self.base
                    && self
                        .order
                        .front()
                        .is_some_and(|p| p.waiting == 1 && p.reply.is_none());
                if head {
                    self.merged.extend_from_slice(reply);
                    sock.rbuf.advance(len);
                    self.order.pop_front();
                    self.base += 1;
                    continue;
                }
                let reply = BytesMut::from(reply);
                sock.rbuf.advance(len);
                self.answer(seq, reply);
            }
        }
        while self.order.front().is_some_and(|p| p.waiting == 0) {
            if let Some(p) = self.order.pop_front() {
                self.merged
                    .extend_from_slice(p.reply.as_deref().unwrap_or(b"$-1\r\n"));
                self.base += 1;
            }
        }
        Ok(())
    }

    fn redirect(&mut self, r: Redirect, seq: u64, cmd: Bytes, hops: u8) {
        let node = usize::from(self.map.node(&r.host, r.port));
        if r.ask {
            self.redirects[1] += 1;
        } else {
            self.redirects[0] += 1;
            if let Some(o) = self.map.owner.get_mut(r.slot) {
                *o = node as u16;
            }
        }
        self.send(node, seq, cmd, hops, r.ask);
    }

    fn answer(&mut self, seq: u64, reply: BytesMut) {
        let Some(p) = usize::try_from(seq - self.base)
            .ok()
            .and_then(|i| self.order.get_mut(i))
        else {
            return;
        };
        p.waiting = p.waiting.saturating_sub(1);
        let error = reply.first() == Some(&b'-');
        if p.reply.is_none() || (error && !p.failed) {
            p.reply = Some(reply);
            p.failed = error;
        }
    }

    /// Open the sockets of masters a redirect named, with what waits for them.
    async fn connect_named(&mut self) -> Result<(), OpError> {
        for i in 0..self.nodes.len() {
            if self.nodes[i].sock.is_some() || self.nodes[i].fifo.is_empty() {
                continue;
            }
            let (host, port) = self.map.nodes.get(i).cloned().unwrap_or_default();
            let link = Link::dial(&self.at, &self.via, &host, port, self.db)
                .await
                .map_err(|_| OpError::new(ErrorKind::Connect))?;
            let mut sock = link.sock;
            let backlog = std::mem::take(&mut self.nodes[i].backlog);
            sock.wbuf.extend_from_slice(&backlog);
            self.nodes[i].sock = Some(sock);
        }
        Ok(())
    }
}

enum Route {
    One(usize),
    Split(Vec<(usize, Bytes)>),
}

impl ByteStream for ClusterStream {
    #[inline]
    fn out(&mut self) -> &mut BytesMut {
        &mut self.staging
    }

    #[inline]
    fn input(&mut self) -> &mut BytesMut {
        &mut self.merged
    }

    fn sent(&mut self) {
        // A copy (the staging buffer keeps its room for the next one).
        let cmd = Bytes::copy_from_slice(&self.staging);
        self.staging.clear();
        let seq = self.base + self.order.len() as u64;
        match self.route(&cmd) {
            Route::One(node) => {
                self.order.push_back(Pending {
                    waiting: 1,
                    reply: None,
                    failed: false,
                });
                self.send(node, seq, cmd, 0, false);
            }
            Route::Split(parts) => {
                self.order.push_back(Pending {
                    waiting: parts.len() as u32,
                    reply: None,
                    failed: false,
                });
                for (node, part) in parts {
                    self.send(node, seq, part, 0, false);
                }
            }
        }
    }

    async fn fill(&mut self) -> Result<(), OpError> {
        let had = self.merged.len();
        loop {
            self.connect_named().await?;
            let mut busy = self
                .nodes
                .iter_mut()
                .filter(|n| !n.fifo.is_empty())
                .filter_map(|n| n.sock.as_mut());
            match (busy.next(), busy.next()) {
                (None, _) => return Ok(()),
                // One master waited for (every -P 1 connection): no boxes.
                (Some(only), None) => only.fill().await.map_err(op_error)?,
                (Some(a), Some(b)) => {
                    let waits: Vec<_> = [a, b]
                        .into_iter()
                        .chain(busy)
                        .map(|s| Box::pin(s.fill()))
                        .collect();
                    let (done, _, _) = futures_util::future::select_all(waits).await;
                    done.map_err(op_error)?;
                }
            }
            self.pump()?;
            if self.merged.len() > had {
                return Ok(());
            }
        }
    }

    fn unwritten(&self) -> usize {
        self.staging.len()
            + self
                .nodes
                .iter()
                .map(|n| n.backlog.len() + n.sock.as_ref().map_or(0, |s| s.wbuf.len()))
                .sum::<usize>()
    }

    async fn flush(&mut self) -> Result<(), OpError> {
        self.connect_named().await?;
        for n in &mut self.nodes {
            if let Some(s) = n.sock.as_mut() {
                s.flush_all().await.map_err(op_error)?;
            }
        }
        Ok(())
    }

    async fn sibling(&self) -> Result<Self, OpError> {
        // Pub/sub is not routed over a cluster.
        Err(OpError::new(ErrorKind::Connect))
    }

    async fn reconnect(&mut self) -> Result<(), OpError> {
        let fresh = ClusterStream::open(self.at.clone(), self.via.clone(), self.db, self.home)
            .await
            .map_err(|_| OpError::new(ErrorKind::Connect))?;
        let (sent, received) = self.take_bytes();
        let redirects = self.redirects;
        *self = fresh;
        self.carried = (sent, received);
        self.redirects = redirects;
        Ok(())
    }

    fn take_bytes(&mut self) -> (u64, u64) {
        let (mut sent, mut received) = std::mem::take(&mut self.carried);
        for s in self.nodes.iter_mut().filter_map(|n| n.sock.as_mut()) {
            let (a, b) = s.take_bytes();
            sent += a;
            received += b;
        }
        (sent, received)
    }

    fn take_redirects(&mut self) -> [u64; 2] {
        std::mem::take(&mut self.redirects)
    }

    #[inline]
    fn key_tag(&self, draw: u64) -> Option<[u8; 3]> {
        let n = self.tags.len() as u64;
        let i = usize::try_from(draw.checked_rem(n)?).ok()?;
        self.tags.get(i).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadrig_wire::kv::resp::slot::SLOTS;

    /// A stream over three masters not connected yet (their bytes wait in
    /// the backlogs): slots 0-5460, 5461-10922, 10923-16383.
    fn three() -> ClusterStream {
        let owner = (0..SLOTS)
            .map(|s| match s {
                0..=5460 => 0,
                5461..=10922 => 1,
                _ => 2,
            })
            .collect();
        let map = SlotMap {
            nodes: vec![("h".into(), 1), ("h".into(), 2), ("h".into(), 3)],
            owner,
        };
        ClusterStream {
            at: Arc::new(super::super::parse_url("h:1").unwrap()),
            via: Connector::new(&crate::ClientSettings::default()),
            db: 0,
            home: 1,
            tags: map.tags(1),
            map,
            nodes: (0..3).map(|_| Node::new(None)).collect(),
            staging: BytesMut::new(),
            merged: BytesMut::new(),
            order: VecDeque::new(),
            base: 0,
            redirects: [0, 0],
            carried: (0, 0),
            seed: "h".into(),
        }
    }

    fn queue(c: &mut ClusterStream, parts: &[&[u8]]) {
        resp::encode_command(c.out(), parts);
        c.sent();
    }

    fn backlogs(c: &ClusterStream) -> Vec<usize> {
        c.nodes.iter().map(|n| n.fifo.len()).collect()
    }

    #[test]
    fn a_connections_tags_are_of_its_masters_slots() {
        let mut c = three();
        for draw in [0, 1, 7, 5460, u64::MAX] {
            let tag = c.key_tag(draw).unwrap();
            let key = [b"key:{", &tag[..], b"}:000000000042"].concat();
            queue(&mut c, &[b"SET", &key, b"v"]);
        }
        // Every one to master 1 (home), the master of 5461-10922.
        assert_eq!(backlogs(&c), [0, 5, 0]);
        assert_eq!(c.tags.len(), 10922 - 5461 + 1);
    }

    #[test]
    fn each_key_goes_to_its_slots_master_and_keyless_ones_home() {
        let mut c = three();
        // foo is slot 12182 (master 2), key:000000000042 slot 7803 (1),
        // {user1000}x hashes as user1000 (slot 3443, master 0).
        queue(&mut c, &[b"GET", b"foo"]);
        queue(&mut c, &[b"SET", b"key:000000000042", b"v"]);
        queue(&mut c, &[b"INCR", b"{user1000}x"]);
        queue(&mut c, &[b"PING"]);
        assert_eq!(backlogs(&c), [1, 2, 1]);
        assert_eq!(c.order.len(), 4);
        assert!(c.staging.is_empty());
        assert_eq!(&c.nodes[2].backlog[..], b"*2\r\n$3\r\nGET\r\n$3\r\nfoo\r\n");
    }

    #[test]
    fn mset_over_several_slots_is_one_mset_per_slot() {
        let mut c = three();
        queue(
            &mut c,
            &[
                b"MSET",
                b"foo",
                b"1",
                b"key:000000000042",
                b"2",
                b"{foo}z",
                b"3",
            ],
        );
        // foo and {foo}z share slot 12182; key:000000000042 is elsewhere.
        assert_eq!(backlogs(&c), [0, 1, 1]);
        assert_eq!(c.order.front().map(|p| p.waiting), Some(2));
        let on2 = String::from_utf8_lossy(&c.nodes[2].backlog).into_owned();
        assert_eq!(
            on2,
            "*5\r\n$4\r\nMSET\r\n$3\r\nfoo\r\n$1\r\n1\r\n$6\r\n{foo}z\r\n$1\r\n3\r\n"
        );
        // One slot: sent whole.
        queue(&mut c, &[b"MSET", b"foo", b"1", b"{foo}y", b"2"]);
        assert_eq!(backlogs(&c), [0, 1, 2]);
        assert_eq!(c.order.back().map(|p| p.waiting), Some(1));
    }

    #[test]
    fn answers_keep_the_commands_order_and_an_error_part_wins() {
        let mut c = three();
        queue(&mut c, &[b"MSET", b"foo", b"1", b"key:000000000042", b"2"]);
        queue(&mut c, &[b"GET", b"foo"]);
        // The GET's answer first, then the MSET's parts.
        c.answer(1, BytesMut::from(&b"$1\r\n1\r\n"[..]));
        c.answer(0, BytesMut::from(&b"+OK\r\n"[..]));
        c.pump().unwrap();
        assert!(c.merged.is_empty(), "the MSET waits for its second part");
        c.answer(0, BytesMut::from(&b"-OOM no\r\n"[..]));
        c.pump().unwrap();
        assert_eq!(&c.merged[..], b"-OOM no\r\n$1\r\n1\r\n");
        assert!(c.order.is_empty());
    }

    #[test]
    fn moved_changes_the_map_and_ask_sends_asking_once() {
        let mut c = three();
        queue(&mut c, &[b"GET", b"foo"]);
        let Some(Sent::Part { seq, cmd, .. }) = c.nodes[2].fifo.pop_front() else {
            panic!("GET foo is on master 2");
        };
        let moved = Redirect::parse(b"MOVED 12182 h:1", "h").unwrap();
        c.redirect(moved, seq, cmd.clone(), 1);
        assert_eq!(c.map.owner[12182], 0);
        assert_eq!(backlogs(&c), [1, 0, 0]);
        let ask = Redirect::parse(b"ASK 12182 h:9", "h").unwrap();
        c.redirect(ask, seq, cmd, 2);
        // A new master: its own node, ASKING first; the map unchanged.
        assert_eq!(c.map.owner[12182], 0);
        assert_eq!(backlogs(&c), [1, 0, 0, 2]);
        assert!(c.nodes[3].backlog.starts_with(ASKING));
        assert_eq!(c.take_redirects(), [1, 1]);
    }
}

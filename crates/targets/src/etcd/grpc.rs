//! gRPC over HTTP/2 on one TCP connection (the `h2` crate), as many calls
//! in flight as the caller starts: gRPC multiplexes, so one connection
//! carries a pipeline of transactions, each its own stream.
//!
//! Everything runs inside the caller's task: [`Channel::poll_next`] drives
//! the HTTP/2 connection (reads, writes, flow control), opens streams for
//! the calls queued by [`Channel::start`], and returns the first call that
//! finished. No task is spawned, so a reply wakes no other task and no
//! thread hands it over. State lives in the channel, so dropping the
//! future of [`Channel::next`] loses nothing (cancel safe).
//!
//! A call ends with trailers: `grpc-status` 0 and one message, or a status
//! and its message (a "trailers-only" answer carries them in the headers).

use std::collections::VecDeque;
use std::future::{poll_fn, Future};
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use bytes::{Bytes, BytesMut};
use futures_util::stream::{FuturesUnordered, StreamExt};
use h2::client::{Connection, ResponseFuture, SendRequest};
use h2::RecvStream;
use http::header::{HeaderMap, HeaderValue, CONTENT_TYPE, TE};
use http::{Request, Uri};
use loadrig_wire::etcd::frame::{self, Code};
use loadrig_wire::etcd::path;
use tokio::net::TcpStream;

/// Each stream's receive window: a Range of 1,000 keys of 100 bytes
/// (about 130 KB) arrives without waiting for a window update.
const STREAM_WINDOW: u32 = 4 << 20;
/// The connection's receive window, shared by its streams.
const CONN_WINDOW: u32 = 32 << 20;

/// The methods loadrig calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Method {
    Range,
    Put,
    DeleteRange,
    Txn,
    Status,
    MemberList,
}

impl Method {
    const ALL: [Method; 6] = [
        Method::Range,
        Method::Put,
        Method::DeleteRange,
        Method::Txn,
        Method::Status,
        Method::MemberList,
    ];

    fn path(self) -> &'static str {
        match self {
            Method::Range => path::RANGE,
            Method::Put => path::PUT,
            Method::DeleteRange => path::DELETE_RANGE,
            Method::Txn => path::TXN,
            Method::Status => path::STATUS,
            Method::MemberList => path::MEMBER_LIST,
        }
    }
}

/// Why one call failed (the connection may be fine).
#[derive(Debug, thiserror::Error)]
pub(crate) enum CallError {
    /// The member answered with a gRPC status other than OK.
    #[error("{code:?}: {message}")]
    Status { code: Code, message: String },
    /// The stream was reset or the connection failed under it.
    #[error("stream: {0}")]
    Stream(#[source] h2::Error),
    /// Not a gRPC answer (an HTTP status other than 200, no status, not
    /// one whole message).
    #[error("not a gRPC answer: {0}")]
    Malformed(&'static str),
}

/// A call that finished, with what the caller attached to it.
pub(crate) struct Done<M> {
    pub meta: M,
    /// The response message, without its gRPC prefix.
    pub result: Result<Bytes, CallError>,
}

/// Why the connection is gone: every call in flight on it is lost.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ChannelError {
    #[error("{0}")]
    Io(#[from] io::Error),
    #[error("HTTP/2: {0}")]
    H2(#[from] h2::Error),
    #[error("the member closed the connection")]
    Closed,
}

struct Queued<M> {
    method: Method,
    body: Bytes,
    meta: M,
}

/// One HTTP/2 connection to one member.
pub(crate) struct Channel<M> {
    send: SendRequest<Bytes>,
    conn: Connection<TcpStream, Bytes>,
    /// Each method's URI, parsed once (a clone shares its bytes).
    uris: [Uri; Method::ALL.len()],
    headers: HeaderMap,
    queued: VecDeque<Queued<M>>,
    calls: FuturesUnordered<Call<M>>,
    sent: u64,
    received: u64,
}

impl<M: Unpin> Channel<M> {
    /// Connect to `host:port` through `via` and agree on HTTP/2 (prior
    /// knowledge, no TLS), within `via`'s handshake limit.
    pub(crate) async fn open(
        via: &crate::settings::Connector,
        host: &str,
        port: u16,
    ) -> Result<Self, ChannelError> {
        let timeout = via.handshake_limit();
        let opening = async {
            // From the next `--bind` address, as every other target's.
            let tcp = crate::socket::dial(via, host, port).await?;
            tcp.set_nodelay(true)?;
            let (send, conn) = h2::client::Builder::new()
                .initial_window_size(STREAM_WINDOW)
                .initial_connection_window_size(CONN_WINDOW)
                .handshake::<_, Bytes>(tcp)
                .await?;
            Ok::<_, ChannelError>((send, conn))
        };
        let (send, conn) = tokio::time::timeout(timeout, opening)
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "connection timed out"))??;
        let authority = crate::url::hostport(host, port);
        let uris = Method::ALL.map(|m| {
            format!("http://{authority}{}", m.path())
                .parse::<Uri>()
                .unwrap_or_default()
        });
        let mut headers = HeaderMap::with_capacity(2);
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
        headers.insert(TE, HeaderValue::from_static("trailers"));
        let mut channel = Channel {
            send,
            conn,
            uris,
            headers,
            queued: VecDeque::new(),
            calls: FuturesUnordered::new(),
            sent: 0,
            received: 0,
        };
        // One real call before the connection is handed out: a server
        // that is not an etcd member (or not HTTP/2 at all) is found out
        // here, at connect time, not as the run's first errors.
        tokio::time::timeout(timeout, channel.probe())
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "no answer to Status"))??;
        Ok(channel)
    }

    /// Queue a call whose request message (prefix included) is `body`;
    /// never blocks: its stream opens in the next [`Channel::poll_next`].
    pub fn start(&mut self, method: Method, body: Bytes, meta: M) {
        self.queued.push_back(Queued { method, body, meta });
    }

    /// Drive the connection; the first call that finished, or the
    /// connection's failure. Pending while calls are in flight and none
    /// is done; with none in flight it waits for the connection alone.
    pub fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Result<Done<M>, ChannelError>> {
        loop {
            if let Poll::Ready(Err(e)) = self.drive(cx) {
                return Poll::Ready(Err(e));
            }
            let mut opened = false;
            while !self.queued.is_empty() {
                match self.send.poll_ready(cx) {
                    Poll::Ready(Ok(())) => {}
                    Poll::Ready(Err(e)) => return Poll::Ready(Err(e.into())),
                    Poll::Pending => break,
                }
                let Some(q) = self.queued.pop_front() else {
                    break;
                };
                let (response, mut stream) =
                    self.send.send_request(self.request(q.method), false)?;
                self.sent += q.body.len() as u64;
                stream.send_data(q.body, true)?;
                self.calls.push(Call {
                    meta: Some(q.meta),
                    state: State::Head(response),
                });
                opened = true;
            }
            if let Poll::Ready(Some(done)) = self.calls.poll_next_unpin(cx) {
                if let Ok(m) = &done.result {
                    self.received += m.len() as u64;
                }
                return Poll::Ready(Ok(done));
            }
            if !opened {
                // The frames of the streams just opened are written by
                // the connection: poll it once more before waiting.
                return Poll::Pending;
            }
        }
    }

    /// `Maintenance.Status`, answered OK, on its own (nothing else in
    /// flight).
    async fn probe(&mut self) -> Result<(), ChannelError> {
        poll_fn(|cx| {
            if let Poll::Ready(Err(e)) = self.drive(cx) {
                return Poll::Ready(Err(e));
            }
            self.send.poll_ready(cx).map_err(ChannelError::from)
        })
        .await?;
        let mut body = BytesMut::new();
        loadrig_wire::etcd::request::encode_empty(&mut body);
        let (response, mut stream) = self
            .send
            .send_request(self.request(Method::Status), false)?;
        stream.send_data(body.freeze(), true)?;
        let mut call = Call {
            meta: Some(()),
            state: State::Head(response),
        };
        let done = poll_fn(|cx| {
            if let Poll::Ready(Err(e)) = self.drive(cx) {
                return Poll::Ready(Err(e));
            }
            Pin::new(&mut call).poll(cx).map(Ok)
        })
        .await?;
        done.result.map(|_| ()).map_err(|e| {
            ChannelError::Io(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("not an etcd member: {e}"),
            ))
        })
    }

    /// Poll the connection: `Ready(Err)` when it is gone, `Pending` while
    /// it lives (its I/O done for now).
    fn drive(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ChannelError>> {
        match Pin::new(&mut self.conn).poll(cx) {
            Poll::Ready(Ok(())) => Poll::Ready(Err(ChannelError::Closed)),
            Poll::Ready(Err(e)) => Poll::Ready(Err(e.into())),
            Poll::Pending => Poll::Pending,
        }
    }

    fn request(&self, method: Method) -> Request<()> {
        let mut req = Request::new(());
        *req.method_mut() = http::Method::POST;
        *req.uri_mut() = self.uris[method as usize].clone();
        *req.headers_mut() = self.headers.clone();
        req
    }

    /// [`Channel::poll_next`] as a future (cancel safe).
    pub async fn next(&mut self) -> Result<Done<M>, ChannelError> {
        poll_fn(|cx| self.poll_next(cx)).await
    }

    /// Message bytes sent and received since the last call (gRPC
    /// messages, not HTTP/2 framing).
    pub fn take_bytes(&mut self) -> (u64, u64) {
        (
            std::mem::take(&mut self.sent),
            std::mem::take(&mut self.received),
        )
    }
}

impl From<ChannelError> for io::Error {
    fn from(e: ChannelError) -> io::Error {
        match e {
            ChannelError::Io(e) => e,
            other => io::Error::other(other.to_string()),
        }
    }
}

/// One call in flight: its response head, then its message, then its
/// trailers.
struct Call<M> {
    meta: Option<M>,
    state: State,
}

enum State {
    Head(ResponseFuture),
    Body(RecvStream, BytesMut),
    Trailers(RecvStream, BytesMut),
    Done,
}

impl<M: Unpin> Future for Call<M> {
    type Output = Done<M>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Done<M>> {
        let this = self.get_mut();
        let result = ready!(this.poll_result(cx));
        this.state = State::Done;
        match this.meta.take() {
            Some(meta) => Poll::Ready(Done { meta, result }),
            // Polled after it finished: FuturesUnordered never does.
            None => Poll::Pending,
        }
    }
}

impl<M> Call<M> {
    fn poll_result(&mut self, cx: &mut Context<'_>) -> Poll<Result<Bytes, CallError>> {
        loop {
            match &mut self.state {
                State::Head(response) => {
                    let response =
                        ready!(Pin::new(response).poll(cx)).map_err(CallError::Stream)?;
                    if response.status() != http::StatusCode::OK {
                        return Poll::Ready(Err(CallError::Malformed("HTTP status not 200")));
                    }
                    let (head, body) = response.into_parts();
                    // Trailers-only: the status came with the headers.
                    if head.headers.contains_key("grpc-status") {
                        return Poll::Ready(status(&head.headers, Bytes::new()));
                    }
                    self.state = State::Body(body, BytesMut::new());
                }
                State::Body(body, acc) => match ready!(body.poll_data(cx)) {
                    Some(Ok(chunk)) => {
                        let _ = body.flow_control().release_capacity(chunk.len());
                        acc.extend_from_slice(&chunk);
                    }
                    Some(Err(e)) => return Poll::Ready(Err(CallError::Stream(e))),
                    None => {
                        let (body, acc) = match std::mem::replace(&mut self.state, State::Done) {
                            State::Body(b, a) => (b, a),
                            _ => return Poll::Ready(Err(CallError::Malformed("state"))),
                        };
                        self.state = State::Trailers(body, acc);
                    }
                },
                State::Trailers(body, acc) => {
                    let trailers = ready!(body.poll_trailers(cx)).map_err(CallError::Stream)?;
                    let Some(trailers) = trailers else {
                        return Poll::Ready(Err(CallError::Malformed("no trailers")));
                    };
                    let message = std::mem::take(acc).freeze();
                    return Poll::Ready(status(&trailers, message));
                }
                State::Done => return Poll::Ready(Err(CallError::Malformed("polled after end"))),
            }
        }
    }
}

/// The call's outcome from its status and the bytes of its body: on OK,
/// exactly one message, returned without its prefix.
fn status(map: &HeaderMap, body: Bytes) -> Result<Bytes, CallError> {
    let code = map
        .get("grpc-status")
        .and_then(|v| Code::parse(v.as_bytes()))
        .ok_or(CallError::Malformed("no grpc-status"))?;
    if code != Code::Ok {
        let message = map
            .get("grpc-message")
            .map(|m| frame::decode_message(m.as_bytes()))
            .unwrap_or_default();
        return Err(CallError::Status { code, message });
    }
    match frame::frame_len(&body) {
        Ok(Some(n)) if n == body.len() => Ok(body.slice(frame::PREFIX..)),
        Ok(_) => Err(CallError::Malformed("not one whole message")),
        Err(_) => Err(CallError::Malformed("bad message prefix")),
    }
}

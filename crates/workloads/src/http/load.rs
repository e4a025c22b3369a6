//! What each request of the http workload is, as bytes, a pure function
//! of (seed, index): every request but a `PUT` is the same, encoded once
//! per server (only `Host` differs) and copied into the write buffer; a
//! `PUT` writes to `DIR/INDEX` under the URL's path, where `DIR` is
//! `loadrig-SEED`, a body of its own (the one given, else `--value-size`
//! bytes spelling the index and the seed).

use std::sync::OnceLock;

use loadrig_spec::HttpSpec;

use super::response::Hasher;

/// Status classes counted per response, then the connections reopened
/// because the server said it closes them, and of those the ones whose
/// TLS handshake resumed a session (`https://`).
pub const DOMAINS: [&str; 7] = [
    "2xx",
    "3xx",
    "4xx",
    "5xx",
    "other status",
    "reopened",
    "resumed",
];
/// Index of the first status class in [`DOMAINS`] (`2xx`).
pub const S2XX: usize = 0;
/// Statuses outside 200..=599.
pub const OTHER: usize = 4;
pub const REOPENED: usize = 5;
pub const RESUMED: usize = 6;

/// The one operation kind: a request, named by its method.
pub fn kind_name(method: &str) -> &'static str {
    match method {
        "GET" => "get",
        "HEAD" => "head",
        "POST" => "post",
        "PUT" => "put",
        "DELETE" => "delete",
        "PATCH" => "patch",
        "OPTIONS" => "options",
        _ => "request",
    }
}

/// The requests of one run, shared by its drivers.
#[derive(Debug)]
pub struct Load {
    pub spec: HttpSpec,
    seed: u64,
    /// Per server: the whole request (every method but `PUT`), or the
    /// header lines after the request line (`PUT`).
    heads: Vec<Vec<u8>>,
    /// The directory `PUT`s write into, as a request path ending in `/`.
    pub dir: String,
    /// `HEAD`: no body follows any response.
    pub head_only: bool,
    /// `GET`: bodies are compared with the first one.
    pub get: bool,
    /// `PUT`: a path and body per index.
    pub put: bool,
    /// (length, hash) of the first `200` body of a `GET`.
    first: OnceLock<(u64, u64)>,
}

impl Load {
    /// `path` is the URL's request target, `authorities` each server's
    /// `host:port`.
    pub fn new(spec: HttpSpec, seed: u64, path: &str, authorities: &[String]) -> Load {
        let put = spec.method == "PUT";
        let base = path.split('?').next().unwrap_or(path);
        let slash = if base.ends_with('/') { "" } else { "/" };
        let dir = format!("{base}{slash}loadrig-{seed}/");
        let own_host = spec
            .headers
            .iter()
            .any(|h| h.len() > 5 && h[..5].eq_ignore_ascii_case("host:"));
        let heads = authorities
            .iter()
            .map(|a| {
                let mut h = Vec::new();
                if !put {
                    h.extend_from_slice(format!("{} {path} HTTP/1.1\r\n", spec.method).as_bytes());
                }
                if !own_host {
                    h.extend_from_slice(format!("Host: {a}\r\n").as_bytes());
                }
                for line in &spec.headers {
                    h.extend_from_slice(line.as_bytes());
                    h.extend_from_slice(b"\r\n");
                }
                if !put {
                    if let Some(b) = &spec.body {
                        h.extend_from_slice(
                            format!("Content-Length: {}\r\n\r\n", b.len()).as_bytes(),
                        );
                        h.extend_from_slice(b.as_bytes());
                    } else {
                        h.extend_from_slice(b"\r\n");
                    }
                }
                h
            })
            .collect();
        Load {
            head_only: spec.method == "HEAD",
            get: spec.method == "GET",
            put,
            spec,
            seed,
            heads,
            dir,
            first: OnceLock::new(),
        }
    }

    /// Append request `index` for server `server`.
    #[inline]
    pub fn write(&self, out: &mut bytes::BytesMut, server: usize, index: u64) {
        let head = &self.heads[server % self.heads.len()];
        if !self.put {
            out.extend_from_slice(head);
            return;
        }
        out.extend_from_slice(b"PUT ");
        out.extend_from_slice(self.dir.as_bytes());
        out.extend_from_slice(loadrig_wire::step::Decimal::new(index).as_bytes());
        out.extend_from_slice(b" HTTP/1.1\r\n");
        out.extend_from_slice(head);
        let len = self.body_len();
        out.extend_from_slice(b"Content-Length: ");
        out.extend_from_slice(loadrig_wire::step::Decimal::new(len as u64).as_bytes());
        out.extend_from_slice(b"\r\n\r\n");
        self.body_pieces(index, |p| out.extend_from_slice(p));
    }

    /// The body of `PUT` `index`, piece by piece, into `take`.
    #[inline]
    fn body_pieces(&self, index: u64, mut take: impl FnMut(&[u8])) {
        match &self.spec.body {
            Some(b) => take(b.as_bytes()),
            None => {
                let unit = self.unit(index);
                let mut left = self.body_len();
                while left > 0 {
                    let n = left.min(unit.len());
                    take(&unit[..n]);
                    left -= n;
                }
            }
        }
    }

    fn body_len(&self) -> usize {
        self.spec
            .body
            .as_ref()
            .map_or(self.spec.put_size, String::len)
    }

    /// 32 bytes spelling (index, seed) in hex, repeated to make a body.
    fn unit(&self, index: u64) -> [u8; 32] {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut u = [0u8; 32];
        for (i, v) in [index, self.seed].into_iter().enumerate() {
            for k in 0..16 {
                u[i * 16 + k] = HEX[((v >> (60 - 4 * k)) & 0xf) as usize];
            }
        }
        u
    }

    /// The (length, hash) of the body `PUT` `index` wrote, as a
    /// [`Reader`](super::response::Reader) computes it reading that body
    /// back (cold path).
    pub fn print(&self, index: u64) -> (u64, u64) {
        let mut h = Hasher::default();
        self.body_pieces(index, |p| h.write(p));
        h.finish()
    }

    /// Whether a `GET` body is the first one seen (or the run's first).
    #[inline]
    pub fn same_as_first(&self, fingerprint: (u64, u64)) -> bool {
        *self.first.get_or_init(|| fingerprint) == fingerprint
    }

    /// The first `GET` body's (length, hash), if any came.
    pub fn first(&self) -> Option<(u64, u64)> {
        self.first.get().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;

    fn spec(method: &str, body: Option<&str>) -> HttpSpec {
        HttpSpec {
            method: method.into(),
            headers: vec!["X-A: b".into()],
            body: body.map(str::to_string),
            put_size: 40,
            latency: false,
        }
    }

    #[test]
    fn requests_are_encoded_once_per_server() {
        let l = Load::new(
            spec("GET", None),
            1,
            "/x?q=1",
            &["h:1".into(), "h:2".into()],
        );
        let mut out = BytesMut::new();
        l.write(&mut out, 1, 7);
        assert_eq!(
            &out[..],
            b"GET /x?q=1 HTTP/1.1\r\nHost: h:2\r\nX-A: b\r\n\r\n"
        );
        let l = Load::new(spec("POST", Some("hi")), 1, "/", &["h:1".into()]);
        out.clear();
        l.write(&mut out, 0, 7);
        assert_eq!(
            &out[..],
            b"POST / HTTP/1.1\r\nHost: h:1\r\nX-A: b\r\nContent-Length: 2\r\n\r\nhi"
        );
    }

    #[test]
    fn puts_write_their_own_path_and_body() {
        let l = Load::new(spec("PUT", None), 9, "/dav", &["h:1".into()]);
        assert_eq!(l.dir, "/dav/loadrig-9/");
        let mut out = BytesMut::new();
        l.write(&mut out, 0, 300);
        let body: Vec<u8> = b"000000000000012c0000000000000009"
            .iter()
            .copied()
            .cycle()
            .take(40)
            .collect();
        let mut want =
            b"PUT /dav/loadrig-9/300 HTTP/1.1\r\nHost: h:1\r\nX-A: b\r\nContent-Length: 40\r\n\r\n"
                .to_vec();
        want.extend_from_slice(&body);
        assert_eq!(&out[..], &want[..]);
        assert_eq!(l.print(300), crate::http::response::fingerprint(&body));
        assert_ne!(l.print(301), l.print(300));
    }

    #[test]
    fn the_first_body_rules() {
        let l = Load::new(spec("GET", None), 1, "/", &["h:1".into()]);
        assert!(l.same_as_first((5, 1)));
        assert!(l.same_as_first((5, 1)));
        assert!(!l.same_as_first((5, 2)));
    }
}

//! The http workload's knobs: wrk's (method, headers, body) and wrk2's
//! detailed latency spectrum, plus the size of the bodies `PUT` writes
//! when no body is given. Checked here without I/O; a `--body-file` is
//! read by the flags, so the spec holds the body itself.

use serde::{Deserialize, Serialize};

use crate::SpecError;

/// Largest body sent: bodies live in every connection's write buffer and
/// in the report's spec.
pub const MAX_BODY_SIZE: usize = 64 * 1024 * 1024;

/// Headers loadrig writes itself, from the body and the connection.
const OWN_HEADERS: [&str; 2] = ["content-length", "transfer-encoding"];

/// wrk's load on an HTTP/1.1 server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HttpSpec {
    /// The request method, as sent (`GET`, `PUT`, `POST`, ...).
    pub method: String,
    /// Extra request headers, `Name: value` each, in order. A `Host`
    /// among them replaces the one taken from the URL.
    pub headers: Vec<String>,
    /// The body of every request (`--body`, `--body-file`). `None`: no
    /// body, except for `PUT`, whose bodies are generated.
    pub body: Option<String>,
    /// Bytes of each generated `PUT` body, a function of (seed, index).
    pub put_size: usize,
    /// wrk's `--latency`: the percentile lines and wrk2's spectrum.
    pub latency: bool,
}

impl HttpSpec {
    /// A header as given to `-H`, checked: `Name: value`, a token for
    /// the name, no line breaks.
    pub fn header(h: &str) -> Result<String, SpecError> {
        // The value may be a credential: an error shows the name alone.
        let shown = match h.split_once(':') {
            Some(_) => crate::secret::mask_header(h),
            None => format!("{} ...", h.split_whitespace().next().unwrap_or("")),
        };
        let bad = |why: &str| SpecError::new("--header", format!("'{shown}': {why}"));
        let Some((name, value)) = h.split_once(':') else {
            return Err(bad("expected NAME: VALUE (no colon)"));
        };
        if name.is_empty() || !name.bytes().all(is_token) {
            return Err(bad("the name is not an HTTP token"));
        }
        if value.bytes().any(|b| b == b'\r' || b == b'\n') {
            return Err(bad("a value holds no line break"));
        }
        if OWN_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
            return Err(bad("loadrig writes this header itself, from the body"));
        }
        Ok(format!("{name}: {}", value.trim()))
    }

    pub(crate) fn validate(&self) -> Result<(), SpecError> {
        if self.method.is_empty() || !self.method.bytes().all(is_token) {
            return Err(SpecError::new(
                "--method",
                format!("'{}' is not an HTTP method", self.method),
            ));
        }
        for h in &self.headers {
            Self::header(h)?;
        }
        if self.body.as_ref().is_some_and(|b| b.len() > MAX_BODY_SIZE) {
            return Err(SpecError::new(
                "--body",
                format!("at most {MAX_BODY_SIZE} bytes"),
            ));
        }
        if !(1..=MAX_BODY_SIZE).contains(&self.put_size) {
            return Err(SpecError::new(
                "--value-size",
                format!("must be between 1 and {MAX_BODY_SIZE} bytes"),
            ));
        }
        Ok(())
    }
}

/// RFC 9110's `tchar`.
fn is_token(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> HttpSpec {
        HttpSpec {
            method: "GET".into(),
            headers: vec!["Accept: */*".into()],
            body: None,
            put_size: 256,
            latency: false,
        }
    }

    #[test]
    fn headers_need_a_colon_and_a_token() {
        assert_eq!(HttpSpec::header("X-A:  b ").unwrap(), "X-A: b");
        assert_eq!(HttpSpec::header("X-Empty:").unwrap(), "X-Empty: ");
        for bad in ["no colon", ": v", "Bad Name: v", "Content-Length: 3"] {
            assert_eq!(HttpSpec::header(bad).unwrap_err().flag, "--header", "{bad}");
        }
    }

    #[test]
    fn bad_values_name_their_flag() {
        assert!(spec().validate().is_ok());
        type Change = fn(&mut HttpSpec);
        let cases: [(&str, Change); 4] = [
            ("--method", |s| s.method = "G T".into()),
            ("--method", |s| s.method.clear()),
            ("--header", |s| s.headers.push("x".into())),
            ("--value-size", |s| s.put_size = 0),
        ];
        for (flag, change) in cases {
            let mut s = spec();
            change(&mut s);
            assert_eq!(s.validate().unwrap_err().flag, flag);
        }
    }
}

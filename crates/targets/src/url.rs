//! The one URL of every server target:
//! `scheme://[USER[:PASSWORD]@]HOST[:PORT][,PORT|,HOST[:PORT]...][/PATH][?OPTIONS]`.
//! A bare number after a comma is another port on the host before it
//! (`h:6379,6380,h2`). Each target states what it takes beyond that (a
//! database path, one server, a login) with the checks here, and reads its
//! own options; the masking rule and the label are the same for all.

use loadrig_spec::SpecError;

/// A parsed target URL. Secrets never leave through [`TargetUrl::label`]
/// or an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TargetUrl {
    pub scheme: &'static str,
    pub servers: Vec<(String, u16)>,
    pub user: Option<String>,
    pub password: Option<String>,
    /// What follows the servers' `/`, %-decoded; empty when none.
    pub path: String,
    /// The scheme asks for TLS (`rediss`, NATS's `tls`, `mqtts`).
    pub tls: bool,
    /// The syntax shown in errors.
    expected: &'static str,
}

impl TargetUrl {
    /// Parse what follows `scheme://`; returns the URL and its options
    /// (what follows `?`, if anything), which are the target's to read.
    pub fn parse<'a>(
        scheme: &'static str,
        rest: &'a str,
        default_port: u16,
        expected: &'static str,
    ) -> Result<(TargetUrl, Option<&'a str>), SpecError> {
        let bad = |why: &str| {
            SpecError::new(
                "--target",
                format!(
                    "{why} in '{scheme}://{}' (expected {expected})",
                    masked(rest)
                ),
            )
        };
        let (rest, options) = match rest.split_once('?') {
            Some((r, o)) => (r, Some(o)),
            None => (rest, None),
        };
        // The authority ends at the first '/' after the login, so a '/'
        // in a password does not cut it short.
        let login_end = rest.rfind('@').map_or(0, |i| i + 1);
        let (authority, path) = match rest[login_end..].find('/') {
            Some(i) => (&rest[..login_end + i], &rest[login_end + i + 1..]),
            None => (rest, ""),
        };
        let path = decode(path).ok_or_else(|| bad("bad %-escape"))?;
        let (userinfo, hosts) = match authority.rsplit_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, authority),
        };
        let (user, password) = match userinfo {
            None => (None, None),
            Some(u) => {
                let (user, pass) = match u.split_once(':') {
                    Some((user, pass)) => (user, Some(pass)),
                    None => (u, None),
                };
                let user = decode(user).ok_or_else(|| bad("bad %-escape"))?;
                let pass = match pass {
                    Some(p) => Some(decode(p).ok_or_else(|| bad("bad %-escape"))?),
                    None => None,
                };
                ((!user.is_empty()).then_some(user), pass)
            }
        };
        let password = password.or_else(|| password_from_env(scheme, user.is_some()));
        let servers = server_list(hosts, default_port).map_err(|why| bad(&why))?;
        let url = TargetUrl {
            scheme,
            servers,
            user,
            password,
            path,
            tls: false,
            expected,
        };
        Ok((url, options))
    }

    /// The URL as opened with `given`, which asks for TLS when it is
    /// `tls_scheme` (the target's other scheme: `rediss` beside `redis`).
    pub fn tls_if(mut self, given: &str, tls_scheme: &'static str) -> TargetUrl {
        if given == tls_scheme {
            self.scheme = tls_scheme;
            self.tls = true;
        }
        self
    }

    /// A usage error about this URL, naming `--target`, secrets masked.
    pub fn bad(&self, why: impl std::fmt::Display) -> SpecError {
        SpecError::new(
            "--target",
            format!("{why} in '{}' (expected {})", self.label(), self.expected),
        )
    }

    /// Refuse a path, for targets that take none.
    pub fn no_path(&self, why: &str) -> Result<(), SpecError> {
        if self.path.is_empty() {
            Ok(())
        } else {
            Err(self.bad(why))
        }
    }

    /// Refuse options, for targets that take none.
    pub fn no_options(&self, options: Option<&str>) -> Result<(), SpecError> {
        match options {
            None | Some("") => Ok(()),
            Some(o) => Err(self.bad(format_args!("unknown option '{o}'"))),
        }
    }

    /// The one server of a target that takes one.
    pub fn one_server(&self) -> Result<(&str, u16), SpecError> {
        match self.servers.as_slice() {
            [(host, port)] => Ok((host, *port)),
            _ => Err(self.bad("one server only")),
        }
    }

    /// The URL for messages and reports: secrets masked, default ports
    /// written out.
    pub fn label(&self) -> String {
        let who = match (&self.user, &self.password) {
            (None, None) => String::new(),
            (Some(_), None) => "***@".to_string(),
            (None, Some(_)) => ":***@".to_string(),
            (Some(u), Some(_)) => format!("{u}:***@"),
        };
        let servers: Vec<String> = self.servers.iter().map(|(h, p)| hostport(h, *p)).collect();
        let path = if self.path.is_empty() {
            String::new()
        } else {
            format!("/{}", self.path)
        };
        format!("{}://{who}{}{path}", self.scheme, servers.join(","))
    }

    /// Server `i` as (host, port, `host:port`), for connecting and messages.
    pub fn server(&self, i: usize) -> (String, u16, String) {
        let (host, port) = self.servers.get(i).cloned().unwrap_or_default();
        let name = hostport(&host, port);
        (host, port, name)
    }
}

/// What follows `scheme://`, with its secrets masked, for errors raised
/// before the URL is parsed and for labels: the one rule,
/// [`loadrig_spec::secret`] (a password, a user name without one: it may
/// be a token, as NATS's `token@host`; a query value whose name says it is
/// a credential).
/// What follows `sqlite://`, split at its query: the file's path (empty
/// for a fresh temporary database) and its options.
pub(crate) fn sqlite_parts(rest: &str) -> (&str, &str) {
    rest.split_once('?').unwrap_or((rest, ""))
}

/// The file a `sqlite://PATH` target names; none for a fresh temporary
/// database (`sqlite://`) or another target. The one reading of the URL
/// the SQLite target opens, for the checks made before it opens.
pub fn sqlite_file(target: &str) -> Option<&std::path::Path> {
    target
        .strip_prefix("sqlite://")
        .map(|rest| sqlite_parts(rest).0)
        .filter(|p| !p.is_empty())
        .map(std::path::Path::new)
}

pub(crate) fn masked(rest: &str) -> String {
    loadrig_spec::secret::mask_url_rest(rest)
}

/// The environment variables a password may come from when the URL gives
/// none, so it stays out of the command line (and `ps`): the client
/// tools' own first, then loadrig's for every target.
pub(crate) const PASSWORD_ENV: [(&str, &str); 3] = [
    ("postgres", "PGPASSWORD"),
    ("mysql", "MYSQL_PWD"),
    ("redis", "REDISCLI_AUTH"),
];

/// loadrig's own, for every target (a user is needed where the protocol
/// pairs a password with one).
pub(crate) const LOADRIG_PASSWORD: &str = "LOADRIG_PASSWORD";

fn password_from_env(scheme: &str, user: bool) -> Option<String> {
    let own = PASSWORD_ENV
        .iter()
        .find(|(s, _)| *s == scheme)
        .and_then(|(_, var)| std::env::var(var).ok());
    // Redis takes a password alone (AUTH); the others with a user.
    let alone = matches!(scheme, "redis");
    own.or_else(|| {
        (user || alone)
            .then(|| std::env::var(LOADRIG_PASSWORD).ok())
            .flatten()
    })
    .filter(|p| !p.is_empty())
}

pub(crate) fn hostport(h: &str, p: u16) -> String {
    if h.contains(':') {
        format!("[{h}]:{p}")
    } else {
        format!("{h}:{p}")
    }
}

/// The servers of a URL with several (`h1:6379,6380,h2`): each entry a
/// host with an optional port, or a bare port that is another port on the
/// host before it. The error says which entry is wrong.
fn server_list(hosts: &str, default_port: u16) -> Result<Vec<(String, u16)>, String> {
    let mut servers: Vec<(String, u16)> = Vec::new();
    for entry in hosts.split(',') {
        if !entry.is_empty() && entry.bytes().all(|b| b.is_ascii_digit()) {
            let Some((host, _)) = servers.last().cloned() else {
                return Err(format!("port '{entry}' before any host"));
            };
            let port = entry
                .parse()
                .ok()
                .filter(|&p| p != 0)
                .ok_or_else(|| format!("bad port '{entry}'"))?;
            servers.push((host, port));
            continue;
        }
        let server = split_host_port(entry, default_port)
            .filter(|(host, _)| !host.is_empty())
            .ok_or_else(|| format!("bad host '{entry}'"))?;
        servers.push(server);
    }
    Ok(servers)
}

/// `host`, `host:port`, `[v6]` or `[v6]:port`.
fn split_host_port(s: &str, default_port: u16) -> Option<(String, u16)> {
    let (host, port) = if let Some(v6) = s.strip_prefix('[') {
        let (host, after) = v6.split_once(']')?;
        match after {
            "" => (host, None),
            p => (host, Some(p.strip_prefix(':')?)),
        }
    } else {
        match s.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (s, None),
        }
    };
    let port = match port {
        Some(p) => p.parse().ok().filter(|&p| p != 0)?,
        None => default_port,
    };
    Some((host.to_string(), port))
}

/// Undo %-escapes (a password may hold `@`, `:` or `/` that way).
fn decode(s: &str) -> Option<String> {
    let mut out = Vec::with_capacity(s.len());
    let mut bytes = s.bytes();
    while let Some(b) = bytes.next() {
        if b == b'%' {
            let hex = [bytes.next()?, bytes.next()?];
            out.push(u8::from_str_radix(std::str::from_utf8(&hex).ok()?, 16).ok()?);
        } else {
            out.push(b);
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(rest: &str) -> Result<(TargetUrl, Option<&str>), SpecError> {
        let (url, options) = TargetUrl::parse("nats", rest, 4222, "nats://HOST")?;
        url.no_path("no path is taken")?;
        Ok((url, options))
    }

    #[test]
    fn parses_servers_logins_and_options() {
        let (u, o) = parse("127.0.0.1").unwrap();
        assert_eq!(u.servers, [("127.0.0.1".to_string(), 4222)]);
        assert_eq!((u.user, u.password, o), (None, None, None));
        let (u, o) = parse("a:p%40ss@h1:1,2,[::1]/?qos=1").unwrap();
        assert_eq!(
            u.servers,
            [
                ("h1".to_string(), 1),
                ("h1".to_string(), 2),
                ("::1".to_string(), 4222)
            ]
        );
        assert_eq!(
            (u.user.as_deref(), u.password.as_deref()),
            (Some("a"), Some("p@ss"))
        );
        assert_eq!(o, Some("qos=1"));
        assert_eq!(u.label(), "nats://a:***@h1:1,h1:2,[::1]:4222");
        let (u, _) = parse("s3cret@h").unwrap();
        assert_eq!(u.label(), "nats://***@h:4222");
        // A user with no password may be a token: masked too.
        let (u, _) = TargetUrl::parse("mqtt", "bob@h", 1883, "").unwrap();
        assert_eq!(u.label(), "mqtt://***@h:1883");
    }

    #[test]
    fn one_masking_rule_for_every_credential() {
        assert_eq!(masked("u:p/w@h/db"), "u:***@h/db");
        assert_eq!(masked("t0ken@h"), "***@h");
        assert_eq!(
            masked("h:1883?qos=1&password=x&authToken=y&api_key=z"),
            "h:1883?qos=1&password=***&authToken=***&api_key=***"
        );
        assert_eq!(masked("h?sync=full"), "h?sync=full");
    }

    #[test]
    fn bad_urls_name_the_flag_and_hide_secrets() {
        for rest in [
            "",
            "u:secret@h,,h2",
            "u:secret@h:0",
            "u:secret@6380",
            "u:secret@h/x",
            "secret@h:99999",
            "u:secret@h:x",
        ] {
            let e = parse(rest).unwrap_err();
            assert_eq!(e.flag, "--target", "{rest}");
            assert!(!e.to_string().contains("secret"), "{e}");
        }
    }
}

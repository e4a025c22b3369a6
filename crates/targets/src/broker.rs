//! The URL of a message broker (NATS, MQTT): a login and one or more
//! servers, `scheme://[USER[:PASSWORD]@]HOST[:PORT][,PORT|,HOST[:PORT]...][?OPTIONS]`,
//! with the Redis URL's shorthand (a bare number after a comma is another
//! port on the host before it). Options are the caller's to read.

use loadrig_spec::SpecError;

/// The servers and the login. The password never leaves through
/// [`BrokerUrl::label`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BrokerUrl {
    pub scheme: &'static str,
    pub servers: Vec<(String, u16)>,
    pub user: Option<String>,
    pub password: Option<String>,
    /// A user with no password is itself a secret (NATS's `token@host`).
    secret_user: bool,
}

impl BrokerUrl {
    /// Parse what follows `scheme://`; returns the URL and its options
    /// (what follows `?`, if anything). `expected` is the syntax shown in
    /// errors.
    pub fn parse<'a>(
        scheme: &'static str,
        rest: &'a str,
        default_port: u16,
        expected: &str,
        secret_user: bool,
    ) -> Result<(BrokerUrl, Option<&'a str>), SpecError> {
        let bad = |why: &str| {
            SpecError::new(
                "--target",
                format!(
                    "{why} in '{scheme}://{}' (expected {expected})",
                    masked(rest, secret_user)
                ),
            )
        };
        let (rest, options) = match rest.split_once('?') {
            Some((r, o)) => (r, Some(o)),
            None => (rest, None),
        };
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        if rest.contains('/') {
            return Err(bad("no path is taken"));
        }
        let (userinfo, hosts) = match rest.rsplit_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, rest),
        };
        let (user, password) = match userinfo {
            None => (None, None),
            Some(u) => {
                let (user, pass) = match u.split_once(':') {
                    Some((user, pass)) => (user, Some(pass)),
                    None => (u, None),
                };
                let user = crate::decode(user).ok_or_else(|| bad("bad %-escape"))?;
                let pass = match pass {
                    Some(p) => Some(crate::decode(p).ok_or_else(|| bad("bad %-escape"))?),
                    None => None,
                };
                ((!user.is_empty()).then_some(user), pass)
            }
        };
        let servers = crate::server_list(hosts, default_port).map_err(|why| bad(&why))?;
        let url = BrokerUrl {
            scheme,
            servers,
            user,
            password,
            secret_user,
        };
        Ok((url, options))
    }

    /// The URL for messages and reports: secrets masked.
    pub fn label(&self) -> String {
        let who = match (&self.user, &self.password) {
            (None, None) => String::new(),
            (Some(_), None) if self.secret_user => "***@".to_string(),
            (Some(u), None) => format!("{u}@"),
            (None, Some(_)) => ":***@".to_string(),
            (Some(u), Some(_)) => format!("{u}:***@"),
        };
        let servers: Vec<String> = self.servers.iter().map(|(h, p)| hostport(h, *p)).collect();
        format!("{}://{who}{}", self.scheme, servers.join(","))
    }

    /// Server `i` as `host:port`, for messages.
    pub fn server(&self, i: usize) -> (String, u16, String) {
        let (host, port) = self.servers.get(i).cloned().unwrap_or_default();
        let name = hostport(&host, port);
        (host, port, name)
    }
}

/// What follows `scheme://`, with the password (or a lone secret user)
/// masked.
fn masked(rest: &str, secret_user: bool) -> String {
    match rest.rsplit_once('@') {
        Some((userinfo, hosts)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{user}:***@{hosts}"),
            None if secret_user => format!("***@{hosts}"),
            None => rest.to_string(),
        },
        None => rest.to_string(),
    }
}

pub(crate) fn hostport(h: &str, p: u16) -> String {
    if h.contains(':') {
        format!("[{h}]:{p}")
    } else {
        format!("{h}:{p}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(rest: &str) -> Result<(BrokerUrl, Option<&str>), SpecError> {
        BrokerUrl::parse("nats", rest, 4222, "nats://HOST", true)
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
        let (u, _) = BrokerUrl::parse("mqtt", "bob@h", 1883, "", false).unwrap();
        assert_eq!(u.label(), "mqtt://bob@h:1883");
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

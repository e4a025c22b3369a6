//! The one masking rule for secrets, wherever a value can surface (output,
//! reports, HTML, CSV, sweep tables, error messages): a URL's password (or
//! a user name alone: it may be a token), a query value whose name says
//! it is a credential, and a header that carries one. What is masked
//! becomes `***`. Children and sweep points get the real values by
//! environment, never on their command line (`ps` shows that).

/// Words in a query parameter's or a header's name that say its value is
/// a credential: `password`, `access_token`, `X-Api-Key`, `credential`,
/// `X-Amz-Signature`, `session_id`, ...
const SECRET_WORDS: [&str; 9] = [
    "pass",
    "pwd",
    "token",
    "secret",
    "auth",
    "key",
    "credential",
    "signature",
    "session",
];

/// Whether a query parameter or header named `name` carries a credential:
/// one of [`SECRET_WORDS`] in it, `sig` alone or as a last word (`sig`,
/// `x-sig`), or a cookie.
pub fn secret_name(name: &str) -> bool {
    let n = name.trim().to_ascii_lowercase();
    SECRET_WORDS.iter().any(|w| n.contains(w))
        || n == "sig"
        || n.ends_with("-sig")
        || n.ends_with("_sig")
        || n.contains("cookie")
}

/// A header as `-H` takes it (`Name: value`), its value masked when the
/// name says it is a credential (`Authorization: ***`).
pub fn mask_header(h: &str) -> String {
    match h.split_once(':') {
        Some((name, _)) if secret_name(name) => format!("{name}: ***"),
        _ => h.to_string(),
    }
}

/// What follows a URL's `scheme://`, masked: the password of its userinfo
/// (or the whole of a userinfo without one), and secret query values.
/// Control characters are shown as escapes.
pub fn mask_url_rest(rest: &str) -> String {
    let rest = crate::printable(rest);
    let (rest, query) = match rest.split_once('?') {
        Some((r, q)) => (r, Some(q)),
        None => (rest.as_str(), None),
    };
    let mut out = match rest.rsplit_once('@') {
        Some((userinfo, hosts)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{user}:***@{hosts}"),
            None => format!("***@{hosts}"),
        },
        None => rest.to_string(),
    };
    if let Some(q) = query {
        let pairs: Vec<String> = q
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((k, _)) if secret_name(k) => format!("{k}=***"),
                _ => pair.to_string(),
            })
            .collect();
        out.push('?');
        out.push_str(&pairs.join("&"));
    }
    out
}

/// Any text that may be a URL (`scheme://...`), masked as one; other text
/// as it is, control characters shown as escapes.
pub fn mask_text(s: &str) -> String {
    match s.split_once("://") {
        Some((scheme, rest)) => format!("{}://{}", crate::printable(scheme), mask_url_rest(rest)),
        None => crate::printable(s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_masked_by_name() {
        for h in [
            "Authorization: Bearer abc",
            "Proxy-Authorization: Basic abc",
            "Cookie: s=abc",
            "X-Api-Key: abc",
            "X-Auth-Token: abc",
        ] {
            assert!(mask_header(h).ends_with(": ***"), "{h}");
            assert!(!mask_header(h).contains("abc"), "{h}");
        }
        assert_eq!(mask_header("Accept: */*"), "Accept: */*");
        assert_eq!(mask_header("X-Signal: on"), "X-Signal: on");
        assert_eq!(
            mask_text("https://u:pw@h/x?a=1&credential=c&sig=s&X-Amz-Signature=z"),
            "https://u:***@h/x?a=1&credential=***&sig=***&X-Amz-Signature=***"
        );
        assert_eq!(mask_text("nats://tok@h"), "nats://***@h");
        assert_eq!(mask_text("64"), "64");
    }
}

//! The NATS client protocol, from the examples of its reference
//! (docs.nats.io, "Client Protocol"): every operation encoded exactly,
//! parsed back in both directions, every prefix of every fixture
//! incomplete, verbs in any case, garbage and hostile lengths refused.

mod common;

use bytes::BytesMut;
use common::assert_frame;
use loadrig_wire::mq::nats::{
    self, parse_client_op, parse_client_op_with, parse_server_op, parse_server_op_with, Auth,
    ClientOp, Connect, Limits, Msg, NatsError, Pub, ServerOp, Sub, Unsub, MAX_CONTROL_LINE,
    MAX_JSON_LINE, MAX_PAYLOAD,
};

fn encoded(f: impl FnOnce(&mut BytesMut)) -> Vec<u8> {
    let mut b = BytesMut::new();
    f(&mut b);
    b.to_vec()
}

fn server(input: &[u8]) -> ServerOp<'_> {
    assert_frame(input, len_of!(parse_server_op));
    let (op, n) = parse_server_op(input).expect("valid").expect("whole");
    assert_eq!(n, input.len());
    op
}

fn client(input: &[u8]) -> ClientOp<'_> {
    assert_frame(input, len_of!(parse_client_op));
    let (op, n) = parse_client_op(input).expect("valid").expect("whole");
    assert_eq!(n, input.len());
    op
}

const INFO_EXAMPLE: &[u8] = b"INFO {\"server_id\":\"Zk0GQ3JBSrg3oyxCRRlE09\",\"version\":\"1.2.0\",\"proto\":1,\"go\":\"go1.10.3\",\"host\":\"0.0.0.0\",\"port\":4222,\"max_payload\":1048576,\"client_id\":2392}\r\n";

// ---- what a client sends ----

#[test]
fn pub_as_in_the_reference() {
    assert_eq!(
        encoded(|b| nats::encode_pub(b, b"FOO", None, b"Hello NATS!").unwrap()),
        b"PUB FOO 11\r\nHello NATS!\r\n"
    );
    assert_eq!(
        encoded(|b| nats::encode_pub(b, b"FRONT.DOOR", Some(b"INBOX.22"), b"Knock Knock").unwrap()),
        b"PUB FRONT.DOOR INBOX.22 11\r\nKnock Knock\r\n"
    );
    assert_eq!(
        encoded(|b| nats::encode_pub(b, b"NOTIFY", None, b"").unwrap()),
        b"PUB NOTIFY 0\r\n\r\n"
    );
}

#[test]
fn sub_unsub_ping_pong_as_in_the_reference() {
    assert_eq!(
        encoded(|b| nats::encode_sub(b, b"FOO", None, 1).unwrap()),
        b"SUB FOO 1\r\n"
    );
    assert_eq!(
        encoded(|b| nats::encode_sub(b, b"BAR", Some(b"G1"), 44).unwrap()),
        b"SUB BAR G1 44\r\n"
    );
    assert_eq!(encoded(|b| nats::encode_unsub(b, 1, None)), b"UNSUB 1\r\n");
    assert_eq!(
        encoded(|b| nats::encode_unsub(b, 1, Some(5))),
        b"UNSUB 1 5\r\n"
    );
    assert_eq!(
        encoded(|b| nats::encode_unsub(b, u64::MAX, Some(0))),
        b"UNSUB 18446744073709551615 0\r\n"
    );
    assert_eq!(encoded(nats::encode_ping), b"PING\r\n");
    assert_eq!(encoded(nats::encode_pong), b"PONG\r\n");
}

#[test]
fn connect_json_has_the_options_a_load_generator_wants() {
    let version = env!("CARGO_PKG_VERSION");
    let head = format!(
        "CONNECT {{\"verbose\":false,\"pedantic\":false,\"tls_required\":false,\"lang\":\"rust\",\"version\":\"{version}\",\"protocol\":1,\"echo\":true,\"headers\":false,\"no_responders\":false"
    );
    let plain = encoded(|b| nats::encode_connect(b, &Connect::default()).unwrap());
    assert_eq!(plain, format!("{head}}}\r\n").as_bytes());

    let named = Connect {
        name: Some("loadrig-7"),
        auth: Auth::UserPass {
            user: "bench",
            pass: "s3cret",
        },
        ..Connect::default()
    };
    assert_eq!(
        encoded(|b| nats::encode_connect(b, &named).unwrap()),
        format!("{head},\"name\":\"loadrig-7\",\"user\":\"bench\",\"pass\":\"s3cret\"}}\r\n")
            .as_bytes()
    );

    let token = Connect {
        auth: Auth::Token("t0k"),
        verbose: true,
        pedantic: true,
        echo: false,
        ..Connect::default()
    };
    let t = encoded(|b| nats::encode_connect(b, &token).unwrap());
    let ClientOp::Connect(json) = client(&t) else {
        panic!("not CONNECT")
    };
    assert_eq!(json.str_field("auth_token"), Some("t0k"));
    assert_eq!(json.bool_field("verbose"), Some(true));
    assert_eq!(json.bool_field("pedantic"), Some(true));
    assert_eq!(json.bool_field("echo"), Some(false));
    assert_eq!(json.bool_field("headers"), Some(false));
    assert_eq!(json.bool_field("no_responders"), Some(false));
    assert_eq!(json.u64_field("protocol"), Some(1));
    assert_eq!(json.version(), Some(version));
}

#[test]
fn connect_strings_are_json_escaped() {
    let c = Connect {
        name: Some("a\"b\\c\nd\u{1}é"),
        auth: Auth::UserPass {
            user: "u",
            pass: "p\"}",
        },
        ..Connect::default()
    };
    let b = encoded(|b| nats::encode_connect(b, &c).unwrap());
    let ClientOp::Connect(json) = client(&b) else {
        panic!("not CONNECT")
    };
    assert_eq!(
        json.field("name"),
        Some("\"a\\\"b\\\\c\\u000ad\\u0001é\"".as_bytes())
    );
    assert_eq!(json.field("pass"), Some(&b"\"p\\\"}\""[..]));
    // The escaped quote and brace did not end the object early.
    assert_eq!(json.str_field("user"), Some("u"));
}

#[test]
fn client_ops_from_the_reference_parse() {
    let go = b"CONNECT {\"verbose\":false,\"pedantic\":false,\"tls_required\":false,\"name\":\"\",\"lang\":\"go\",\"version\":\"1.2.2\",\"protocol\":1}\r\n";
    let ClientOp::Connect(json) = client(go) else {
        panic!("not CONNECT")
    };
    assert_eq!(json.str_field("lang"), Some("go"));
    assert_eq!(json.str_field("name"), Some(""));

    assert_eq!(
        client(b"PUB FOO 11\r\nHello NATS!\r\n"),
        ClientOp::Pub(Pub {
            subject: b"FOO",
            reply_to: None,
            payload: b"Hello NATS!"
        })
    );
    assert_eq!(
        client(b"PUB FRONT.DOOR INBOX.22 11\r\nKnock Knock\r\n"),
        ClientOp::Pub(Pub {
            subject: b"FRONT.DOOR",
            reply_to: Some(b"INBOX.22"),
            payload: b"Knock Knock"
        })
    );
    assert_eq!(
        client(b"PUB NOTIFY 0\r\n\r\n"),
        ClientOp::Pub(Pub {
            subject: b"NOTIFY",
            reply_to: None,
            payload: b""
        })
    );
    let sub = ClientOp::Sub(Sub {
        subject: b"FOO",
        queue_group: None,
        sid: b"1",
    });
    assert_eq!(client(b"SUB FOO 1\r\n"), sub);
    // "SUB foo 1" and "sub foo 1" are equivalent: verbs ignore case.
    assert_eq!(client(b"sub FOO 1\r\n"), sub);
    assert_eq!(client(b"SuB\tFOO  \t 1 \r\n"), sub);
    assert_eq!(
        client(b"SUB BAR G1 44\r\n"),
        ClientOp::Sub(Sub {
            subject: b"BAR",
            queue_group: Some(b"G1"),
            sid: b"44",
        })
    );
    assert_eq!(
        client(b"UNSUB 1\r\n"),
        ClientOp::Unsub(Unsub {
            sid: b"1",
            max_msgs: None
        })
    );
    assert_eq!(
        client(b"unsub 1 5\r\n"),
        ClientOp::Unsub(Unsub {
            sid: b"1",
            max_msgs: Some(5)
        })
    );
    assert_eq!(client(b"PING\r\n"), ClientOp::Ping);
    assert_eq!(client(b"pong\r\n"), ClientOp::Pong);
}

// ---- what a server sends ----

#[test]
fn info_from_the_reference_and_its_fields() {
    let ServerOp::Info(info) = server(INFO_EXAMPLE) else {
        panic!("not INFO")
    };
    assert!(info.as_bytes().starts_with(b"{\"server_id\""));
    assert!(info.as_bytes().ends_with(b"\"client_id\":2392}"));
    assert_eq!(info.max_payload(), Some(1_048_576));
    assert_eq!(info.server_id(), Some("Zk0GQ3JBSrg3oyxCRRlE09"));
    assert_eq!(info.version(), Some("1.2.0"));
    assert_eq!(info.u64_field("proto"), Some(1));
    assert_eq!(info.bool_field("auth_required"), None);
}

#[test]
fn msg_from_the_reference() {
    let ServerOp::Msg(m) = server(b"MSG FOO.BAR 9 11\r\nHello World\r\n") else {
        panic!("not MSG")
    };
    assert_eq!(
        m,
        Msg {
            subject: b"FOO.BAR",
            sid: b"9",
            reply_to: None,
            payload: b"Hello World"
        }
    );
    assert_eq!(m.sid_u64(), Some(9));
    assert_eq!(
        server(b"MSG FOO.BAR 9 INBOX.34 11\r\nHello World\r\n"),
        ServerOp::Msg(Msg {
            subject: b"FOO.BAR",
            sid: b"9",
            reply_to: Some(b"INBOX.34"),
            payload: b"Hello World"
        })
    );
    // Payloads are skipped by length: CRLF and verbs inside are just bytes.
    assert_eq!(
        server(b"MSG x 1 13\r\nPING\r\n+OK\r\n\r\n\r\n"),
        ServerOp::Msg(Msg {
            subject: b"x",
            sid: b"1",
            reply_to: None,
            payload: b"PING\r\n+OK\r\n\r\n"
        })
    );
    assert_eq!(
        server(b"MSG x abc 0\r\n\r\n"),
        ServerOp::Msg(Msg {
            subject: b"x",
            sid: b"abc",
            reply_to: None,
            payload: b""
        })
    );
}

#[test]
fn ok_err_ping_pong() {
    assert_eq!(server(b"+OK\r\n"), ServerOp::Ok);
    assert_eq!(server(b"+ok\r\n"), ServerOp::Ok);
    assert_eq!(server(b"PING\r\n"), ServerOp::Ping);
    assert_eq!(server(b"ping \r\n"), ServerOp::Ping);
    assert_eq!(server(b"PONG\r\n"), ServerOp::Pong);
    assert_eq!(
        server(b"-ERR 'Unknown Protocol Operation'\r\n"),
        ServerOp::Err(b"Unknown Protocol Operation")
    );
    assert_eq!(
        server(b"-ERR 'Stale Connection'\r\n"),
        ServerOp::Err(b"Stale Connection")
    );
    assert_eq!(
        server(b"-ERR 'Permissions Violation for Publish to foo'\r\n"),
        ServerOp::Err(b"Permissions Violation for Publish to foo")
    );
    // Unquoted, and empty, messages are taken as they are.
    assert_eq!(server(b"-err  oops \r\n"), ServerOp::Err(b"oops"));
    assert_eq!(server(b"-ERR\r\n"), ServerOp::Err(b""));
    assert_eq!(server(b"-ERR ''\r\n"), ServerOp::Err(b""));
}

#[test]
fn verbs_ignore_case_and_fields_any_run_of_spaces_and_tabs() {
    for input in [
        &b"msg FOO.BAR 9 11\r\nHello World\r\n"[..],
        b"MsG FOO.BAR 9 11\r\nHello World\r\n",
        b"MSG\tFOO.BAR  9 \t 11\r\nHello World\r\n",
        b"MSG FOO.BAR 9 11 \r\nHello World\r\n",
    ] {
        assert_eq!(
            server(input),
            ServerOp::Msg(Msg {
                subject: b"FOO.BAR",
                sid: b"9",
                reply_to: None,
                payload: b"Hello World"
            }),
            "{:?}",
            String::from_utf8_lossy(input)
        );
    }
    let ServerOp::Info(info) = server(b"info \t {\"max_payload\":5}  \r\n") else {
        panic!("not INFO")
    };
    assert_eq!(info.as_bytes(), b"{\"max_payload\":5}");
}

#[test]
fn pipelined_ops_parse_one_after_another() {
    let mut input = INFO_EXAMPLE.to_vec();
    input.extend_from_slice(b"+OK\r\nMSG a 1 3\r\nabc\r\nPING\r\nMSG b 2 R 0\r\n\r\n-ERR 'x'\r\n");
    let mut at = 0;
    let mut kinds = Vec::new();
    while at < input.len() {
        let (op, n) = parse_server_op(&input[at..]).unwrap().unwrap();
        kinds.push(match op {
            ServerOp::Info(_) => "info",
            ServerOp::Msg(_) => "msg",
            ServerOp::Ok => "ok",
            ServerOp::Err(_) => "err",
            ServerOp::Ping => "ping",
            ServerOp::Pong => "pong",
        });
        at += n;
    }
    assert_eq!(kinds, ["info", "ok", "msg", "ping", "msg", "err"]);
}

// ---- round trips ----

#[test]
fn every_server_op_round_trips() {
    let big = vec![0xa5u8; 100_000];
    let mut b = BytesMut::new();
    nats::encode_info(&mut b, &INFO_EXAMPLE[5..INFO_EXAMPLE.len() - 2]).unwrap();
    nats::encode_msg(&mut b, b"FOO.BAR", b"9", None, b"Hello World").unwrap();
    nats::encode_msg(&mut b, b"a.b.c", b"123", Some(b"_INBOX.x"), &big).unwrap();
    nats::encode_msg(&mut b, b"e", b"1", None, b"").unwrap();
    nats::encode_ok(&mut b);
    nats::encode_err(&mut b, b"Authorization Violation").unwrap();
    nats::encode_err(&mut b, b"").unwrap();
    nats::encode_ping(&mut b);
    nats::encode_pong(&mut b);
    let want = [
        ServerOp::Info(nats::Json::new(&INFO_EXAMPLE[5..INFO_EXAMPLE.len() - 2])),
        ServerOp::Msg(Msg {
            subject: b"FOO.BAR",
            sid: b"9",
            reply_to: None,
            payload: b"Hello World",
        }),
        ServerOp::Msg(Msg {
            subject: b"a.b.c",
            sid: b"123",
            reply_to: Some(b"_INBOX.x"),
            payload: &big,
        }),
        ServerOp::Msg(Msg {
            subject: b"e",
            sid: b"1",
            reply_to: None,
            payload: b"",
        }),
        ServerOp::Ok,
        ServerOp::Err(b"Authorization Violation"),
        ServerOp::Err(b""),
        ServerOp::Ping,
        ServerOp::Pong,
    ];
    let mut at = 0;
    for w in want {
        let (op, n) = parse_server_op(&b[at..]).unwrap().unwrap();
        assert_eq!(op, w);
        assert_frame(&b[at..at + n], len_of!(parse_server_op));
        at += n;
    }
    assert_eq!(at, b.len());
}

#[test]
fn every_client_op_round_trips() {
    let payload: Vec<u8> = (0..=255u8).cycle().take(5000).collect();
    let mut b = BytesMut::new();
    nats::encode_connect(&mut b, &Connect::default()).unwrap();
    nats::encode_pub(&mut b, b"FOO", None, b"Hello NATS!").unwrap();
    nats::encode_pub(&mut b, b"FRONT.DOOR", Some(b"INBOX.22"), &payload).unwrap();
    nats::encode_sub(&mut b, b"FOO.>", None, 0).unwrap();
    nats::encode_sub(&mut b, b"BAR.*", Some(b"G1"), u64::MAX).unwrap();
    nats::encode_unsub(&mut b, 7, None);
    nats::encode_unsub(&mut b, 7, Some(10));
    nats::encode_ping(&mut b);
    nats::encode_pong(&mut b);
    let want = [
        None,
        Some(ClientOp::Pub(Pub {
            subject: b"FOO",
            reply_to: None,
            payload: b"Hello NATS!",
        })),
        Some(ClientOp::Pub(Pub {
            subject: b"FRONT.DOOR",
            reply_to: Some(b"INBOX.22"),
            payload: &payload,
        })),
        Some(ClientOp::Sub(Sub {
            subject: b"FOO.>",
            queue_group: None,
            sid: b"0",
        })),
        Some(ClientOp::Sub(Sub {
            subject: b"BAR.*",
            queue_group: Some(b"G1"),
            sid: b"18446744073709551615",
        })),
        Some(ClientOp::Unsub(Unsub {
            sid: b"7",
            max_msgs: None,
        })),
        Some(ClientOp::Unsub(Unsub {
            sid: b"7",
            max_msgs: Some(10),
        })),
        Some(ClientOp::Ping),
        Some(ClientOp::Pong),
    ];
    let mut at = 0;
    for w in want {
        let (op, n) = parse_client_op(&b[at..]).unwrap().unwrap();
        match w {
            Some(w) => assert_eq!(op, w),
            None => assert!(matches!(op, ClientOp::Connect(_))),
        }
        assert_frame(&b[at..at + n], len_of!(parse_client_op));
        at += n;
    }
    assert_eq!(at, b.len());
}

// ---- garbage ----

fn server_err(input: &[u8]) -> NatsError {
    match parse_server_op(input) {
        Err(e) => e,
        other => panic!("{:?}: {other:?}", String::from_utf8_lossy(input)),
    }
}

fn client_err(input: &[u8]) -> NatsError {
    match parse_client_op(input) {
        Err(e) => e,
        other => panic!("{:?}: {other:?}", String::from_utf8_lossy(input)),
    }
}

#[test]
fn unknown_verbs_are_refused_at_their_first_bytes() {
    for input in [
        &b"FOO\r\n"[..],
        b"X",
        b"MX",
        b"MSGX 1 2\r\n",
        b"PINGPONG\r\n",
        b"\r\n",
        b" PING\r\n",
        b"\x00",
        b"INFORMATION",
        b"+OKAY\r\n",
        b"-ERROR 'x'\r\n",
    ] {
        assert_eq!(
            server_err(input),
            NatsError::UnknownOp,
            "{:?}",
            String::from_utf8_lossy(input)
        );
    }
    // Each direction knows only its own verbs.
    assert_eq!(server_err(b"PUB FOO 0\r\n\r\n"), NatsError::UnknownOp);
    assert_eq!(server_err(b"CONNECT {}\r\n"), NatsError::UnknownOp);
    assert_eq!(client_err(b"MSG FOO 1 0\r\n\r\n"), NatsError::UnknownOp);
    assert_eq!(client_err(b"INFO {}\r\n"), NatsError::UnknownOp);
    assert_eq!(client_err(b"+OK\r\n"), NatsError::UnknownOp);
    // The beginnings of verbs wait for more.
    for prefix in [
        &b""[..],
        b"M",
        b"ms",
        b"MSG",
        b"+",
        b"+o",
        b"-ER",
        b"INF",
        b"PIN",
    ] {
        assert_eq!(parse_server_op(prefix), Ok(None));
    }
    for prefix in [&b"C"[..], b"CONNEC", b"UNSU", b"pu", b"S"] {
        assert_eq!(parse_client_op(prefix), Ok(None));
    }
}

#[test]
fn headers_are_named_as_unsupported() {
    assert_eq!(
        server_err(
            b"HMSG FOO.BAR 9 34 45\r\nNATS/1.0\r\nFoodGroup: vegetable\r\n\r\nHello World\r\n"
        ),
        NatsError::Unsupported("HMSG")
    );
    assert_eq!(
        client_err(b"HPUB FOO 22 33\r\nNATS/1.0\r\nBar: Baz\r\n\r\nHello NATS!\r\n"),
        NatsError::Unsupported("HPUB")
    );
}

#[test]
fn malformed_arguments_are_refused() {
    for input in [
        &b"MSG\r\n"[..],
        b"MSG FOO\r\n",
        b"MSG FOO 11\r\n",
        b"MSG a b c d e\r\n",
        b"PING x\r\n",
        b"PONG 1\r\n",
        b"+OK x\r\n",
        b"INFO\r\n",
        b"INFO  \t \r\n",
    ] {
        assert!(
            matches!(server_err(input), NatsError::Malformed(_)),
            "{:?}",
            String::from_utf8_lossy(input)
        );
    }
    for input in [
        &b"PUB\r\n"[..],
        b"PUB FOO\r\n",
        b"PUB a b c d\r\n",
        b"SUB FOO\r\n",
        b"SUB a b c d\r\n",
        b"UNSUB\r\n",
        b"UNSUB 1 x\r\n",
        b"UNSUB 1 2 3\r\n",
        b"CONNECT\r\n",
    ] {
        assert!(
            matches!(client_err(input), NatsError::Malformed(_)),
            "{:?}",
            String::from_utf8_lossy(input)
        );
    }
}

#[test]
fn bad_payload_lengths_are_refused() {
    for input in [
        &b"MSG FOO 1 x\r\n"[..],
        b"MSG FOO 1 -1\r\n",
        b"MSG FOO 1 +1\r\n",
        b"MSG FOO 1 1.5\r\n",
        b"MSG FOO 1 99999999999999999999999\r\n",
    ] {
        assert_eq!(
            server_err(input),
            NatsError::Malformed("payload length"),
            "{:?}",
            String::from_utf8_lossy(input)
        );
    }
    // Declared longer than the limit: refused before any payload arrives.
    let over = format!("MSG FOO 1 {}\r\n", MAX_PAYLOAD + 1);
    assert_eq!(
        server_err(over.as_bytes()),
        NatsError::TooLarge {
            what: "payload",
            len: MAX_PAYLOAD + 1,
            max: MAX_PAYLOAD
        }
    );
    assert_eq!(
        server_err(b"MSG FOO 1 18446744073709551615\r\n"),
        NatsError::TooLarge {
            what: "payload",
            len: usize::MAX,
            max: MAX_PAYLOAD
        }
    );
    let at_limit = format!("MSG FOO 1 {MAX_PAYLOAD}\r\n");
    assert_eq!(parse_server_op(at_limit.as_bytes()), Ok(None));
    // A payload not followed by CRLF means the length lied.
    assert_eq!(
        server_err(b"MSG FOO 1 2\r\nabc\r\n"),
        NatsError::BadLineEnd("MSG")
    );
    assert_eq!(
        server_err(b"MSG FOO 1 4\r\nabc\r\n"),
        NatsError::BadLineEnd("MSG")
    );
    assert_eq!(
        client_err(b"PUB FOO 2\r\nabc\r\n"),
        NatsError::BadLineEnd("PUB")
    );
}

#[test]
fn line_ends_must_be_crlf() {
    assert_eq!(server_err(b"PING\n"), NatsError::BadLineEnd("control line"));
    assert_eq!(
        server_err(b"PING\rX"),
        NatsError::BadLineEnd("control line")
    );
    assert_eq!(
        server_err(b"MSG a 1 1\nx\r\n"),
        NatsError::BadLineEnd("control line")
    );
    assert_eq!(parse_server_op(b"PING\r"), Ok(None));
}

#[test]
fn lines_over_the_limit_are_refused_even_without_their_end() {
    let mut long = b"MSG ".to_vec();
    long.resize(MAX_CONTROL_LINE + 1, b'a');
    let too_long = NatsError::TooLarge {
        what: "control line",
        len: MAX_CONTROL_LINE + 1,
        max: MAX_CONTROL_LINE,
    };
    assert_eq!(server_err(&long), too_long);
    long.extend_from_slice(b" 1 0\r\n\r\n");
    assert!(matches!(server_err(&long), NatsError::TooLarge { .. }));

    // A line of exactly the limit is accepted.
    let mut exact = b"MSG ".to_vec();
    exact.resize(MAX_CONTROL_LINE - 4, b'a');
    exact.extend_from_slice(b" 1 0");
    assert_eq!(exact.len(), MAX_CONTROL_LINE);
    exact.extend_from_slice(b"\r\n\r\n");
    assert!(matches!(
        parse_server_op(&exact),
        Ok(Some((ServerOp::Msg(_), n))) if n == exact.len()
    ));

    // INFO carries JSON and gets more room, up to its own limit.
    let mut info = b"INFO {\"x\":\"".to_vec();
    info.resize(10 * 1024, b'y');
    info.extend_from_slice(b"\",\"max_payload\":9}\r\n");
    let ServerOp::Info(j) = server(&info) else {
        panic!("not INFO")
    };
    assert_eq!(j.max_payload(), Some(9));
    let mut huge = b"INFO {".to_vec();
    huge.resize(MAX_JSON_LINE + 1, b' ');
    assert!(matches!(server_err(&huge), NatsError::TooLarge { .. }));

    // Limits are the caller's to choose.
    let tight = Limits {
        max_control_line: 16,
        max_json_line: 16,
        max_payload: 4,
    };
    assert!(matches!(
        parse_server_op_with(b"MSG abcdefghijk 1 0\r\n\r\n", &tight),
        Err(NatsError::TooLarge { .. })
    ));
    assert!(matches!(
        parse_server_op_with(b"MSG a 1 5\r\n", &tight),
        Err(NatsError::TooLarge {
            what: "payload",
            ..
        })
    ));
    assert!(matches!(
        parse_client_op_with(b"CONNECT {\"verbose\":false}\r\n", &tight),
        Err(NatsError::TooLarge { .. })
    ));
    assert!(matches!(
        parse_server_op_with(b"MSG a 1 4\r\nabcd\r\n", &tight),
        Ok(Some(_))
    ));
    // Even a limit shorter than the verb holds.
    let tiny = Limits {
        max_control_line: 2,
        ..tight
    };
    for input in [&b"PING\r\n"[..], b"MSG a 1 0\r\n\r\n", b"+OK\r\n"] {
        assert!(matches!(
            parse_server_op_with(input, &tiny),
            Err(NatsError::TooLarge { .. })
        ));
    }
    assert_eq!(parse_server_op_with(b"PIN", &tiny), Ok(None));
}

// ---- encoders refuse what would not parse, and leave the buffer alone ----

#[test]
fn encoders_refuse_bad_fields_and_leave_the_buffer_as_it_was() {
    let mut b = BytesMut::from(&b"PING\r\n"[..]);
    let bad_subjects: [&[u8]; 6] = [b"", b"a b", b"a\tb", b"a\r", b"\nb", b" "];
    for s in bad_subjects {
        assert_eq!(
            nats::encode_pub(&mut b, s, None, b"x"),
            Err(NatsError::BadToken("subject"))
        );
        assert_eq!(
            nats::encode_sub(&mut b, s, None, 1),
            Err(NatsError::BadToken("subject"))
        );
        assert_eq!(
            nats::encode_pub(&mut b, b"ok", Some(s), b"x"),
            Err(NatsError::BadToken("reply subject"))
        );
        assert_eq!(
            nats::encode_sub(&mut b, b"ok", Some(s), 1),
            Err(NatsError::BadToken("queue group"))
        );
        assert_eq!(
            nats::encode_msg(&mut b, b"ok", s, None, b"x"),
            Err(NatsError::BadToken("sid"))
        );
    }
    assert_eq!(
        nats::encode_err(&mut b, b"two\r\nlines"),
        Err(NatsError::BadToken("-ERR message"))
    );
    assert_eq!(
        nats::encode_info(&mut b, b"{}\n"),
        Err(NatsError::BadToken("INFO JSON"))
    );
    let long = vec![b'a'; MAX_CONTROL_LINE];
    assert!(matches!(
        nats::encode_pub(&mut b, &long, None, b"x"),
        Err(NatsError::TooLarge {
            what: "PUB line",
            ..
        })
    ));
    assert!(matches!(
        nats::encode_sub(&mut b, &long, None, 1),
        Err(NatsError::TooLarge {
            what: "SUB line",
            ..
        })
    ));
    let huge = vec![0u8; MAX_PAYLOAD + 1];
    assert_eq!(
        nats::encode_pub(&mut b, b"FOO", None, &huge),
        Err(NatsError::TooLarge {
            what: "payload",
            len: MAX_PAYLOAD + 1,
            max: MAX_PAYLOAD
        })
    );
    let long_pass = "p".repeat(MAX_JSON_LINE);
    let c = Connect {
        auth: Auth::UserPass {
            user: "u",
            pass: &long_pass,
        },
        ..Connect::default()
    };
    assert!(matches!(
        nats::encode_connect(&mut b, &c),
        Err(NatsError::TooLarge {
            what: "CONNECT line",
            ..
        })
    ));
    assert_eq!(&b[..], b"PING\r\n");
}

#[test]
fn the_longest_line_an_encoder_writes_parses() {
    // PUB with a subject that makes the line exactly the limit.
    let subject = vec![b's'; MAX_CONTROL_LINE - "PUB  1".len()];
    let b = encoded(|b| nats::encode_pub(b, &subject, None, b"x").unwrap());
    assert_eq!(b.len(), MAX_CONTROL_LINE + 2 + 1 + 2);
    assert_frame(&b, len_of!(parse_client_op));
    let mut longer = subject.clone();
    longer.push(b's');
    assert!(nats::encode_pub(&mut BytesMut::new(), &longer, None, b"x").is_err());
}

//! What comes back: OK, ERR and EOF packets, a prepare's answer
//! ([`PrepareReader`]) and an execute's ([`Response`]): nothing, or one or
//! more binary result sets, read packet by packet so a reader can stop at
//! any packet boundary and go on when more bytes arrive.
//!
//! A prepared `CALL` of a procedure answers with each result set the
//! procedure selected, then the OK of the `CALL` itself; every set but the
//! last says "more results" (`SERVER_MORE_RESULTS_EXISTS`) in its closing
//! EOF or OK. Only the first result set's rows are handed out: the Voter's
//! and kv's procedures select once.

use super::{Fields, MyError, MORE_RESULTS_EXISTS};

/// Most columns accepted in a result set: a sanity bound, so a corrupt
/// column count cannot make a reader allocate without bound.
pub const MAX_COLUMNS: u64 = 4096;

/// An ERR packet: the server refused a command; the connection stays usable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerError {
    /// The server's error number (1062: duplicate key, 1213: deadlock, ...).
    pub code: u16,
    /// SQLSTATE, five ASCII characters ("HY000" when the packet has none).
    pub state: [u8; 5],
    /// The server's message.
    pub message: String,
}

impl ServerError {
    /// SQLSTATE as text.
    pub fn state(&self) -> &str {
        std::str::from_utf8(&self.state).unwrap_or("HY000")
    }
}

/// Reads an ERR packet's payload (its first byte 0xFF).
pub fn parse_err(payload: &[u8]) -> Result<ServerError, MyError> {
    let mut f = Fields::new(payload, "ERR packet");
    f.u8()?;
    let code = f.u16()?;
    let mut state = *b"HY000";
    if f.rest().first() == Some(&b'#') {
        f.take(1)?;
        state.copy_from_slice(f.take(5)?);
    }
    let message = String::from_utf8_lossy(f.rest()).into_owned();
    Ok(ServerError {
        code,
        state,
        message,
    })
}

/// An OK packet's server status flags.
fn ok_status(payload: &[u8]) -> Result<u16, MyError> {
    let mut f = Fields::new(payload, "OK packet");
    f.u8()?;
    f.lenenc()?; // affected rows
    f.lenenc()?; // last insert id
    f.u16()
}

/// An EOF packet: first byte 0xFE and shorter than 9 bytes (a row or a
/// length-encoded 8-byte integer starting 0xFE is longer).
fn is_eof(payload: &[u8]) -> bool {
    payload.first() == Some(&0xFE) && payload.len() < 9
}

/// An EOF packet's server status flags.
fn eof_status(payload: &[u8]) -> Result<u16, MyError> {
    let mut f = Fields::new(payload, "EOF packet");
    f.u8()?;
    f.u16()?; // warnings
    f.u16()
}

/// A statement the server prepared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrepareOk {
    /// Its id, for executes.
    pub id: u32,
    /// Columns of its result (0 for a CALL or a write).
    pub columns: u16,
    /// Its `?` placeholders.
    pub params: u16,
}

/// Reads a prepare's answer: the OK with the id, then a definition per
/// parameter and per column, each list closed by an EOF.
#[derive(Debug, Default)]
pub struct PrepareReader {
    ok: Option<PrepareOk>,
    /// Definitions and EOFs still to skip.
    left: u32,
}

impl PrepareReader {
    /// Takes the next packet; the answer once the last one is read.
    pub fn feed(
        &mut self,
        payload: &[u8],
    ) -> Result<Option<Result<PrepareOk, ServerError>>, MyError> {
        if let Some(ok) = self.ok {
            self.left = self.left.saturating_sub(1);
            return Ok((self.left == 0).then_some(Ok(ok)));
        }
        match payload.first() {
            Some(0x00) => {
                let mut f = Fields::new(payload, "prepare OK");
                f.u8()?;
                let ok = PrepareOk {
                    id: f.u32()?,
                    columns: f.u16()?,
                    params: f.u16()?,
                };
                let list = |n: u16| {
                    if n == 0 {
                        0
                    } else {
                        u32::from(n).saturating_add(1)
                    }
                };
                self.left = list(ok.params).saturating_add(list(ok.columns));
                if self.left == 0 {
                    return Ok(Some(Ok(ok)));
                }
                self.ok = Some(ok);
                Ok(None)
            }
            Some(0xFF) => Ok(Some(Err(parse_err(payload)?))),
            _ => Err(MyError::Malformed("answer to a prepare")),
        }
    }
}

/// A result column's type, as the binary row encodes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Column {
    /// `MYSQL_TYPE_*`.
    pub kind: u8,
    /// The UNSIGNED flag.
    pub unsigned: bool,
}

/// Where an execute's answer is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Its first packet, or the first of a next result.
    Start,
    /// Column definitions, this many to come.
    Columns(u64),
    /// The EOF after the definitions.
    ColumnsEnd,
    /// Rows, until an EOF or an ERR.
    Rows,
}

/// What a packet of an execute's answer meant.
#[derive(Debug, PartialEq, Eq)]
pub enum Event<'a> {
    /// A row of the first result set.
    Row(Row<'a>),
    /// The answer is complete: done, or refused by the server.
    Done(Result<(), ServerError>),
}

/// Reads one execute's answer, packet by packet. Reusable: after `Done`
/// it is ready for the next answer (its column list keeps its memory).
#[derive(Debug)]
pub struct Response {
    state: State,
    columns: Vec<Column>,
    /// Result sets finished so far in this answer.
    sets: u32,
}

impl Default for Response {
    fn default() -> Self {
        Response {
            state: State::Start,
            columns: Vec::new(),
            sets: 0,
        }
    }
}

impl Response {
    /// Takes the next packet's payload; `None` for one that only moves the
    /// answer along (a definition, an EOF, a row of a later set).
    pub fn feed<'a>(&'a mut self, payload: &'a [u8]) -> Result<Option<Event<'a>>, MyError> {
        if payload.first() == Some(&0xFF) {
            self.reset();
            return Ok(Some(Event::Done(Err(parse_err(payload)?))));
        }
        match self.state {
            State::Start => self.start(payload),
            State::Columns(left) => {
                self.columns.push(column(payload)?);
                let left = left.saturating_sub(1);
                self.state = if left == 0 {
                    State::ColumnsEnd
                } else {
                    State::Columns(left)
                };
                Ok(None)
            }
            State::ColumnsEnd => {
                if !is_eof(payload) {
                    return Err(MyError::Malformed("end of column definitions"));
                }
                self.state = State::Rows;
                Ok(None)
            }
            State::Rows => {
                if is_eof(payload) {
                    return Ok(self.end_of_set(eof_status(payload)?));
                }
                if payload.first() != Some(&0x00) {
                    return Err(MyError::Malformed("binary row"));
                }
                if self.sets > 0 {
                    return Ok(None);
                }
                Ok(Some(Event::Row(Row {
                    payload,
                    columns: &self.columns,
                })))
            }
        }
    }

    fn start<'a>(&mut self, payload: &'a [u8]) -> Result<Option<Event<'a>>, MyError> {
        if payload.first() == Some(&0x00) {
            return Ok(self.end_of_set(ok_status(payload)?));
        }
        let mut f = Fields::new(payload, "column count");
        let n = f.lenenc()?.unwrap_or(0);
        if n == 0 || n > MAX_COLUMNS || !f.rest().is_empty() {
            return Err(MyError::Malformed("column count"));
        }
        self.columns.clear();
        self.state = State::Columns(n);
        Ok(None)
    }

    /// A result finished with `status`: another follows, or the answer is done.
    fn end_of_set<'a>(&mut self, status: u16) -> Option<Event<'a>> {
        self.sets = self.sets.saturating_add(1);
        self.state = State::Start;
        if status & MORE_RESULTS_EXISTS != 0 {
            return None;
        }
        self.reset();
        Some(Event::Done(Ok(())))
    }

    fn reset(&mut self) {
        self.state = State::Start;
        self.sets = 0;
    }
}

/// A column definition's type and flags.
fn column(payload: &[u8]) -> Result<Column, MyError> {
    let mut f = Fields::new(payload, "column definition");
    for _ in 0..6 {
        f.lenenc_bytes()?; // catalog, schema, table, org table, name, org name
    }
    f.lenenc()?; // length of the fixed fields
    f.u16()?; // character set
    f.u32()?; // column length
    let kind = f.u8()?;
    let flags = f.u16()?;
    Ok(Column {
        kind,
        unsigned: flags & 0x20 != 0,
    })
}

/// One cell of a binary row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cell<'a> {
    /// NULL.
    Null,
    /// An integer column (unsigned ones above `i64::MAX` wrap).
    Int(i64),
    /// A string, binary or decimal column: its bytes.
    Bytes(&'a [u8]),
    /// A floating point or temporal column (not read by this client).
    Other,
}

/// A binary row of the first result set, borrowed from the read buffer.
#[derive(Debug, PartialEq, Eq)]
pub struct Row<'a> {
    payload: &'a [u8],
    columns: &'a [Column],
}

impl<'a> Row<'a> {
    /// Cell `i`; an error when the row is shorter than its columns say.
    pub fn cell(&self, i: usize) -> Result<Cell<'a>, MyError> {
        let Some(&col) = self.columns.get(i) else {
            return Err(MyError::Malformed("binary row: no such column"));
        };
        // Header byte, then a NULL bitmap with a 2-bit offset.
        let bitmap_len = self.columns.len().saturating_add(9) / 8;
        let mut f = Fields::new(self.payload, "binary row");
        f.u8()?;
        let bitmap = f.take(bitmap_len)?;
        let null = |j: usize| {
            let bit = j.saturating_add(2);
            bitmap
                .get(bit / 8)
                .is_some_and(|b| b & 1u8.rotate_left((bit % 8) as u32) != 0)
        };
        for (j, c) in self.columns.iter().enumerate().take(i) {
            if !null(j) {
                value(&mut f, *c)?;
            }
        }
        if null(i) {
            return Ok(Cell::Null);
        }
        value(&mut f, col)
    }

    /// Cell `i` as an integer: an integer column, or a decimal's digits.
    pub fn int(&self, i: usize) -> Option<i64> {
        match self.cell(i).ok()? {
            Cell::Int(n) => Some(n),
            Cell::Bytes(b) => std::str::from_utf8(b).ok()?.parse().ok(),
            Cell::Null | Cell::Other => None,
        }
    }

    /// Cell `i`'s bytes, for a string or binary column.
    pub fn bytes(&self, i: usize) -> Option<&'a [u8]> {
        match self.cell(i).ok()? {
            Cell::Bytes(b) => Some(b),
            _ => None,
        }
    }
}

/// Reads one non-NULL value of column `c`.
fn value<'a>(f: &mut Fields<'a>, c: Column) -> Result<Cell<'a>, MyError> {
    let int = |b: &[u8], unsigned: bool| {
        let mut le = [0u8; 8];
        le.iter_mut().zip(b).for_each(|(d, s)| *d = *s);
        let negative = !unsigned && b.last().is_some_and(|x| x & 0x80 != 0);
        if negative {
            le.iter_mut().skip(b.len()).for_each(|d| *d = 0xFF);
        }
        Cell::Int(i64::from_le_bytes(le))
    };
    Ok(match c.kind {
        0x01 => int(f.take(1)?, c.unsigned),
        0x02 | 0x0D => int(f.take(2)?, c.unsigned),
        0x03 | 0x09 => int(f.take(4)?, c.unsigned),
        0x08 => int(f.take(8)?, c.unsigned),
        0x04 => {
            f.take(4)?;
            Cell::Other
        }
        0x05 => {
            f.take(8)?;
            Cell::Other
        }
        0x06 => Cell::Null,
        0x07 | 0x0A | 0x0B | 0x0C => {
            let n = f.u8()?;
            f.take(usize::from(n))?;
            Cell::Other
        }
        _ => Cell::Bytes(f.lenenc_bytes()?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn coldef(kind: u8, flags: u16) -> Vec<u8> {
        let mut c = Vec::new();
        for s in ["def", "bench", "", "", "code", ""] {
            c.push(s.len() as u8);
            c.extend_from_slice(s.as_bytes());
        }
        c.push(0x0C);
        c.extend_from_slice(&63u16.to_le_bytes());
        c.extend_from_slice(&11u32.to_le_bytes());
        c.push(kind);
        c.extend_from_slice(&flags.to_le_bytes());
        c.extend_from_slice(&[0, 0, 0]);
        c
    }

    /// A CALL's answer: one set of (INT code, VARBINARY k), then the CALL's OK.
    fn call_answer() -> Vec<Vec<u8>> {
        vec![
            vec![2],
            coldef(0x03, 0),
            coldef(0xFD, 0x80),
            vec![0xFE, 0, 0, 0x0A, 0], // EOF, more results
            [&[0u8, 0b0000_0000][..], &(-7i32).to_le_bytes(), b"\x02ab"].concat(),
            vec![0, 0b0000_1000], // code 1, k NULL
            [&[0u8, 0][..], &3i32.to_le_bytes(), b"\x00"].concat(),
            vec![0xFE, 0, 0, 0x0A, 0],
            vec![0, 0, 0, 0x02, 0, 0, 0], // the CALL's OK, no more
        ]
    }

    #[test]
    fn a_call_gives_its_rows_then_done() {
        let mut r = Response::default();
        let mut rows = Vec::new();
        let packets = call_answer();
        let last = packets.len() - 1;
        for (i, p) in packets.iter().enumerate() {
            match r.feed(p).unwrap() {
                Some(Event::Row(row)) => rows.push((row.int(0), row.bytes(1).map(<[u8]>::to_vec))),
                Some(Event::Done(d)) => {
                    assert_eq!(i, last);
                    assert_eq!(d, Ok(()));
                }
                None => assert_ne!(i, last),
            }
        }
        assert_eq!(
            rows,
            [
                (Some(-7), Some(b"ab".to_vec())),
                (None, None),
                (Some(3), Some(Vec::new()))
            ]
        );
        // Reused for the next answer: an OK alone.
        assert_eq!(
            r.feed(&[0, 1, 0, 2, 0, 0, 0]).unwrap(),
            Some(Event::Done(Ok(())))
        );
    }

    #[test]
    fn an_error_ends_the_answer_anywhere() {
        let err = b"\xff\xbd\x04#40001Deadlock found";
        let mut r = Response::default();
        r.feed(&[1]).unwrap();
        match r.feed(err).unwrap() {
            Some(Event::Done(Err(e))) => assert_eq!((e.code, e.state()), (1213, "40001")),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            r.feed(&[0, 0, 0, 2, 0, 0, 0]).unwrap(),
            Some(Event::Done(Ok(())))
        );
    }

    #[test]
    fn truncated_and_hostile_packets_are_errors_not_panics() {
        for p in call_answer() {
            for cut in 0..p.len() {
                let mut r = Response::default();
                let _ = r.feed(&p[..cut]);
                let mut r = Response::default();
                r.feed(&[2]).unwrap();
                let _ = r.feed(&p[..cut]);
            }
        }
        let mut r = Response::default();
        assert!(r.feed(b"\xfe\xff\xff\xff\xff\xff\xff\xff\xff").is_err()); // 2^64 columns
        let mut r = Response::default();
        r.feed(&[1]).unwrap();
        r.feed(&coldef(0x08, 0)).unwrap();
        r.feed(&[0xFE, 0, 0, 0, 0]).unwrap();
        match r.feed(&[0, 0, 1, 2]).unwrap() {
            Some(Event::Row(row)) => assert!(row.cell(0).is_err() && row.int(0).is_none()),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_prepare_answer_skips_its_definitions() {
        let mut p = PrepareReader::default();
        let ok = [0u8, 9, 0, 0, 0, 1, 0, 2, 0, 0, 0, 0];
        assert_eq!(p.feed(&ok).unwrap(), None);
        for _ in 0..2 + 1 + 1 {
            assert_eq!(p.feed(&coldef(3, 0)).unwrap(), None);
        }
        let done = p.feed(&[0xFE, 0, 0, 2, 0]).unwrap();
        assert_eq!(
            done,
            Some(Ok(PrepareOk {
                id: 9,
                columns: 1,
                params: 2
            }))
        );
        let mut p = PrepareReader::default();
        let e = p.feed(b"\xff\x7a\x04#42S02no table").unwrap();
        assert!(matches!(e, Some(Err(e)) if e.code == 1146));
    }
}

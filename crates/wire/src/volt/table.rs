//! Owns VoltTable serialisation, the result-set format inside responses:
//! `[total len i32][metadata len i32][status i8][column count i16]
//! [type i8 × n][name string × n][row count i32]([row len i32][cells])*`.
//!
//! Both length fields exclude themselves. The metadata length covers status
//! through the last column name; rows start right after it.

use bytes::{BufMut, BytesMut};

use crate::volt::frame::{put_bytes, short_count};
use crate::volt::reader::Reader;
use crate::volt::types::{read_cell, write_cell};
use crate::volt::{Value, VoltType, WireError};

/// Status byte servers put on ordinary result tables.
pub const DEFAULT_TABLE_STATUS: i8 = i8::MIN;

/// One column's name and type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    /// Column name (upper case for SQL results).
    pub name: String,
    /// Column type; always one for which [`VoltType::is_column_type`] holds.
    pub ty: VoltType,
}

/// A decoded result table.
///
/// Invariant: every row has exactly one value per column, and each value is
/// either `Null` or the variant matching its column's type.
#[derive(Debug, Clone, PartialEq)]
pub struct VoltTable {
    status: i8,
    columns: Vec<Column>,
    rows: Vec<Vec<Value>>,
}

impl VoltTable {
    /// Builds a table, checking the row invariant (for fake servers and
    /// tests; decoding builds tables itself).
    pub fn new(columns: Vec<Column>, rows: Vec<Vec<Value>>) -> Result<Self, WireError> {
        for c in &columns {
            if !c.ty.is_column_type() {
                return Err(WireError::UnknownType(c.ty.code()));
            }
        }
        for row in &rows {
            if row.len() != columns.len() {
                return Err(WireError::BadLength {
                    what: "row width",
                    value: i64::try_from(row.len()).unwrap_or(i64::MAX),
                });
            }
            for (c, v) in columns.iter().zip(row) {
                // Reuse the cell writer as the type check so the two agree.
                write_cell(&mut BytesMut::new(), c.ty, v)?;
            }
        }
        Ok(Self {
            status: DEFAULT_TABLE_STATUS,
            columns,
            rows,
        })
    }

    /// The table's status byte.
    pub fn status(&self) -> i8 {
        self.status
    }

    /// Column names and types, in order.
    pub fn columns(&self) -> &[Column] {
        &self.columns
    }

    /// Number of columns.
    pub fn column_count(&self) -> usize {
        self.columns.len()
    }

    /// Number of rows.
    pub fn row_count(&self) -> usize {
        self.rows.len()
    }

    /// All rows.
    pub fn rows(&self) -> &[Vec<Value>] {
        &self.rows
    }

    /// Index of the column called `name` (exact match).
    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name == name)
    }

    /// The cell at (`row`, `col`), or `None` when out of range.
    pub fn get(&self, row: usize, col: usize) -> Option<&Value> {
        self.rows.get(row).and_then(|r| r.get(col))
    }

    /// The cell widened to `i64`; `None` when out of range, NULL, or not an
    /// integer/timestamp column.
    pub fn get_i64(&self, row: usize, col: usize) -> Option<i64> {
        self.get(row, col).and_then(Value::as_i64)
    }

    /// The FLOAT cell; `None` when out of range, NULL, or another type.
    pub fn get_f64(&self, row: usize, col: usize) -> Option<f64> {
        self.get(row, col).and_then(Value::as_f64)
    }

    /// The STRING cell; `None` when out of range, NULL, or another type.
    pub fn get_str(&self, row: usize, col: usize) -> Option<&str> {
        self.get(row, col).and_then(Value::as_str)
    }

    /// The first cell as `i64`, for the common one-row, one-column result
    /// (e.g. a count or a procedure's return code).
    pub fn as_scalar_i64(&self) -> Option<i64> {
        self.get_i64(0, 0)
    }
}

/// Reads one table, starting at its total-length field.
pub(crate) fn read_table(r: &mut Reader<'_>) -> Result<VoltTable, WireError> {
    let total = r.i32("table length")?;
    let body = r.take(len_field(total, "table length")?, "table")?;
    let mut t = Reader::new(body);

    let meta_len = t.i32("table metadata length")?;
    let mut meta = Reader::new(t.take(
        len_field(meta_len, "table metadata length")?,
        "table metadata",
    )?);
    let status = meta.i8("table status")?;
    let raw_cols = i64::from(meta.i16("column count")?);
    // Each column costs at least a type byte plus a 4-byte name length.
    let n_cols = meta.count(raw_cols, 5, "column count")?;
    let mut types = Vec::with_capacity(n_cols);
    for _ in 0..n_cols {
        let ty = VoltType::from_code(meta.i8("column type")?)?;
        if !ty.is_column_type() {
            return Err(WireError::UnknownType(ty.code()));
        }
        types.push(ty);
    }
    let mut columns = Vec::with_capacity(n_cols);
    for ty in types {
        columns.push(Column {
            name: meta.string("column name")?,
            ty,
        });
    }
    // Bytes past the names inside the metadata region are skipped, as the
    // declared metadata length (not our parse) says where rows begin.

    let raw_rows = i64::from(t.i32("row count")?);
    // Each row costs at least its 4-byte length.
    let n_rows = t.count(raw_rows, 4, "row count")?;
    let mut rows = Vec::with_capacity(n_rows);
    for _ in 0..n_rows {
        let row_len = t.i32("row length")?;
        let mut cells = Reader::new(t.take(len_field(row_len, "row length")?, "row")?);
        let mut row = Vec::with_capacity(columns.len());
        for c in &columns {
            row.push(read_cell(&mut cells, c.ty)?);
        }
        cells.finish()?;
        rows.push(row);
    }
    t.finish()?;
    Ok(VoltTable {
        status,
        columns,
        rows,
    })
}

fn len_field(raw: i32, what: &'static str) -> Result<usize, WireError> {
    usize::try_from(raw).map_err(|_| WireError::BadLength {
        what,
        value: i64::from(raw),
    })
}

/// Appends one serialised table, starting with its total-length field.
pub(crate) fn write_table(buf: &mut BytesMut, table: &VoltTable) -> Result<(), WireError> {
    let total_at = buf.len();
    buf.put_i32(0);
    let meta_at = buf.len();
    buf.put_i32(0);
    buf.put_i8(table.status);
    buf.put_i16(short_count(table.columns.len(), "column count")?);
    for c in &table.columns {
        buf.put_i8(c.ty.code());
    }
    for c in &table.columns {
        put_bytes(buf, c.name.as_bytes(), "column name")?;
    }
    patch_len(buf, meta_at)?;
    let n_rows =
        i32::try_from(table.rows.len()).map_err(|_| too_large("row count", table.rows.len()))?;
    buf.put_i32(n_rows);
    for row in &table.rows {
        let row_at = buf.len();
        buf.put_i32(0);
        for (c, v) in table.columns.iter().zip(row) {
            write_cell(buf, c.ty, v)?;
        }
        patch_len(buf, row_at)?;
    }
    patch_len(buf, total_at)
}

/// Back-fills the `i32` at `at` with the number of bytes written after it.
fn patch_len(buf: &mut BytesMut, at: usize) -> Result<(), WireError> {
    let after = buf.len().saturating_sub(at).saturating_sub(4);
    let len = i32::try_from(after).map_err(|_| too_large("table section", after))?;
    if let Some(slot) = buf.get_mut(at..at.saturating_add(4)) {
        slot.copy_from_slice(&len.to_be_bytes());
    }
    Ok(())
}

fn too_large(what: &'static str, len: usize) -> WireError {
    WireError::TooLarge {
        what,
        len,
        max: i32::MAX as usize,
    }
}

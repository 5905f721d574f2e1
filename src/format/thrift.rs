//! The Thrift compact protocol, read with spans and bounds: the one reader
//! under our Parquet page-header decoder ([`super::page_header`]) and the
//! check every Parquet footer passes before the parquet crate decodes it
//! ([`check_struct`]).
//!
//! In brief: a field begins with one byte, the high nibble the id delta from
//! the previous field (0: a zigzag varint id follows) and the low nibble the
//! type; integers are zigzag varints; binary is a varint length and bytes; a
//! list begins with a size/type byte; a struct ends with a 0 byte. Nothing
//! is allocated for what is skipped; nesting is bounded; a list may not
//! claim more elements, nor a string more bytes, than are left, so whatever
//! reads the same bytes afterwards cannot be made to reserve memory the
//! input does not justify.

use super::error::{ErrorKind, FormatError};
use super::span::{Role, Span};

/// Compact-protocol type ids.
pub(crate) const T_TRUE: u8 = 1;
pub(crate) const T_FALSE: u8 = 2;
pub(crate) const T_BYTE: u8 = 3;
pub(crate) const T_I16: u8 = 4;
pub(crate) const T_I32: u8 = 5;
pub(crate) const T_I64: u8 = 6;
pub(crate) const T_DOUBLE: u8 = 7;
pub(crate) const T_BINARY: u8 = 8;
pub(crate) const T_LIST: u8 = 9;
pub(crate) const T_SET: u8 = 10;
pub(crate) const T_MAP: u8 = 11;
pub(crate) const T_STRUCT: u8 = 12;

/// How deep structures may nest. Parquet's own go about eight deep
/// (metadata ▸ row group ▸ column ▸ metadata ▸ statistics, or a schema
/// element's logical type ▸ time unit).
const MAX_DEPTH: usize = 32;

/// The fields of a Thrift struct, by id: its name in the `.thrift` file (for
/// spans) and what it holds on the wire (for [`check_struct`]). One table per
/// struct serves both readers, so a field is described once. Fields not
/// listed are skipped, unnamed and unchecked.
pub type Fields = &'static [(i16, &'static str, Wire)];

/// Walks one compact struct at the start of `bytes` and records a span for
/// every scalar of a named field, under `name` (`footer.row_groups[0]
/// .columns[1].meta_data.data_page_offset = 4`). The spans read before an
/// error come back with it, so a damaged footer still shows its good part.
pub fn walk_struct(
    bytes: &[u8],
    at: u64,
    name: &str,
    fields: Fields,
) -> (Vec<Span>, Result<u64, FormatError>) {
    walk_struct_within(bytes, at, name, fields, 0..u64::MAX)
}

/// [`walk_struct`], keeping only the spans that overlap `keep` (file
/// offsets): the decoder view of a large base shows the footer fields near
/// its cursor, not the tens of thousands of a 100M-quad footer.
pub fn walk_struct_within(
    bytes: &[u8],
    at: u64,
    name: &str,
    fields: Fields,
    keep: std::ops::Range<u64>,
) -> (Vec<Span>, Result<u64, FormatError>) {
    let mut r = Reader::new(bytes, at, name);
    r.keep = keep;
    let mut path = name.to_string();
    let result = r.walk_fields(&mut path, fields, 0).map(|_| r.pos as u64);
    (r.spans, result)
}

/// What a field of a known struct holds on the wire, as the reader that
/// decodes the bytes after [`check_struct`] expects it.
#[derive(Clone, Copy, Debug)]
pub enum Wire {
    Bool,
    /// One raw byte (Thrift `byte`, `i8`).
    Byte,
    /// A zigzag varint: `i16`, `i32`, `i64` and enums.
    Int,
    Double,
    /// `string` or `binary`.
    Binary,
    List(&'static Wire),
    /// A struct or union with these fields; others are skipped.
    Struct(Fields),
}

/// A compact type id as parquet.thrift spells the type.
fn type_name(ty: u8) -> &'static str {
    match ty {
        T_TRUE | T_FALSE => "a bool",
        T_BYTE => "a byte",
        T_I16 => "an i16",
        T_I32 => "an i32",
        T_I64 => "an i64",
        T_DOUBLE => "a double",
        T_BINARY => "a binary",
        T_LIST => "a list",
        T_SET => "a set",
        T_MAP => "a map",
        T_STRUCT => "a struct",
        _ => "an unknown type",
    }
}

impl Wire {
    /// Whether a field of compact type `ty` holds this.
    fn is(self, ty: u8) -> bool {
        match self {
            Wire::Bool => ty == T_TRUE || ty == T_FALSE,
            Wire::Byte => ty == T_BYTE,
            Wire::Int => (T_I16..=T_I64).contains(&ty),
            Wire::Double => ty == T_DOUBLE,
            Wire::Binary => ty == T_BINARY,
            Wire::List(_) => ty == T_LIST || ty == T_SET,
            Wire::Struct(_) => ty == T_STRUCT,
        }
    }

    /// The fields the walk names inside this value: a struct's, or the
    /// elements' of a list of structs.
    fn nested(self) -> Option<Fields> {
        match self {
            Wire::Struct(fields) | Wire::List(&Wire::Struct(fields)) => Some(fields),
            _ => None,
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Wire::Bool => "a boolean",
            Wire::Byte => "a byte",
            Wire::Int => "an integer",
            Wire::Double => "a double",
            Wire::Binary => "a string",
            Wire::List(_) => "a list",
            Wire::Struct(_) => "a struct",
        }
    }
}

/// Checks that `bytes` begin with one well-formed compact struct, every
/// length and count within what is left, nested at most a bounded depth,
/// and every field `fields` names (at any depth) of the type it names;
/// returns its length. `at` is the file offset of `bytes[0]`, for errors.
///
/// The types matter because the parquet crate's decoder reads a field by
/// its id and ignores the type the bytes declare: an `i32` where the schema
/// list belongs was read as a list header whose count (66 million) it
/// reserved room for, 7.5 GB, before reading an element (found by the
/// `base_rows` fuzz target). With the types checked, the crate reads the
/// bytes as this walk did, and every count it reserves was bounded here.
pub fn check_struct(bytes: &[u8], at: u64, name: &str, fields: Fields) -> Result<u64, FormatError> {
    let mut r = Reader::new(bytes, at, name);
    r.check_fields(fields, 0)?;
    Ok(r.pos as u64)
}

pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    pub(crate) pos: usize,
    at: u64,
    name: &'a str,
    pub(crate) spans: Vec<Span>,
    /// Only spans overlapping these file offsets are recorded by the walk.
    keep: std::ops::Range<u64>,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8], at: u64, name: &'a str) -> Self {
        Reader { bytes, pos: 0, at, name, spans: Vec::new(), keep: 0..u64::MAX }
    }

    pub(crate) fn error(&self, pos: usize, detail: String) -> FormatError {
        FormatError::structure(self.at + pos as u64, self.name.to_string(), detail)
    }

    fn byte(&mut self) -> Result<u8, FormatError> {
        let b = self.bytes.get(self.pos).copied().ok_or_else(|| {
            let kind = ErrorKind::Truncated {
                field: self.name.to_string(),
                needed: self.pos as u64 + 1,
                file_len: self.at + self.bytes.len() as u64,
            };
            FormatError::new(self.at + self.pos as u64, kind)
        })?;
        self.pos += 1;
        Ok(b)
    }

    fn varint(&mut self) -> Result<u64, FormatError> {
        let start = self.pos;
        let mut v = 0u64;
        for shift in (0..70).step_by(7) {
            let b = self.byte()?;
            if shift == 63 && b > 1 {
                break;
            }
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(self.error(start, "a varint longer than 64 bits".into()))
    }

    fn zigzag(&mut self) -> Result<i64, FormatError> {
        let v = self.varint()?;
        Ok((v >> 1) as i64 ^ -((v & 1) as i64))
    }

    fn i32(&mut self) -> Result<i32, FormatError> {
        let start = self.pos;
        let v = self.zigzag()?;
        i32::try_from(v).map_err(|_| self.error(start, format!("{v} does not fit the i32 field it is in")))
    }

    /// An i32 field, recorded as a span `{name}.{field}`.
    pub(crate) fn i32_field(&mut self, field: &str, role: Role) -> Result<i32, FormatError> {
        let start = self.pos;
        let v = self.i32()?;
        self.record(field, start, role, v.to_string());
        Ok(v)
    }

    pub(crate) fn record(&mut self, field: &str, start: usize, role: Role, value: String) {
        let range = self.at + start as u64..self.at + self.pos as u64;
        let name = format!("{}.{field}", self.name);
        self.spans.push(Span { name, range, role, value: Some(value), reason: None });
    }

    /// Calls `each(reader, id, type)` for every field of a struct up to its
    /// stop byte; booleans carry their value in the type (1 true, 2 false).
    pub(crate) fn fields(
        &mut self,
        depth: usize,
        mut each: impl FnMut(&mut Self, i16, u8) -> Result<(), FormatError>,
    ) -> Result<(), FormatError> {
        if depth > MAX_DEPTH {
            return Err(self.error(self.pos, format!("structures nested deeper than {MAX_DEPTH}")));
        }
        let mut last: i16 = 0;
        loop {
            let start = self.pos;
            let b = self.byte()?;
            if b == 0 {
                return Ok(());
            }
            let (delta, ty) = (b >> 4, b & 0x0f);
            let id = if delta == 0 { self.zigzag()? } else { i64::from(last) + i64::from(delta) };
            last = i16::try_from(id).map_err(|_| self.error(start, format!("field id {id} out of range")))?;
            if !(T_TRUE..=T_STRUCT).contains(&ty) {
                return Err(
                    self.error(start, format!("field {id} has type {ty}; expected a Thrift type 1..12"))
                );
            }
            each(self, last, ty)?;
        }
    }

    /// Steps over a value of type `ty` without keeping it.
    pub(crate) fn skip(&mut self, ty: u8, depth: usize) -> Result<(), FormatError> {
        match ty {
            T_TRUE | T_FALSE => Ok(()),
            T_BYTE => self.byte().map(drop),
            T_I16 | T_I32 | T_I64 => self.varint().map(drop),
            T_DOUBLE => (0..8).try_for_each(|_| self.byte().map(drop)),
            T_BINARY => self.skip_binary(),
            T_LIST | T_SET => self.skip_list(depth),
            T_MAP => self.skip_map(depth),
            T_STRUCT => self.fields(depth + 1, |r, _, ty| r.skip(ty, depth + 1)),
            other => Err(self.error(self.pos, format!("a value of Thrift type {other}"))),
        }
    }

    fn skip_binary(&mut self) -> Result<(), FormatError> {
        self.binary().map(drop)
    }

    /// A string's bytes (after its length), bounded by what is left.
    fn binary(&mut self) -> Result<std::ops::Range<usize>, FormatError> {
        let start = self.pos;
        let len = self.varint()?;
        let left = (self.bytes.len() - self.pos) as u64;
        if len > left {
            return Err(self.error(
                start,
                format!(
                    "a {len}-byte string with {} left in {}",
                    crate::text::plural(left, "byte", "bytes"),
                    self.name
                ),
            ));
        }
        let data = self.pos..self.pos + len as usize;
        self.pos = data.end;
        Ok(data)
    }

    fn skip_list(&mut self, depth: usize) -> Result<(), FormatError> {
        let (n, ty) = self.list_head()?;
        (0..n).try_for_each(|_| self.skip_element(ty, depth))
    }

    fn skip_map(&mut self, depth: usize) -> Result<(), FormatError> {
        let n = self.varint()?;
        if n == 0 {
            return Ok(());
        }
        let types = self.byte()?;
        for _ in 0..n {
            self.skip_element(types >> 4, depth)?;
            self.skip_element(types & 0x0f, depth)?;
        }
        Ok(())
    }

    /// An element of a list or map: booleans take a byte there.
    fn skip_element(&mut self, ty: u8, depth: usize) -> Result<(), FormatError> {
        if depth >= MAX_DEPTH {
            return Err(self.error(self.pos, format!("structures nested deeper than {MAX_DEPTH}")));
        }
        match ty {
            T_TRUE | T_FALSE => self.byte().map(drop),
            _ => self.skip(ty, depth + 1),
        }
    }

    fn check_fields(&mut self, fields: Fields, depth: usize) -> Result<(), FormatError> {
        self.fields(depth, |r, id, ty| match fields.iter().find(|f| f.0 == id) {
            Some(&(_, _, wire)) if wire.is(ty) => r.check_value(wire, ty, depth + 1),
            Some(&(_, _, wire)) => Err(r.error(
                r.pos.saturating_sub(1),
                format!("field {id} holds {} where Parquet declares {}", type_name(ty), wire.describe()),
            )),
            None => r.skip(ty, depth + 1),
        })
    }

    /// A value of compact type `ty`, which `wire` accepts.
    fn check_value(&mut self, wire: Wire, ty: u8, depth: usize) -> Result<(), FormatError> {
        match wire {
            Wire::Struct(fields) => self.check_fields(fields, depth),
            Wire::List(element) => self.check_list(*element, depth),
            _ => self.skip(ty, depth),
        }
    }

    fn check_list(&mut self, element: Wire, depth: usize) -> Result<(), FormatError> {
        let start = self.pos;
        let (n, ty) = self.list_head()?;
        if n > 0 && !element.is(ty) {
            let detail = format!("a list of {} where Parquet declares {}", type_name(ty), element.describe());
            return Err(self.error(start, detail));
        }
        if depth >= MAX_DEPTH {
            return Err(self.error(self.pos, format!("structures nested deeper than {MAX_DEPTH}")));
        }
        (0..n).try_for_each(|_| match element {
            // In a list a boolean takes a byte of its own.
            Wire::Bool => self.byte().map(drop),
            _ => self.check_value(element, ty, depth + 1),
        })
    }

    /// A boolean field (its value is in the type nibble), recorded as a span.
    pub(crate) fn bool_field(&mut self, field: &str, ty: u8) -> bool {
        let v = ty == T_TRUE;
        let start = self.pos - 1;
        self.record(field, start, Role::Value, v.to_string());
        v
    }

    /// The fields of a struct; `path` names it and is extended in place for
    /// each field (no string is made for a field that is not recorded).
    fn walk_fields(&mut self, path: &mut String, fields: Fields, depth: usize) -> Result<(), FormatError> {
        self.fields(depth, |r, id, ty| match fields.iter().find(|f| f.0 == id) {
            Some(&(_, name, wire)) => {
                let len = path.len();
                path.push('.');
                path.push_str(name);
                let walked = r.walk_value(path, ty, wire.nested(), depth + 1);
                path.truncate(len);
                walked
            }
            None => r.skip(ty, depth + 1),
        })
    }

    fn walk_value(
        &mut self,
        path: &mut String,
        ty: u8,
        nested: Option<Fields>,
        depth: usize,
    ) -> Result<(), FormatError> {
        let start = self.pos;
        // The walk names what it can and leaves the types to the check: a
        // damaged footer still shows its spans up to the fault.
        match (ty, nested) {
            (T_STRUCT, Some(fields)) => self.walk_fields(path, fields, depth),
            (T_LIST | T_SET, _) => self.walk_list(path, nested, depth),
            (T_TRUE | T_FALSE, _) => {
                self.record_path(path, start - 1, ty == T_TRUE);
                Ok(())
            }
            (T_BYTE, _) => {
                let v = self.byte()?;
                self.record_path(path, start, v);
                Ok(())
            }
            (T_I16 | T_I32 | T_I64, _) => {
                let v = self.zigzag()?;
                self.record_path(path, start, v);
                Ok(())
            }
            (T_BINARY, _) => {
                let data = self.binary()?;
                let bytes = &self.bytes[data];
                self.record_path(path, start, Shown(bytes));
                Ok(())
            }
            _ => self.skip(ty, depth),
        }
    }

    /// A list's size/type byte (and its count when it does not fit the
    /// nibble): `(elements, element type)`. Each element takes at least one
    /// byte, so a count beyond the bytes left is refused here.
    fn list_head(&mut self) -> Result<(u64, u8), FormatError> {
        let head = self.byte()?;
        let n = if head >> 4 == 15 { self.varint()? } else { u64::from(head >> 4) };
        let left = (self.bytes.len() - self.pos) as u64;
        if n > left {
            return Err(self.error(
                self.pos,
                format!("a list of {n} elements with {} left", crate::text::plural(left, "byte", "bytes")),
            ));
        }
        Ok((n, head & 0x0f))
    }

    fn walk_list(
        &mut self,
        path: &mut String,
        nested: Option<Fields>,
        depth: usize,
    ) -> Result<(), FormatError> {
        let (n, ty) = self.list_head()?;
        if depth >= MAX_DEPTH {
            return Err(self.error(self.pos, format!("structures nested deeper than {MAX_DEPTH}")));
        }
        let len = path.len();
        for i in 0..n {
            path.truncate(len);
            use std::fmt::Write;
            let _ = write!(path, "[{i}]");
            match ty {
                // In a list a boolean takes a byte of its own.
                T_TRUE | T_FALSE => {
                    let start = self.pos;
                    let v = self.byte()?;
                    self.record_path(path, start, v == 1);
                }
                _ => self.walk_value(path, ty, nested, depth + 1)?,
            }
        }
        path.truncate(len);
        Ok(())
    }

    /// A span named by its full path; the role follows the field's name.
    /// Nothing is formatted for a span outside `keep`.
    fn record_path(&mut self, path: &str, start: usize, value: impl std::fmt::Display) {
        let range = self.at + start as u64..self.at + self.pos as u64;
        if range.end <= self.keep.start || range.start >= self.keep.end {
            return;
        }
        let field = path.rsplit('.').next().unwrap_or(path);
        let field = field.split('[').next().unwrap_or(field);
        let role = if field.ends_with("_offset") {
            Role::Offset
        } else if field.ends_with("_size") || field.ends_with("_length") {
            Role::Length
        } else if field.starts_with("num_") || field.ends_with("_count") || field == "count" {
            Role::Count
        } else {
            Role::Value
        };
        self.spans.push(Span {
            name: path.to_string(),
            range,
            role,
            value: Some(value.to_string()),
            reason: None,
        });
    }
}

/// A string field's value as the hex view shows it: its first 48
/// characters, quoted and escaped (formatted only when recorded).
struct Shown<'b>(&'b [u8]);

impl std::fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shown: String = String::from_utf8_lossy(self.0).chars().take(48).collect();
        write!(f, "{shown:?}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const POINT: Fields = &[(1, "x", Int)];
    const HOLDER: Fields = &[(1, "points", List(&Wire::Struct(POINT))), (2, "flag", Wire::Bool)];
    use Wire::{Int, List};

    fn check(bytes: &[u8], fields: Fields) -> Result<u64, String> {
        check_struct(bytes, 100, "t", fields).map_err(|e| e.to_string())
    }

    /// Fields the table names must be of its type, at every depth; other
    /// fields are skipped whatever their type.
    #[test]
    fn fields_are_checked_against_their_declared_types() {
        // { 1: [ { 1: 2 } ], 2: true, 3: "a" (unnamed) }
        let good = [0x19, 0x1c, 0x15, 0x04, 0x00, 0x11, 0x18, 0x01, b'a', 0x00];
        assert_eq!(check(&good, HOLDER), Ok(10));
        // 1 is an i32 where a list is declared (a list header would follow).
        let e = check(&[0x15, 0xf6, 0xff, 0xff, 0xff, 0x0f, 0x00], HOLDER).unwrap_err();
        assert!(
            e.contains("at byte 100") && e.contains("field 1 holds an i32 where Parquet declares a list"),
            "{e}"
        );
        // A list of i32 where structs are declared.
        let e = check(&[0x19, 0x15, 0x04, 0x00], HOLDER).unwrap_err();
        assert!(
            e.contains("at byte 101") && e.contains("a list of an i32 where Parquet declares a struct"),
            "{e}"
        );
        // Inside the list's struct, a binary where an i32 is declared.
        let e = check(&[0x19, 0x1c, 0x18, 0x01, b'a', 0x00, 0x00], HOLDER).unwrap_err();
        assert!(
            e.contains("at byte 102")
                && e.contains("field 1 holds a binary where Parquet declares an integer"),
            "{e}"
        );
        // An empty list may declare any element type.
        assert_eq!(check(&[0x19, 0x05, 0x00], HOLDER), Ok(3));
        // A count beyond the bytes left is refused whatever the types.
        let e = check(&[0x19, 0xfc, 0xff, 0xff, 0x7f, 0x00], HOLDER).unwrap_err();
        assert!(e.contains("a list of 2097151 elements with 1 byte left"), "{e}");
    }

    /// The table that types the check names the walk's spans: inside a list
    /// of structs too, and an unlisted field is neither named nor a fault.
    #[test]
    fn the_walk_names_the_fields_the_check_types() {
        let good = [0x19, 0x1c, 0x15, 0x04, 0x00, 0x11, 0x18, 0x01, b'a', 0x00];
        let (spans, walked) = walk_struct(&good, 100, "t", HOLDER);
        assert_eq!(walked.map_err(|e| e.to_string()), check(&good, HOLDER));
        let named: Vec<(String, Option<String>, u64)> =
            spans.into_iter().map(|s| (s.name, s.value, s.range.start)).collect();
        assert_eq!(
            named,
            [
                ("t.points[0].x".to_string(), Some("2".to_string()), 103),
                ("t.flag".into(), Some("true".into()), 105)
            ]
        );
    }
}

//! The session listing as a table on the wire (`sessions_list`'s reply, and only over the
//! protocol: the window's IPC and `--json` keep the listing's objects).
//!
//! A listing of 10,000 sessions as objects is about 9.4 MB, most of it the same field names
//! 10,000 times and values the same from one row to the next (the sentence of
//! `not_known`, the nodes of sessions of one workflow). As a table, each field's name is said
//! once and a value the same as the row before's is not said again:
//!
//! `{"sessions": {"rows": [[fresh, same, value, …], …], "columns": ["id", "path", …]}, "usage": …}`
//!
//! Row `r`'s `fresh` and `same` are bitmasks over the columns (bit `i`: column `i`): `fresh` the
//! columns whose values follow, in column order; `same` those whose value is row `r - 1`'s; a
//! column in neither is absent from the row (a field its type skips, as `not_known` when
//! nothing is missing). The columns come after the rows: the writer learns them as it
//! serialises the rows (the row's type names its fields, [`write_listing`] never does), at most
//! 64 ([`MAX_COLUMNS`]). Each row is read back by the row's own `Deserialize`, given its fields
//! by name as from an object ([`read_result`]), so the listing reads into any type the object
//! form reads into: a `SessionListing`, or a `serde_json::Value` of the same objects (the
//! window's remote workspace hands that on).

use std::borrow::Cow;
use std::fmt;
use std::io::{self, Write};
use std::ops::Range;

use serde::de::value::{BorrowedStrDeserializer, MapAccessDeserializer, StrDeserializer};
use serde::de::{self, DeserializeOwned, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{self, Impossible, SerializeMap, SerializeStruct, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::app::SessionListing;
use crate::remote::protocol::SESSIONS_LIST;
use crate::remote::reply::{Answer, ReplyOut, Written};

/// The most columns a table has (its rows' masks are 64 bits).
pub const MAX_COLUMNS: usize = 64;

/// The field of the listing's object that is written as a table.
const TABLE_FIELD: &str = "sessions";

/// A [`SessionListing`] as `sessions_list` answers it over the protocol: its sessions as a table
/// ([`write_listing`]).
pub struct WireListing(pub SessionListing);

impl Answer for WireListing {
    fn write_to(&self, out: &mut ReplyOut<'_>) -> Result<Written, serde_json::Error> {
        out.write_result_text(|out| write_listing(&self.0, out))
    }
}

/// Writes `listing` as `sessions_list` answers it over the protocol: its sessions as a table
/// (see the module's doc).
pub fn write_listing(listing: &SessionListing, out: &mut impl Write) -> io::Result<()> {
    // Every field of the listing, so that one added there is not left out here.
    let SessionListing { sessions, usage } = listing;
    write!(out, "{{\"{TABLE_FIELD}\":")?;
    write_table(sessions, out)?;
    out.write_all(b",\"usage\":")?;
    serde_json::to_writer(&mut *out, usage)?;
    out.write_all(b"}")
}

/// Reads the result of `method` from its text as `T`: `sessions_list`'s as the table
/// [`WireListing`] writes, any other's as it is. What does not read is said naming the method.
pub fn read_result<T: DeserializeOwned>(method: &str, text: &[u8]) -> Result<T, String> {
    let read = match method {
        SESSIONS_LIST => read_with_table(text),
        _ => serde_json::from_slice(text),
    };
    read.map_err(|e| format!("the answer to `{method}` does not read: {e}"))
}

/// Reads an object whose field [`TABLE_FIELD`] is a table as `T`, that field as the list of its
/// rows' objects.
fn read_with_table<T: DeserializeOwned>(text: &[u8]) -> Result<T, serde_json::Error> {
    let fields: Fields<'_> = serde_json::from_slice(text)?;
    if !fields.0.iter().any(|(name, _)| name.0 == TABLE_FIELD) {
        return Err(de::Error::missing_field(TABLE_FIELD));
    }
    T::deserialize(MapAccessDeserializer::new(FieldsAccess {
        fields: fields.0.into_iter(),
        value: None,
    }))
}

// --- Writing ------------------------------------------------------------------------------

/// Writes `rows` as a table (see the module's doc): each row serialised field by field, each
/// value's JSON text compared with the row before's in its column.
fn write_table<T: Serialize>(rows: &[T], out: &mut impl Write) -> io::Result<()> {
    let mut columns = Vec::new();
    let (mut now, mut before) = (RowText::default(), RowText::default());
    let mut key = Vec::new();
    out.write_all(b"{\"rows\":[")?;
    for (r, row) in rows.iter().enumerate() {
        now.clear();
        row.serialize(RowFields {
            columns: &mut columns,
            row: &mut now,
            key: &mut key,
            column: None,
        })?;
        let (mut fresh, mut same) = (0u64, 0u64);
        for i in 0..columns.len() {
            match (now.value(i), before.value(i)) {
                (Some(value), Some(earlier)) if value == earlier => same |= 1 << i,
                (Some(_), _) => fresh |= 1 << i,
                (None, _) => {}
            }
        }
        if r > 0 {
            out.write_all(b",")?;
        }
        write!(out, "[{fresh},{same}")?;
        for i in 0..columns.len() {
            if fresh & (1 << i) != 0 {
                out.write_all(b",")?;
                out.write_all(now.value(i).unwrap_or_default())?;
            }
        }
        out.write_all(b"]")?;
        std::mem::swap(&mut now, &mut before);
    }
    out.write_all(b"],\"columns\":")?;
    let names: Vec<&str> = columns.iter().map(|c: &Column| c.name.as_str()).collect();
    serde_json::to_writer(&mut *out, &names)?;
    out.write_all(b"}")
}

/// A column: its field's name, and the name as JSON (how a row's serialiser gives it).
struct Column {
    name: String,
    json: Vec<u8>,
}

/// One row's values as JSON text, each column's span of it (`None`: absent from the row).
#[derive(Default)]
struct RowText {
    text: Vec<u8>,
    spans: Vec<Option<Range<usize>>>,
}

impl RowText {
    fn clear(&mut self) {
        self.text.clear();
        self.spans.clear();
    }

    fn value(&self, column: usize) -> Option<&[u8]> {
        let span = self.spans.get(column)?.clone()?;
        Some(&self.text[span])
    }
}

/// The serialiser of one row: each field's value serialised to its JSON text, in its column
/// (a column added for a name not seen before).
struct RowFields<'a> {
    columns: &'a mut Vec<Column>,
    row: &'a mut RowText,
    /// The field name being written, as JSON.
    key: &'a mut Vec<u8>,
    /// The column of the field whose value comes next.
    column: Option<usize>,
}

fn not_an_object() -> serde_json::Error {
    ser::Error::custom("a row of a table is not an object")
}

impl RowFields<'_> {
    /// Finds the column of the field named `key` (its value next), adding it when new.
    fn find_column(&mut self, key: &(impl Serialize + ?Sized)) -> Result<(), serde_json::Error> {
        self.key.clear();
        serde_json::to_writer(&mut *self.key, key)?;
        // Rows of one type name their fields in the same order: the next column first.
        let next = self.row.spans.len();
        let found = match self.columns.get(next) {
            Some(column) if column.json == *self.key => Some(next),
            _ => self.columns.iter().position(|c| c.json == *self.key),
        };
        let column = match found {
            Some(column) => column,
            None => {
                let name: String = serde_json::from_slice(self.key)
                    .map_err(|_| ser::Error::custom("a row of a table has a field name that is not a string"))?;
                if self.columns.len() == MAX_COLUMNS {
                    return Err(ser::Error::custom(format!(
                        "a table of more than {MAX_COLUMNS} columns (at `{name}`)"
                    )));
                }
                self.columns.push(Column {
                    name,
                    json: self.key.clone(),
                });
                self.columns.len() - 1
            }
        };
        if self.row.spans.len() <= column {
            self.row.spans.resize(column + 1, None);
        }
        if self.row.spans[column].is_some() {
            return Err(ser::Error::custom(format!(
                "a row of a table has the field `{}` twice",
                self.columns[column].name
            )));
        }
        self.column = Some(column);
        Ok(())
    }

    fn value(&mut self, value: &(impl Serialize + ?Sized)) -> Result<(), serde_json::Error> {
        let column = self.column.take().expect("a value follows its key");
        let start = self.row.text.len();
        serde_json::to_writer(&mut self.row.text, value)?;
        self.row.spans[column] = Some(start..self.row.text.len());
        Ok(())
    }
}

impl SerializeMap for RowFields<'_> {
    type Ok = ();
    type Error = serde_json::Error;

    fn serialize_key<K: Serialize + ?Sized>(&mut self, key: &K) -> Result<(), serde_json::Error> {
        self.find_column(key)
    }

    fn serialize_value<V: Serialize + ?Sized>(&mut self, value: &V) -> Result<(), serde_json::Error> {
        self.value(value)
    }

    fn end(self) -> Result<(), serde_json::Error> {
        Ok(())
    }
}

impl SerializeStruct for RowFields<'_> {
    type Ok = ();
    type Error = serde_json::Error;

    fn serialize_field<V: Serialize + ?Sized>(
        &mut self,
        name: &'static str,
        value: &V,
    ) -> Result<(), serde_json::Error> {
        self.find_column(name)?;
        self.value(value)
    }

    fn end(self) -> Result<(), serde_json::Error> {
        Ok(())
    }
}

/// The serialiser's methods a row (an object) never calls.
macro_rules! not_an_object {
    ($($method:ident($($arg:ty),*) -> $ok:ty;)*) => {$(
        fn $method(self, $(_: $arg),*) -> Result<$ok, serde_json::Error> {
            Err(not_an_object())
        }
    )*};
}

impl<'a> Serializer for RowFields<'a> {
    type Ok = ();
    type Error = serde_json::Error;
    type SerializeSeq = Impossible<(), serde_json::Error>;
    type SerializeTuple = Impossible<(), serde_json::Error>;
    type SerializeTupleStruct = Impossible<(), serde_json::Error>;
    type SerializeTupleVariant = Impossible<(), serde_json::Error>;
    type SerializeMap = RowFields<'a>;
    type SerializeStruct = RowFields<'a>;
    type SerializeStructVariant = Impossible<(), serde_json::Error>;

    not_an_object! {
        serialize_bool(bool) -> ();
        serialize_i8(i8) -> ();
        serialize_i16(i16) -> ();
        serialize_i32(i32) -> ();
        serialize_i64(i64) -> ();
        serialize_u8(u8) -> ();
        serialize_u16(u16) -> ();
        serialize_u32(u32) -> ();
        serialize_u64(u64) -> ();
        serialize_f32(f32) -> ();
        serialize_f64(f64) -> ();
        serialize_char(char) -> ();
        serialize_str(&str) -> ();
        serialize_bytes(&[u8]) -> ();
        serialize_none() -> ();
        serialize_unit() -> ();
        serialize_unit_struct(&'static str) -> ();
        serialize_unit_variant(&'static str, u32, &'static str) -> ();
        serialize_seq(Option<usize>) -> Self::SerializeSeq;
        serialize_tuple(usize) -> Self::SerializeTuple;
        serialize_tuple_struct(&'static str, usize) -> Self::SerializeTupleStruct;
        serialize_tuple_variant(&'static str, u32, &'static str, usize) -> Self::SerializeTupleVariant;
        serialize_struct_variant(&'static str, u32, &'static str, usize) -> Self::SerializeStructVariant;
    }

    fn serialize_some<V: Serialize + ?Sized>(self, value: &V) -> Result<(), serde_json::Error> {
        value.serialize(self)
    }

    fn serialize_newtype_struct<V: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &V,
    ) -> Result<(), serde_json::Error> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<V: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &V,
    ) -> Result<(), serde_json::Error> {
        Err(not_an_object())
    }

    fn serialize_map(self, _: Option<usize>) -> Result<RowFields<'a>, serde_json::Error> {
        Ok(self)
    }

    fn serialize_struct(self, _: &'static str, _: usize) -> Result<RowFields<'a>, serde_json::Error> {
        Ok(self)
    }
}

// --- Reading ------------------------------------------------------------------------------

/// A name (a field's, a column's), borrowed from the text when it has no escapes.
struct Name<'de>(Cow<'de, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Name<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Name<'a>, D::Error> {
        struct NameVisitor<'a>(std::marker::PhantomData<&'a str>);
        impl<'de: 'a, 'a> Visitor<'de> for NameVisitor<'a> {
            type Value = Name<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a name")
            }
            fn visit_borrowed_str<E: de::Error>(self, name: &'de str) -> Result<Name<'a>, E> {
                Ok(Name(Cow::Borrowed(name)))
            }
            fn visit_str<E: de::Error>(self, name: &str) -> Result<Name<'a>, E> {
                Ok(Name(Cow::Owned(name.to_owned())))
            }
        }
        deserializer.deserialize_str(NameVisitor(std::marker::PhantomData))
    }
}

impl<'de> Name<'de> {
    /// The name handed to a reader as a map's key.
    fn key<K: DeserializeSeed<'de>>(&self, seed: K) -> Result<K::Value, serde_json::Error> {
        match &self.0 {
            Cow::Borrowed(name) => seed.deserialize(BorrowedStrDeserializer::new(name)),
            Cow::Owned(name) => seed.deserialize(StrDeserializer::new(name)),
        }
    }
}

/// An object's fields as their text, in order.
struct Fields<'de>(Vec<(Name<'de>, &'de RawValue)>);

impl<'de> Deserialize<'de> for Fields<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Fields<'de>, D::Error> {
        struct FieldsVisitor;
        impl<'de> Visitor<'de> for FieldsVisitor {
            type Value = Fields<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fields<'de>, A::Error> {
                let mut fields = Vec::new();
                while let Some(field) = map.next_entry()? {
                    fields.push(field);
                }
                Ok(Fields(fields))
            }
        }
        deserializer.deserialize_map(FieldsVisitor)
    }
}

/// A field's value read from its text.
fn read_value<'de, V: DeserializeSeed<'de>>(seed: V, text: &'de RawValue) -> Result<V::Value, serde_json::Error> {
    seed.deserialize(&mut serde_json::Deserializer::from_str(text.get()))
}

/// The listing's object handed to its reader: the table's field as the list of its rows.
struct FieldsAccess<'de> {
    fields: std::vec::IntoIter<(Name<'de>, &'de RawValue)>,
    value: Option<(bool, &'de RawValue)>,
}

impl<'de> MapAccess<'de> for FieldsAccess<'de> {
    type Error = serde_json::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, serde_json::Error> {
        let Some((name, value)) = self.fields.next() else {
            return Ok(None);
        };
        self.value = Some((name.0 == TABLE_FIELD, value));
        name.key(seed).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, serde_json::Error> {
        match self.value.take().expect("a value follows its key") {
            (true, table) => {
                let table: TableIn<'de> = serde_json::from_str(table.get())
                    .map_err(|e| de::Error::custom(format_args!("the table `{TABLE_FIELD}`: {e}")))?;
                seed.deserialize(table.checked()?)
            }
            (false, value) => read_value(seed, value),
        }
    }
}

/// A table as read: its rows kept as text until its columns (after them) are known.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TableIn<'a> {
    #[serde(borrow)]
    rows: Vec<RowIn<'a>>,
    #[serde(borrow)]
    columns: Vec<Name<'a>>,
}

/// A row as read: its masks and its fresh values' text.
struct RowIn<'de> {
    fresh: u64,
    same: u64,
    values: Vec<&'de RawValue>,
}

impl<'de: 'a, 'a> Deserialize<'de> for RowIn<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<RowIn<'a>, D::Error> {
        struct RowVisitor<'a>(std::marker::PhantomData<&'a str>);
        impl<'de: 'a, 'a> Visitor<'de> for RowVisitor<'a> {
            type Value = RowIn<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a row: [fresh, same, value…]")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut row: A) -> Result<RowIn<'a>, A::Error> {
                let fresh = row.next_element()?.ok_or_else(|| de::Error::invalid_length(0, &self))?;
                let same = row.next_element()?.ok_or_else(|| de::Error::invalid_length(1, &self))?;
                let mut values = Vec::with_capacity(u64::count_ones(fresh) as usize);
                while let Some(value) = row.next_element()? {
                    values.push(value);
                }
                Ok(RowIn { fresh, same, values })
            }
        }
        deserializer.deserialize_seq(RowVisitor(std::marker::PhantomData))
    }
}

impl<'de> TableIn<'de> {
    /// The table once its shape is checked: its columns (at most [`MAX_COLUMNS`], each once)
    /// and each row's masks against them and against its values.
    fn checked(self) -> Result<TableIn<'de>, serde_json::Error> {
        let error = |message: String| -> serde_json::Error { de::Error::custom(message) };
        if self.columns.len() > MAX_COLUMNS {
            return Err(error(format!(
                "a table of {} columns (at most {MAX_COLUMNS})",
                self.columns.len()
            )));
        }
        for (i, column) in self.columns.iter().enumerate() {
            if self.columns[..i].iter().any(|c| c.0 == column.0) {
                return Err(error(format!("the column `{}` is named twice", column.0)));
            }
        }
        let known = match self.columns.len() {
            MAX_COLUMNS => u64::MAX,
            count => (1u64 << count) - 1,
        };
        let mut before = 0u64;
        for (r, row) in self.rows.iter().enumerate() {
            if (row.fresh | row.same) & !known != 0 {
                return Err(error(format!(
                    "row {r} names a column past the table's {} columns",
                    self.columns.len()
                )));
            }
            if row.fresh & row.same != 0 {
                return Err(error(format!("row {r} has a column both fresh and the same")));
            }
            if row.same & !before != 0 {
                return Err(error(format!("row {r} repeats a value the row before does not have")));
            }
            let expected = row.fresh.count_ones() as usize;
            if row.values.len() != expected {
                return Err(error(format!(
                    "row {r} has {} values where its mask says {expected}",
                    row.values.len()
                )));
            }
            before = row.fresh | row.same;
        }
        Ok(self)
    }
}

/// The checked table handed to its reader as a list of objects.
impl<'de> Deserializer<'de> for TableIn<'de> {
    type Error = serde_json::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, serde_json::Error> {
        let columns = self.columns.len();
        visitor.visit_seq(RowsAccess {
            columns: self.columns,
            rows: self.rows.into_iter().enumerate(),
            current: vec![None; columns],
        })
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option
        unit unit_struct newtype_struct seq tuple tuple_struct map struct enum identifier ignored_any
    }
}

/// The table's rows, each handed on as an object of the values it has now.
struct RowsAccess<'de> {
    columns: Vec<Name<'de>>,
    rows: std::iter::Enumerate<std::vec::IntoIter<RowIn<'de>>>,
    /// Each column's value in the row being read (`None`: absent from it).
    current: Vec<Option<&'de RawValue>>,
}

impl<'de> SeqAccess<'de> for RowsAccess<'de> {
    type Error = serde_json::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, serde_json::Error> {
        let Some((r, row)) = self.rows.next() else {
            return Ok(None);
        };
        let mut fresh = row.values.into_iter();
        for (i, value) in self.current.iter_mut().enumerate() {
            let bit = 1u64 << i;
            if row.fresh & bit != 0 {
                *value = fresh.next();
            } else if row.same & bit == 0 {
                *value = None;
            }
        }
        seed.deserialize(MapAccessDeserializer::new(RowAccess {
            columns: &self.columns,
            values: &self.current,
            at: 0,
        }))
        .map(Some)
        .map_err(|e| de::Error::custom(format_args!("row {r}: {e}")))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.rows.len())
    }
}

/// One row as an object: each column it has, by name.
struct RowAccess<'a, 'de> {
    columns: &'a [Name<'de>],
    values: &'a [Option<&'de RawValue>],
    /// The next column to look at; past the one whose value comes next.
    at: usize,
}

impl<'de> MapAccess<'de> for RowAccess<'_, 'de> {
    type Error = serde_json::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, serde_json::Error> {
        while self.at < self.columns.len() {
            self.at += 1;
            if self.values[self.at - 1].is_some() {
                return self.columns[self.at - 1].key(seed).map(Some);
            }
        }
        Ok(None)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, serde_json::Error> {
        let column = self.at - 1;
        let value = self.values[column].expect("a value follows its key");
        read_value(seed, value).map_err(|e| de::Error::custom(format_args!("column `{}`: {e}", self.columns[column].0)))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.values[self.at..].iter().filter(|v| v.is_some()).count())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sessions::cost::UsageTotal;
    use crate::store::SessionRow;
    use serde_json::{json, Value};
    use studio_protocol::usage::Tokens;

    /// A row in its object form, as the window gets it.
    fn row(id: &str, extra: Value) -> SessionRow {
        let mut row = json!({
            "id": id,
            "path": format!("/w/.zibby/output/sessions/{id}"),
            "agent": null,
            "title": null,
            "status": "unknown",
            "current_node": "report",
            "created_at": "2026-11-29T12:00:00.000Z",
            "updated_at": "2026-11-29T12:00:01.000Z",
            "nodes": [{"name": "plan", "status": "success", "usage": null}],
            "problems": [],
            "usage": null,
            "not_known": "Run outside the studio.",
            "pinned": false,
            "pinned_at": null,
            "messages": 0,
            "live_run": null
        });
        for (name, value) in extra.as_object().unwrap() {
            match value {
                Value::Null if name == "not_known" => row.as_object_mut().unwrap().remove(name),
                value => row.as_object_mut().unwrap().insert(name.clone(), value.clone()),
            };
        }
        serde_json::from_value(row).unwrap()
    }

    fn total(input: u64) -> UsageTotal {
        UsageTotal {
            tokens: Tokens {
                input,
                reasoning: Some(u64::MAX),
                ..Tokens::default()
            },
            cost_usd: Some(1e300),
            nodes: usize::MAX,
            nodes_with_usage: 1,
            nodes_priced: 0,
            label: "≥ $0.42".into(),
            short_label: "–".into(),
            tokens_label: "18.4e18 tokens".into(),
        }
    }

    /// Rows of every kind: alike, absent fields, one field changed at a time, odd values.
    fn listing() -> SessionListing {
        let sessions = vec![
            row("1795000000000_0000", json!({})),
            row("1795000000000_0000", json!({})),
            row("1795000001000_0001", json!({"not_known": null})),
            row("1795000002000_0002", json!({})),
            row(
                "1795000003000_0003",
                json!({
                    "agent": "plan \"quoted\"\n\tand \\ back",
                    "title": "日本語のタイトル 🚀 \u{0} \u{2028}",
                    "status": "success",
                    "current_node": null,
                    "nodes": [],
                    "problems": [{"file": "plan/é.json", "reason": "not JSON"}],
                    "usage": total(u64::MAX),
                    "not_known": null,
                    "pinned": true,
                    "pinned_at": "2026-12-01T00:00:00.000Z",
                    "messages": i64::MAX,
                    "live_run": "run-ü"
                }),
            ),
            row("1795000004000_0004", json!({"messages": i64::MIN, "nodes": []})),
            row("1795000004000_0004", json!({"messages": i64::MIN, "nodes": []})),
        ];
        SessionListing {
            sessions,
            usage: Some(total(7)),
        }
    }

    fn wire(listing: SessionListing) -> Vec<u8> {
        let mut text = Vec::new();
        write_listing(&listing, &mut text).unwrap();
        text
    }

    fn table<T: Serialize>(rows: &[T]) -> io::Result<Vec<u8>> {
        let mut text = Vec::new();
        write_table(rows, &mut text).map(|()| text)
    }

    #[test]
    fn a_listing_reads_back_from_its_table_as_its_rows_and_as_its_objects() {
        let listing = listing();
        let text = wire(listing.clone());
        let read: SessionListing = read_result(SESSIONS_LIST, &text).unwrap();
        assert_eq!(read.sessions, listing.sessions);
        assert_eq!(read.usage, listing.usage);
        // As the window's remote workspace reads it: the objects the IPC command answers.
        let objects: Value = read_result(SESSIONS_LIST, &text).unwrap();
        assert_eq!(objects, serde_json::to_value(&listing).unwrap());
        // Names said once, values the same as the row before's not said again.
        let table: Value = serde_json::from_slice(&text).unwrap();
        let columns = table["sessions"]["columns"].as_array().unwrap();
        assert_eq!(columns.len(), 18, "{columns:?}");
        assert_eq!(columns[0], "id");
        let rows = table["sessions"]["rows"].as_array().unwrap();
        assert_eq!(rows.len(), 7);
        assert_eq!(rows[1], json!([0, (1u64 << 18) - 1]), "a row like the one before");
        let objects_text = serde_json::to_vec(&listing).unwrap();
        assert!(
            text.len() * 2 < objects_text.len(),
            "{} against {}",
            text.len(),
            objects_text.len()
        );
        // Empty, and without usage.
        let empty = SessionListing {
            sessions: Vec::new(),
            usage: None,
        };
        let text = wire(empty);
        assert_eq!(text, br#"{"sessions":{"rows":[],"columns":[]},"usage":null}"#);
        let read: SessionListing = read_result(SESSIONS_LIST, &text).unwrap();
        assert!(read.sessions.is_empty() && read.usage.is_none());
    }

    #[test]
    fn a_malformed_table_is_refused_naming_the_method_and_what_is_wrong() {
        let text = String::from_utf8(wire(listing())).unwrap();
        let table: Value = serde_json::from_str(&text).unwrap();
        let rows = &table["sessions"]["rows"];
        let columns = &table["sessions"]["columns"];
        let with = |rows: &Value, columns: &Value| {
            json!({"sessions": {"rows": rows, "columns": columns}, "usage": null}).to_string()
        };
        let mut short_row = rows.clone();
        short_row[3].as_array_mut().unwrap().pop();
        let mut long_row = rows.clone();
        long_row[0].as_array_mut().unwrap().push(json!(1));
        let mut past = rows.clone();
        past[2][1] = json!(1u64 << 20);
        let mut both = rows.clone();
        both[1][0] = json!(1);
        let mut repeats_absent = rows.clone();
        let first = repeats_absent[0].as_array_mut().unwrap();
        first[0] = json!(first[0].as_u64().unwrap() & !1);
        first[1] = json!(1);
        first.remove(2);
        let mut wrong_type = rows.clone();
        wrong_type[0][2] = json!(17);
        let mut doubled = columns.clone();
        doubled[1] = json!("id");
        let mut no_pinned = columns.clone();
        no_pinned[12] = json!("unpinned");
        assert_eq!(columns[12], "pinned");
        let many: Vec<String> = (0..65).map(|i| format!("c{i}")).collect();
        for (text, says) in [
            (with(&short_row, columns), "row 3 has 2 values where its mask says 3"),
            (with(&long_row, columns), "row 0 has 19 values where its mask says 18"),
            (with(&past, columns), "row 2 names a column past the table's 18 columns"),
            (with(&both, columns), "row 1 has a column both fresh and the same"),
            (
                with(&repeats_absent, columns),
                "row 0 repeats a value the row before does not have",
            ),
            (with(rows, &doubled), "the column `id` is named twice"),
            (with(&json!([]), &json!(many)), "a table of 65 columns (at most 64)"),
            (with(&json!([[1]]), columns), "invalid length 1, expected a row"),
            (
                with(&json!([{"id": "x"}]), columns),
                "expected a row: [fresh, same, value…]",
            ),
            (json!({"usage": null}).to_string(), "missing field `sessions`"),
            (
                json!({"sessions": [], "usage": null}).to_string(),
                "the table `sessions`",
            ),
            (text.replace("\"columns\"", "\"names\""), "unknown field `names`"),
            (text[..text.len() / 2].to_owned(), "EOF while parsing"),
        ] {
            for error in [
                read_result::<SessionListing>(SESSIONS_LIST, text.as_bytes()).map(drop),
                read_result::<Value>(SESSIONS_LIST, text.as_bytes()).map(drop),
            ] {
                let error = error.expect_err(says);
                assert!(
                    error.starts_with("the answer to `sessions_list` does not read: ") && error.contains(says),
                    "{error} (expected: {says})"
                );
            }
        }
        // What only the row's type refuses (as a `Value`, any JSON reads).
        let typed = |text: String| read_result::<SessionListing>(SESSIONS_LIST, text.as_bytes()).unwrap_err();
        assert_eq!(
            typed(with(&wrong_type, columns)),
            "the answer to `sessions_list` does not read: row 0: column `id`: invalid type: integer `17`, \
             expected a string at line 1 column 2"
        );
        assert_eq!(
            typed(with(rows, &no_pinned)),
            "the answer to `sessions_list` does not read: row 0: missing field `pinned`"
        );
    }

    #[test]
    fn only_the_listing_is_a_table_and_its_method_is_the_windows() {
        assert!(crate::remote::methods::IPC_METHODS
            .iter()
            .any(|(name, _)| *name == SESSIONS_LIST));
        let objects = serde_json::to_vec(&listing()).unwrap();
        let read: Value = read_result("session_get", &objects).unwrap();
        assert_eq!(read, serde_json::to_value(listing()).unwrap());
        assert!(read_result::<SessionListing>(SESSIONS_LIST, &objects).is_err());
    }

    /// Rows whose type writes a field twice, or that are no objects; rows of other shapes.
    #[test]
    fn rows_are_written_in_their_columns_or_refused() {
        #[derive(Serialize)]
        struct Twice {
            a: u8,
            #[serde(rename = "a")]
            b: u8,
        }
        let twice = table(&[Twice { a: 1, b: 2 }]);
        assert!(twice.unwrap_err().to_string().contains("the field `a` twice"));
        let scalar = table(&[1u8]);
        assert!(scalar.unwrap_err().to_string().contains("not an object"));
        let wide: Vec<std::collections::BTreeMap<String, u8>> =
            vec![(0..65).map(|i| (format!("c{i:02}"), 0)).collect()];
        assert!(table(&wide).unwrap_err().to_string().contains("more than 64"));
        // Fields in another order, new ones on the way, some absent: each in its column.
        let rows = vec![
            json!({"b": 1, "a": "x"}),
            json!({"a": "x", "c": null, "b": 2}),
            json!({"c": null}),
        ];
        let text = [&b"{\"sessions\":"[..], &table(&rows).unwrap(), b"}"].concat();
        let read: std::collections::BTreeMap<String, Vec<Value>> = read_with_table(&text).unwrap();
        assert_eq!(read["sessions"], rows);
    }
}
